/** Conformance: the scheduler's store verbs — fair-share claim, queue standing, gang attempts, node track records and auto-cordon. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_NODE_STATS_POLICY, fairQueuePosition, type Placement, type Store, transitionDecider } from '@gpux/core';
import { assigned, eventTypes, type OpenStore, register, result, submit, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

function gang(jobId: string, leader: string, nodes: string[], lease: number): Placement[] {
  const peers = nodes.map((nodeId, rank) => ({ rank, nodeId, address: `${nodeId}.local` }));
  return nodes.map((nodeId, rank) => ({
    jobId,
    attemptId: rank === 0 ? leader : `${leader}-r${rank}`,
    nodeId,
    gpuIndices: [0],
    leaseExpiresAt: lease,
    gang: { leaderAttemptId: leader, rank, worldSize: nodes.length, peers },
  }));
}

async function failOn(store: Store, n: number, nodeId: string, now: number): Promise<void> {
  const a = await assigned(store, `job-f${n}`, `att-f${n}`, nodeId, now);
  await store.finishAttempt(result(a.id, nodeId, now + 1, { outcome: 'failed', exitCode: null, error: 'executor failed: docker gone' }), decide);
}

export function schedulingTests(open: OpenStore): void {
  test('claimQueuedFair: a share of the window per (buyer, priority) pair, due jobs only, rotating from a buyer', () =>
    withStore(open, async (store) => {
      for (let i = 0; i < 40; i++) await submit(store, `a-${String(i).padStart(3, '0')}`, T0 + i, { buyerId: 'a' });
      await submit(store, 'a-high', T0 + 100, { buyerId: 'a', spec: { priority: 'high' } });
      await submit(store, 'b-1', T0 + 200, { buyerId: 'b' });
      await submit(store, 'c-low', T0 + 300, { buyerId: 'c', spec: { priority: 'low' } });
      const d = await assigned(store, 'd-1', 'att-d', 'node-1', T0, { buyerId: 'd' });
      await store.finishAttempt(result(d.id, 'node-1', T0 + 1, { outcome: 'failed', exitCode: null }), decide); // requeued, backoff
      const now = T0 + 1000;
      // pairs: a/high, a/normal, b/normal, c/low, d/normal (in backoff) -> 5; ceil(10 / 5) = 2 each, then
      // the 5 shares left unused go to the one pair that filled its own (a/normal).
      const w = await store.claimQueuedFair(now, 10);
      assert.deepEqual(w.map((j) => j.id).sort(), ['a-000', 'a-001', 'a-002', 'a-003', 'a-004', 'a-005', 'a-006', 'a-high', 'b-1', 'c-low']);
      assert.deepEqual((await store.claimQueuedFair(now, 2, 'b')).map((j) => j.id).sort(), ['b-1', 'c-low']);
      assert.deepEqual((await store.claimQueuedFair(now, 3, 'c')).map((j) => j.id).sort(), ['a-high', 'c-low'], 'c/low, d/normal, then a/high after wrapping');
      assert.deepEqual(await store.claimQueuedFair(now, 0), []);
      // The old FIFO claim would have been all a's.
      assert.ok((await store.claimQueued(now, 5)).every((j) => j.buyerId === 'a'));
      await store.requestCancel('b-1', now);
      assert.ok(!(await store.claimQueuedFair(now, 10)).some((j) => j.id === 'b-1'));
    }));

  test('queueStanding: own older due jobs and due counts per pair', () =>
    withStore(open, async (store) => {
      for (let i = 0; i < 5; i++) await submit(store, `a-${i}`, T0 + i, { buyerId: 'a' });
      await submit(store, 'b-0', T0 + 10, { buyerId: 'b' });
      await submit(store, 'b-1', T0 + 11, { buyerId: 'b' });
      await submit(store, 'h-0', T0 + 12, { buyerId: 'h', spec: { priority: 'high' } });
      const s = await store.queueStanding('b-1', T0 + 100);
      assert.ok(s);
      assert.equal(s.aheadInPair, 1);
      assert.equal(s.priorityRank, 1);
      assert.deepEqual(
        s.pairs.sort((x, y) => (x.buyerId < y.buyerId ? -1 : 1)),
        [
          { buyerId: 'a', priorityRank: 1, due: 5 },
          { buyerId: 'b', priorityRank: 1, due: 2 },
          { buyerId: 'h', priorityRank: 0, due: 1 },
        ],
      );
      assert.deepEqual(fairQueuePosition(s), { ahead: 1 + 1 + 1, total: 8 });
      await assigned(store, 'a-0', 'att-a0', 'node-1', T0 + 101);
      assert.equal(await store.queueStanding('a-0', T0 + 102), undefined);
      assert.equal(await store.queueStanding('nope', T0 + 102), undefined);
    }));

  test('gang: members written together, the leader is current, the last success finishes the job', () =>
    withStore(open, async (store) => {
      for (const n of ['n1', 'n2', 'n3']) await register(store, n, T0);
      await submit(store, 'job-g', T0, { spec: { nodes: 3, resources: { gpu: { count: 1 } } } });
      await submit(store, 'job-bad', T0);
      const incomplete = gang('job-bad', 'att-b', ['n1', 'n2'], T0 + 30_000).slice(0, 1);
      const written = await store.assign([...gang('job-g', 'att-g', ['n1', 'n2', 'n3'], T0 + 30_000), ...incomplete], T0 + 1);
      assert.deepEqual(written.map((a) => a.id).sort(), ['att-g', 'att-g-r1', 'att-g-r2']);
      assert.equal((await store.getJob('job-bad'))?.state, 'queued', 'an incomplete gang is skipped');
      const r2 = await store.getAttempt('att-g-r2');
      assert.deepEqual(r2?.gang, {
        leaderAttemptId: 'att-g',
        rank: 2,
        worldSize: 3,
        peers: ['n1', 'n2', 'n3'].map((nodeId, rank) => ({ rank, nodeId, address: `${nodeId}.local` })),
      });
      assert.equal((await store.getJob('job-g'))?.currentAttemptId, 'att-g');
      assert.equal((await store.startAttempt('att-g-r1', 'n2', T0 + 2)).job.state, 'running');
      await store.startAttempt('att-g', 'n1', T0 + 2);
      await store.startAttempt('att-g-r2', 'n3', T0 + 2);
      assert.equal((await store.finishAttempt(result('att-g-r2', 'n3', T0 + 3), decide)).job.state, 'running');
      assert.equal((await store.finishAttempt(result('att-g', 'n1', T0 + 4), decide)).job.state, 'running');
      const done = await store.finishAttempt(result('att-g-r1', 'n2', T0 + 5), decide);
      assert.equal(done.job.state, 'succeeded');
      assert.equal(done.job.currentAttemptId, 'att-g', 'the job carries the leader’s result');
      assert.equal((await store.getAttempt('att-g'))?.gang?.rank, 0);
      assert.equal((await store.getAttempt('att-b')), undefined);
    }));

  test('gang: one member failing or lost stops the others and moves the job once', () =>
    withStore(open, async (store) => {
      for (const n of ['n1', 'n2', 'n3']) await register(store, n, T0);
      await submit(store, 'job-g', T0, { spec: { nodes: 3 } });
      await store.assign(gang('job-g', 'att-g', ['n1', 'n2', 'n3'], T0 + 30_000), T0 + 1);
      const f = await store.finishAttempt(result('att-g-r1', 'n2', T0 + 2, { outcome: 'failed', exitCode: null, error: 'executor failed' }), decide);
      assert.equal(f.job.state, 'queued');
      assert.deepEqual(f.job.avoidNodeIds, ['n2']);
      assert.equal((await store.getAttempt('att-g'))?.state, 'cancelled');
      assert.equal((await store.getAttempt('att-g-r2'))?.state, 'cancelled');
      assert.deepEqual(await store.listActiveAttempts(), []);
      assert.ok((await eventTypes(store, 'job', 'job-g')).includes('gang.stopped'));
      // Second round: every lease runs out at once; the job is requeued once, one member lost, the rest stopped.
      await store.assign(gang('job-g', 'att-h', ['n1', 'n2', 'n3'], T0 + 40_000), T0 + 3);
      const lost = await store.expireLeases(T0 + 50_000, decide, 100);
      assert.equal(lost.length, 1);
      const states = await Promise.all(['att-h', 'att-h-r1', 'att-h-r2'].map(async (id) => (await store.getAttempt(id))?.state));
      assert.deepEqual(states.sort(), ['cancelled', 'cancelled', 'lost']);
      const job = await store.getJob('job-g');
      assert.equal(job?.state, 'queued');
      assert.equal(job?.attemptCount, 2);
    }));

  test('node track records: successes, infrastructure failures, outages, runtime against the class; auto-cordon with a reason', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0);
      for (let i = 0; i < 4; i++) {
        const a = await assigned(store, `job-s${i}`, `att-s${i}`, 'node-2', T0 + i);
        await store.finishAttempt(result(a.id, 'node-2', T0 + i + 1, { metrics: { durationMs: i < 3 ? 1000 : 500 } }), decide);
      }
      // A program's own failure is not the node's.
      const own = await assigned(store, 'job-own', 'att-own', 'node-2', T0 + 10);
      await store.finishAttempt(result(own.id, 'node-2', T0 + 11, { outcome: 'failed', exitCode: 3 }), decide);
      const s2 = (await store.listNodeStats(0)).find((r) => r.nodeId === 'node-2');
      assert.ok(s2);
      assert.ok(Math.abs(s2.stats.successes - 5) < 0.01, String(s2.stats.successes));
      assert.equal(s2.stats.failures, 0);
      assert.ok(Math.abs((s2.stats.runtimeRatio ?? 0) - 0.5) < 0.01, 'the 4th run took half the class mean');
      const n = DEFAULT_NODE_STATS_POLICY.cordonAfterFailures;
      for (let i = 0; i < n - 1; i++) await failOn(store, i, 'node-1', T0 + 100 + i * 10);
      assert.equal((await store.getNode('node-1'))?.adminState, 'active');
      const since = T0 + 1000;
      await failOn(store, n, 'node-1', since);
      const node = await store.getNode('node-1');
      assert.equal(node?.adminState, 'cordoned');
      assert.match(node?.adminReason ?? '', /auto-cordoned: 5 attempts lost or failed by the node/);
      assert.deepEqual((await eventTypes(store, 'node', 'node-1')).slice(-1), ['node.auto_cordoned']);
      const recent = await store.listNodeStats(since);
      assert.deepEqual(
        recent.map((r) => [r.nodeId, r.adminState]),
        [['node-1', 'cordoned']],
      );
      assert.ok(Math.abs((recent[0]?.stats.failures ?? 0) - n) < 0.01);
      assert.equal(recent[0]?.adminReason, node?.adminReason);
      // The operator uncordons: the reason goes.
      const back = await store.setNodeAdminState('node-1', 'active', since + 1);
      assert.equal(back.adminReason, undefined);
      // Going offline is an outage on the record.
      await store.markStaleNodesOffline(T0 + 5000, T0 + 5000);
      const all = await store.listNodeStats(T0 + 5000);
      assert.deepEqual(all.map((r) => r.nodeId).sort(), ['node-1', 'node-2']);
      assert.ok(all.every((r) => r.stats.outages >= 0.99));
    }));
}
