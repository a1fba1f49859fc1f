/**
 * Conformance, challenges port (issue 12, proof of hardware): issue (one open challenge per node), the
 * pending challenge a heartbeat carries, digests before and after the deadline, verdicts on the node's proof,
 * expiry, due re-checks and the provider's live nodes.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NewChallenge, Store } from '@gpux/core';
import { code, enroll, eventTypes, type OpenStore, register, T0, withStore } from '../fixtures.js';

const SEED = '5eed'.repeat(16);
const D = 'd'.repeat(64);

function challenge(id: string, nodeId: string, over: Partial<NewChallenge> = {}): NewChallenge {
  return { id, nodeId, seed: SEED, n: 64, products: 2, rowBlock: 4, gpuIndices: [0], claimedClass: 'nvidia-h100-80gb', deadlineAt: T0 + 1000, ...over };
}

const gpus = [{ index: 0, digests: [D, D], computeMs: 12, totalMs: 30 }];
const reveal = [{ gpu: 0, product: 1, block: 3 }];

async function digested(store: Store, id: string, nodeId: string) {
  await store.issueChallenges([challenge(id, nodeId)], T0);
  return store.recordChallengeDigests({ challengeId: id, nodeId, runner: 'cpu', digests: gpus, reveal, revealBy: T0 + 600, retryAt: T0 + 5000, now: T0 + 500 });
}

export function challengeTests(open: OpenStore): void {
  test('issueChallenges: pending, node challenging; a second for the same node is a no-op; removed nodes are skipped', () =>
    withStore(open, async (store) => {
      const before = await register(store, 'node-1', T0);
      assert.equal(before.proof, undefined, 'a node never challenged has no proof record (reads unproven)');
      const [c] = await store.issueChallenges([challenge('chl-1', 'node-1')], T0);
      assert.equal(c?.state, 'pending');
      assert.equal(c?.providerId, null);
      assert.deepEqual(c?.gpuIndices, [0]);
      assert.equal((await store.getNode('node-1'))?.proof?.state, 'challenging');
      assert.deepEqual(await store.issueChallenges([challenge('chl-2', 'node-1')], T0 + 1), [], 'one open challenge per node');
      assert.equal((await store.pendingChallengeOf('node-1'))?.id, 'chl-1');
      assert.equal(await store.getChallenge('chl-2'), undefined);
      assert.deepEqual(await store.issueChallenges([challenge('chl-3', 'node-none')], T0), [], 'an unknown node gets none');
      assert.deepEqual(await eventTypes(store, 'node', 'node-1'), ['node.registered', 'node.challenge_issued']);
    }));

  test('recordChallengeDigests: own pending challenge only; stores the reveal; twice is CONFLICT; after the deadline the proof fails', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0, { gpus: [] });
      await store.issueChallenges([challenge('chl-1', 'node-1'), challenge('chl-2', 'node-2', { gpuIndices: [], claimedClass: 'cpu' })], T0);
      const input = { challengeId: 'chl-1', nodeId: 'node-2', runner: 'cpu', digests: gpus, reveal, revealBy: T0 + 600, retryAt: T0 + 5000, now: T0 + 500 };
      await assert.rejects(store.recordChallengeDigests(input), code('NOT_FOUND'), "another node's challenge");
      const ok = await store.recordChallengeDigests({ ...input, nodeId: 'node-1' });
      assert.equal(ok.ok, true);
      assert.equal(ok.challenge.state, 'digested');
      assert.deepEqual(ok.challenge.reveal, reveal);
      assert.deepEqual(ok.challenge.digests, gpus);
      assert.equal(ok.challenge.digestedAt, T0 + 500);
      assert.equal(await store.pendingChallengeOf('node-1'), undefined, 'no longer pending: the heartbeat stops carrying it');
      await assert.rejects(store.recordChallengeDigests({ ...input, nodeId: 'node-1' }), code('CONFLICT'));
      const late = await store.recordChallengeDigests({ ...input, challengeId: 'chl-2', nodeId: 'node-2', now: T0 + 1001 });
      assert.equal(late.ok, false);
      assert.equal(late.challenge.state, 'expired');
      assert.match(late.challenge.reason ?? '', /timed out/);
      assert.equal(late.ok === false && late.node.proof?.state, 'failed');
      assert.equal(late.ok === false && late.node.proof?.nextCheckAt, T0 + 5000);
    }));

  test('recordChallengeVerdict: passed proves the node (class, score, next check); failed blocks it with the reason; once only', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0);
      await digested(store, 'chl-1', 'node-1');
      await digested(store, 'chl-2', 'node-2');
      const pass = await store.recordChallengeVerdict({ challengeId: 'chl-1', nodeId: 'node-1', now: T0 + 550, outcome: 'passed', reason: null, provenClass: 'nvidia-h100-80gb', score: 1.25, nextCheckAt: T0 + 86_400_000 });
      assert.equal(pass.challenge.state, 'passed');
      assert.deepEqual(pass.node.proof, { state: 'proven', provenClass: 'nvidia-h100-80gb', score: 1.25, provenAt: T0 + 550, reason: null, nextCheckAt: T0 + 86_400_000 });
      assert.deepEqual((await store.getNode('node-1'))?.proof, pass.node.proof);
      await assert.rejects(store.recordChallengeVerdict({ challengeId: 'chl-1', nodeId: 'node-1', now: T0 + 551, outcome: 'failed', reason: 'x', provenClass: null, score: null, nextCheckAt: T0 }), code('CONFLICT'));
      await assert.rejects(store.recordChallengeVerdict({ challengeId: 'chl-2', nodeId: 'node-1', now: T0 + 551, outcome: 'passed', reason: null, provenClass: 'x', score: 1, nextCheckAt: T0 }), code('NOT_FOUND'));
      const fail = await store.recordChallengeVerdict({ challengeId: 'chl-2', nodeId: 'node-2', now: T0 + 560, outcome: 'failed', reason: 'wrong product', provenClass: null, score: null, nextCheckAt: T0 + 5000 });
      assert.equal(fail.challenge.state, 'failed');
      assert.equal(fail.node.proof?.state, 'failed');
      assert.match(fail.node.proof?.reason ?? '', /chl-2 wrong product/);
      assert.deepEqual((await store.listChallenges('node-2', 10)).map((c) => c.id), ['chl-2']);
      assert.deepEqual(await eventTypes(store, 'node', 'node-1'), ['node.registered', 'node.challenge_issued', 'node.proven']);
      assert.deepEqual(await eventTypes(store, 'node', 'node-2'), ['node.registered', 'node.challenge_issued', 'node.proof_failed']);
      // A re-check of a proven node keeps it proven (dispatchable) while it runs; resetProof does not.
      await store.issueChallenges([challenge('chl-3', 'node-1', { deadlineAt: T0 + 2000 })], T0 + 600);
      assert.equal((await store.getNode('node-1'))?.proof?.state, 'proven');
    }));

  test('expireChallenges: pending past the deadline and digested past the reveal time expire; the proof fails with a retry time', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0);
      await register(store, 'node-3', T0);
      await store.issueChallenges([challenge('chl-1', 'node-1'), challenge('chl-3', 'node-3', { deadlineAt: T0 + 10_000 })], T0);
      await digested(store, 'chl-2', 'node-2');
      assert.deepEqual(await store.expireChallenges(T0 + 600, 7000, 10), [], 'nothing late yet');
      const expired = await store.expireChallenges(T0 + 1001, 7000, 10);
      assert.deepEqual(expired.map((n) => n.id).sort(), ['node-1', 'node-2']);
      for (const n of expired) {
        assert.equal(n.proof?.state, 'failed');
        assert.match(n.proof?.reason ?? '', /timed out/);
        assert.equal(n.proof?.nextCheckAt, T0 + 1001 + 7000);
      }
      assert.equal((await store.getChallenge('chl-1'))?.state, 'expired');
      assert.equal((await store.getChallenge('chl-3'))?.state, 'pending');
    }));

  test('dueChallengeNodes: re-checks whose time came and nodes not proven, live and without an open challenge; liveNodesOfProvider', () =>
    withStore(open, async (store) => {
      const e = { id: 'enr-1', accountId: 'prov-1' };
      await store.createEnrollment({ id: e.id, hash: 'e'.repeat(64), accountId: e.accountId, name: 'n', maxNodes: null, createdAt: T0, expiresAt: null, revokedAt: null });
      await enroll(store, 'node-a', T0, e, { uuid: 'GPU-a' });
      await enroll(store, 'node-b', T0, e, { uuid: 'GPU-b' });
      await register(store, 'node-c', T0);
      await digested(store, 'chl-a', 'node-a');
      await store.recordChallengeVerdict({ challengeId: 'chl-a', nodeId: 'node-a', now: T0 + 550, outcome: 'passed', reason: null, provenClass: 'c', score: 1, nextCheckAt: T0 + 10_000 });
      await store.issueChallenges([challenge('chl-c', 'node-c')], T0);
      const ids = async (now: number, unproven: boolean) => (await store.dueChallengeNodes({ now, unproven, limit: 10 })).map((n) => n.id);
      assert.deepEqual(await ids(T0 + 1000, true), ['node-b'], 'node-a is proven and not due; node-c has an open challenge');
      assert.deepEqual(await ids(T0 + 1000, false), []);
      assert.deepEqual(await ids(T0 + 10_000, false), ['node-a']);
      await store.markStaleNodesOffline(T0 + 1, T0 + 20_000);
      assert.deepEqual(await ids(T0 + 20_000, true), [], 'offline nodes wait until they are back');
      await store.heartbeat('node-a', T0 + 20_001, T0 + 30_000);
      assert.deepEqual((await store.liveNodesOfProvider('prov-1', 10)).map((n) => n.id), ['node-a']);
    }));

  test('skipProof: an unproven node reads skipped; a proven one is left alone', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await store.skipProof('node-1');
      assert.equal((await store.getNode('node-1'))?.proof?.state, 'skipped');
      await register(store, 'node-2', T0);
      await digested(store, 'chl-2', 'node-2');
      await store.recordChallengeVerdict({ challengeId: 'chl-2', nodeId: 'node-2', now: T0 + 550, outcome: 'passed', reason: null, provenClass: 'c', score: 1, nextCheckAt: T0 + 10_000 });
      await store.skipProof('node-2');
      assert.equal((await store.getNode('node-2'))?.proof?.state, 'proven');
    }));
}
