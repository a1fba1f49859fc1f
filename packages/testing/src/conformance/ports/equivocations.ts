/**
 * Conformance, verification port (equivocation evidence, TRUST.md penalties table): recordEquivocation and
 * listEquivocations. The store treats commitments and signatures as opaque strings (the coordinator checks
 * signatures before it calls): a second commitment that differs from the one the ended attempt stored is
 * kept with the first as evidence, the node's whole stake goes to the treasury, and the node is banned
 * (removed, offline, its active leases cut). The same pair again, the same commitment, another node, an
 * unknown attempt or one ended without a commitment record nothing.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, type LedgerTotals, move, type Store, transitionDecider } from '@gpux/core';
import { advertisement, assigned, eventTypes, type OpenStore, register, result, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const USDC = 1_000_000;
const NODE = 'node-eq';
const C1 = '{"attemptId":"att-1","outputDigest":"aa"}';
const C2 = '{"attemptId":"att-1","outputDigest":"bb"}';

function mintTo(store: Store, account: string, amount: number, at = T0) {
  return store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at, memo: `test funds for ${account}` });
}

function assertBalanced(totals: LedgerTotals[]): void {
  for (const t of totals) {
    assert.equal(t.inside, t.minted, `${t.asset}: inside equals minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

/** A provider's staked node with: node-other beside it; att-0 ended without a commitment, att-1 and att-2 ended with one, att-3 active. */
async function nodeWithAttempts(store: Store): Promise<void> {
  await store.registerNode({ id: NODE, publicKey: `key-${NODE}`, advertisement: advertisement(), now: T0, providerId: 'prov-eq' });
  await register(store, 'node-other', T0);
  await mintTo(store, ACCOUNTS.stake(NODE), 50 * USDC);
  for (const n of [0, 1, 2, 3]) await assigned(store, `job-${n}`, `att-${n}`, NODE, T0 + n);
  await store.finishAttempt(result('att-0', NODE, T0 + 10), decide);
  await store.finishAttempt(result('att-1', NODE, T0 + 11, { commitment: C1, commitmentSignature: 'sig-1' }), decide);
  await store.finishAttempt(result('att-2', NODE, T0 + 12, { commitment: '{"attemptId":"att-2"}', commitmentSignature: 'sig-2' }), decide);
}

export function equivocationTests(open: OpenStore): void {
  test('recordEquivocation: nothing for the same commitment, another node, an unknown attempt or one without a commitment', () =>
    withStore(open, async (store) => {
      await nodeWithAttempts(store);
      assert.equal(await store.recordEquivocation({ attemptId: 'att-1', nodeId: NODE, commitment: C1, signature: 'sig-1', now: T0 + 20 }), null, 'the stored commitment repeated');
      assert.equal(await store.recordEquivocation({ attemptId: 'att-1', nodeId: 'node-other', commitment: C2, signature: 'sig-x', now: T0 + 20 }), null, 'not the node’s attempt');
      assert.equal(await store.recordEquivocation({ attemptId: 'att-nope', nodeId: NODE, commitment: C2, signature: 'sig-x', now: T0 + 20 }), null, 'unknown attempt');
      assert.equal(await store.recordEquivocation({ attemptId: 'att-0', nodeId: NODE, commitment: C2, signature: 'sig-x', now: T0 + 20 }), null, 'no commitment stored');
      assert.equal(await store.recordEquivocation({ attemptId: 'att-3', nodeId: NODE, commitment: C2, signature: 'sig-x', now: T0 + 20 }), null, 'still active');
      assert.deepEqual(await store.listEquivocations(NODE), []);
      assert.equal(await store.getBalance(ACCOUNTS.stake(NODE), 'usdc'), 50 * USDC, 'no stake moved');
      const node = await store.getNode(NODE);
      assert.equal(node?.removedAt ?? null, null);
      assert.ok(!(await eventTypes(store, 'node', NODE)).includes('node.equivocated'));
    }));

  test('recordEquivocation: both commitments kept, the whole stake to the treasury, the node banned and its leases cut; once per pair', () =>
    withStore(open, async (store) => {
      await nodeWithAttempts(store);
      const treasuryBefore = await store.getBalance(ACCOUNTS.treasury, 'usdc');
      const now = T0 + 100;
      const eq = await store.recordEquivocation({ attemptId: 'att-1', nodeId: NODE, commitment: C2, signature: 'sig-2b', now });
      assert.ok(eq, 'recorded');
      assert.equal(eq.nodeId, NODE);
      assert.equal(eq.attemptId, 'att-1');
      assert.equal(eq.jobId, 'job-1');
      assert.deepEqual(eq.first, { commitment: C1, signature: 'sig-1' });
      assert.deepEqual(eq.second, { commitment: C2, signature: 'sig-2b' });
      assert.equal(eq.slashed, 50 * USDC);
      assert.equal(eq.at, now);
      assert.ok(eq.transferId);
      // The slash: one transfer stake → treasury, of the whole stake.
      assert.equal(await store.getBalance(ACCOUNTS.stake(NODE), 'usdc'), 0);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), treasuryBefore + 50 * USDC);
      const slashes = (await store.listTransfers({ limit: 10, account: ACCOUNTS.stake(NODE) })).items.filter((t) => t.kind === 'slash');
      assert.deepEqual(
        slashes.map((t) => t.id),
        [eq.transferId],
      );
      // Banned: removed and offline, with the events that say why.
      const node = await store.getNode(NODE);
      assert.equal(node?.removedAt, now);
      assert.equal(node?.status, 'offline');
      const types = await eventTypes(store, 'node', NODE);
      for (const t of ['node.equivocated', 'node.slashed', 'node.removed']) assert.ok(types.includes(t), `${t} in ${types.join(', ')}`);
      // Its active lease was cut: the expiry pass ends the attempt at once.
      const lost = await store.expireLeases(now, decide, 10);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-3'],
      );
      // The same pair again records nothing; the evidence reads back.
      assert.equal(await store.recordEquivocation({ attemptId: 'att-1', nodeId: NODE, commitment: C2, signature: 'sig-2b', now: now + 1 }), null);
      assert.deepEqual(await store.listEquivocations(NODE), [eq]);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), treasuryBefore + 50 * USDC, 'slashed once');
      assertBalanced(await store.ledgerTotals());
    }));

  test('listEquivocations: the node’s evidence newest first, none for other nodes; stake that arrives later is slashed by the next one', () =>
    withStore(open, async (store) => {
      await nodeWithAttempts(store);
      const first = await store.recordEquivocation({ attemptId: 'att-1', nodeId: NODE, commitment: C2, signature: 'sig-2b', now: T0 + 100 });
      await mintTo(store, ACCOUNTS.stake(NODE), 5 * USDC, T0 + 150);
      const second = await store.recordEquivocation({ attemptId: 'att-2', nodeId: NODE, commitment: '{"attemptId":"att-2","x":1}', signature: 'sig-2c', now: T0 + 200 });
      assert.ok(first && second);
      assert.notEqual(first.id, second.id);
      assert.equal(second.slashed, 5 * USDC);
      assert.deepEqual(await store.listEquivocations(NODE), [second, first]);
      assert.deepEqual(await store.listEquivocations('node-other'), []);
      assert.equal(await store.getBalance(ACCOUNTS.stake(NODE), 'usdc'), 0);
      assertBalanced(await store.ledgerTotals());
    }));
}
