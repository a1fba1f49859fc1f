/**
 * Conformance: abandoned leases (TRUST.md penalties table) in the attempt-end transaction. A lease lost
 * because the node went silent is a lease-abandoned penalty: the first in 7 days free, then a fee of one
 * hour of the attempt's price from the provider's wallet to the buyer (capped at the wallet, the rest
 * unpaid), more than 3 in 7 days cordons the node as suspended; stake never moves. A lease the coordinator
 * cut (enrollment revoked with removeNodes, a ban), a cancel-grace end, an agent's own failure report and a
 * coordinator restart cost nothing. Reputation: lease-lost for an abandoned lease only.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, type AttemptPriceRecord, holdFor, type LedgerTotals, move, type Store, SUSPENDED_REASON, transitionDecider } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { advertisement, assigned, enroll, enrollment, eventTypes, type OpenStore, placement, result, spec, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const NODE = 'node-lp';
const PROVIDER = 'prov-lp';
const BUYER = 'buyer-lp';
const PRICE = 1_234_567; // per unit-hour
const UNITS = 2;
const HOUR = PRICE * UNITS; // the lost job's price
const JOB_SPEC: Partial<JobSpecInput> = { timeoutSeconds: 600, maxRetries: 0, resources: { gpu: { count: UNITS } } };
const HELD = holdFor(spec(JOB_SPEC), PRICE);
const DAY = 86_400_000;

function mintTo(store: Store, account: string, amount: number, at = T0) {
  return store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at, memo: `test funds for ${account}` });
}

function assertBalanced(totals: LedgerTotals[]): void {
  for (const t of totals) {
    assert.equal(t.inside, t.minted, `${t.asset}: inside equals minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

const price = (providerId = PROVIDER): AttemptPriceRecord => ({ asset: 'usdc', pricePerUnitHour: PRICE, units: UNITS, feeBps: 500, providerId, stakeLock: 0, marketClass: 'h100-80gb' });

/** The provider's node (registered with its provider), a staked 50 USDC, the buyer funded. */
async function world(store: Store, providerWallet: number): Promise<void> {
  await store.registerNode({ id: NODE, publicKey: `key-${NODE}`, advertisement: advertisement(), now: T0, providerId: PROVIDER });
  await mintTo(store, ACCOUNTS.stake(NODE), 50_000_000);
  await mintTo(store, ACCOUNTS.wallet(BUYER), 100 * HELD);
  if (providerWallet > 0) await mintTo(store, ACCOUNTS.wallet(PROVIDER), providerWallet);
}

/** A paid job assigned at PRICE on NODE, started, its lease until `at` + 30 s; then lost at `at` + 30 s + 1. */
async function loseOne(store: Store, n: number, at: number, nodeId = NODE): Promise<string> {
  const jobId = `job-${n}`;
  await store.submitJob({ id: jobId, buyerId: BUYER, spec: spec(JOB_SPEC), idempotencyKey: null, now: at, payment: { asset: 'usdc', capPerUnitHour: PRICE, units: UNITS, held: HELD } });
  const [a] = await store.assign([{ ...placement(jobId, `att-${n}`, nodeId, at + 30_000, [0, 1]), price: price() }], at);
  assert.ok(a, `assign ${jobId}`);
  await store.startAttempt(a.id, nodeId, at + 1);
  const lost = await store.expireLeases(at + 30_001, decide, 10);
  assert.deepEqual(
    lost.map((l) => [l.attemptId, l.outcome ?? 'lost']),
    [[a.id, 'lost']],
  );
  return a.id;
}

const leasePenalties = async (store: Store, nodeId = NODE) => (await store.listPenalties(nodeId, { limit: 100 })).items.filter((p) => p.kind === 'lease-abandoned').reverse();
const wallet = (store: Store, id: string) => store.getBalance(ACCOUNTS.wallet(id), 'usdc');

export function leasePenaltyTests(open: OpenStore): void {
  test('abandoned leases: the first in 7 days is free, then one hour of the price from the provider to the buyer; rows, events, reputation', () =>
    withStore(open, async (store) => {
      await world(store, 10 * HOUR);
      const first = await loseOne(store, 1, T0 + 1_000);
      let rows = await leasePenalties(store);
      assert.equal(rows.length, 1);
      const r1 = rows[0];
      assert.ok(r1);
      assert.deepEqual(
        { attemptId: r1.attemptId, jobId: r1.jobId, fee: r1.fee, slashed: r1.slashed, transferId: r1.transferId, banned: r1.banned, suspended: r1.suspended, at: r1.at },
        { attemptId: first, jobId: 'job-1', fee: 0, slashed: 0, transferId: null, banned: false, suspended: false, at: T0 + 31_001 },
      );
      assert.equal(r1.evidence.leaseExpiresAt, T0 + 31_000);
      assert.equal(r1.evidence.lossesIn7Days, 1);
      assert.equal(r1.evidence.attemptId, first);
      assert.equal(typeof r1.evidence.lastHeartbeatAt, 'number');
      assert.match(r1.reason, /first is free/);
      assert.equal(await wallet(store, PROVIDER), 10 * HOUR, 'the first costs nothing');
      assert.ok((await eventTypes(store, 'node', NODE)).includes('node.penalized'));
      const rep = await store.getReputation(NODE);
      assert.ok(rep && rep.state.bad > 0, 'a lease-lost on the reputation');

      const buyerBefore = await wallet(store, BUYER);
      const second = await loseOne(store, 2, T0 + DAY);
      rows = await leasePenalties(store);
      assert.equal(rows.length, 2);
      const r2 = rows[1];
      assert.ok(r2?.transferId);
      assert.equal(r2.fee, HOUR);
      assert.equal(r2.evidence.lossesIn7Days, 2);
      assert.equal(r2.evidence.unpaid, 0);
      assert.equal(await wallet(store, PROVIDER), 9 * HOUR, 'one hour of the price from the provider');
      // Its job failed (no retries): the whole hold back, plus the fee.
      assert.equal(await wallet(store, BUYER), buyerBefore - HELD + HELD + HOUR);
      const fee = (await store.jobTransfers('job-2')).find((t) => t.kind === 'penalty.fee');
      assert.ok(fee);
      assert.equal(fee.id, r2.transferId);
      assert.equal(fee.attemptId, second);
      assert.deepEqual(new Map(fee.postings.map((p) => [p.account, p.amount])), new Map([[ACCOUNTS.wallet(BUYER), HOUR], [ACCOUNTS.wallet(PROVIDER), -HOUR]]));
      assert.equal(await store.getBalance(ACCOUNTS.stake(NODE), 'usdc'), 50_000_000, 'stake never moves');
      assert.equal((await store.getNode(NODE))?.adminState, 'active');
      const penalized = (await store.listEvents('node', NODE, 100)).filter((e) => e.type === 'node.penalized');
      assert.equal(penalized.length, 2);
      assert.equal(penalized[1]?.data.penaltyId, r2.id);
      assert.equal(penalized[1]?.data.fee, HOUR);
      assertBalanced(await store.ledgerTotals());
    }));

  test('a fee larger than the provider’s wallet takes what is there; the rest is unpaid in the evidence', () =>
    withStore(open, async (store) => {
      await world(store, 1_000);
      await loseOne(store, 1, T0 + 1_000);
      await loseOne(store, 2, T0 + 2 * DAY);
      const r = (await leasePenalties(store))[1];
      assert.ok(r?.transferId);
      assert.equal(r.fee, HOUR);
      assert.deepEqual([r.evidence.paid, r.evidence.unpaid], [1_000, HOUR - 1_000]);
      assert.equal(await wallet(store, PROVIDER), 0);
      await loseOne(store, 3, T0 + 3 * DAY);
      const empty = (await leasePenalties(store))[2];
      assert.deepEqual([empty?.transferId, empty?.fee, empty?.evidence.unpaid], [null, HOUR, HOUR], 'an empty wallet: nothing moves, all unpaid');
      assertBalanced(await store.ledgerTotals());
    }));

  test('more than 3 in 7 days suspends: cordoned with the reason, once; an operator can uncordon; losses past 7 days do not count', () =>
    withStore(open, async (store) => {
      // Unpriced attempts cost nothing but count.
      for (let i = 1; i <= 4; i++) {
        await assigned(store, `job-${i}`, `att-${i}`, NODE, T0 + i * 100_000);
        await store.expireLeases(T0 + i * 100_000 + 30_001, decide, 10);
      }
      let rows = await leasePenalties(store);
      assert.deepEqual(
        rows.map((r) => [r.fee, r.suspended]),
        [
          [0, false],
          [0, false],
          [0, false],
          [0, true],
        ],
      );
      let node = await store.getNode(NODE);
      assert.equal(node?.adminState, 'cordoned');
      assert.equal(node?.adminReason, SUSPENDED_REASON);
      await assigned(store, 'job-5', 'att-5', NODE, T0 + 500_000);
      await store.expireLeases(T0 + 530_001, decide, 10);
      const types = await eventTypes(store, 'node', NODE);
      assert.equal(types.filter((t) => t === 'node.suspended').length, 1, 'suspended once while it stays suspended');
      assert.equal(types.filter((t) => t === 'node.penalized').length, 5);
      await store.setNodeAdminState(NODE, 'active', T0 + 600_000);
      assert.equal((await store.getNode(NODE))?.adminState, 'active', 'an operator lifts it');
      // Eight days on, the window is empty again: free, not suspended.
      await assigned(store, 'job-6', 'att-6', NODE, T0 + 8 * DAY);
      await store.expireLeases(T0 + 8 * DAY + 30_001, decide, 10);
      rows = await leasePenalties(store);
      assert.deepEqual([rows[5]?.suspended, rows[5]?.evidence.lossesIn7Days], [false, 1]);
      node = await store.getNode(NODE);
      assert.equal(node?.adminState, 'active');
      assert.equal(await store.getBalance(ACCOUNTS.stake(NODE), 'usdc'), 0);
    }));

  test('a lease the coordinator cut costs nothing: a node removed with its enrollment, or banned for equivocation', () =>
    withStore(open, async (store) => {
      await store.createEnrollment(enrollment({ accountId: PROVIDER }));
      await enroll(store, 'node-rv', T0, { id: 'enr-1', accountId: PROVIDER });
      await mintTo(store, ACCOUNTS.wallet(BUYER), 100 * HELD);
      await mintTo(store, ACCOUNTS.wallet(PROVIDER), 10 * HOUR);
      await loseOne(store, 1, T0 + 1_000, 'node-rv'); // the free one: the next would cost a fee
      const repBefore = await store.getReputation('node-rv');
      await store.submitJob({ id: 'job-2', buyerId: BUYER, spec: spec(JOB_SPEC), idempotencyKey: null, now: T0 + 50_000, payment: { asset: 'usdc', capPerUnitHour: PRICE, units: UNITS, held: HELD } });
      await store.assign([{ ...placement('job-2', 'att-2', 'node-rv', T0 + 80_000, [0, 1]), price: price() }], T0 + 50_000);
      await store.revokeEnrollment('enr-1', T0 + 60_000, true);
      const lost = await store.expireLeases(T0 + 60_000, decide, 10);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-2'],
      );
      assert.equal((await leasePenalties(store, 'node-rv')).length, 1, 'no penalty for the revoke');
      assert.equal(await wallet(store, PROVIDER), 10 * HOUR);
      assert.deepEqual(await store.getReputation('node-rv'), repBefore, 'nor a lease-lost');

      // Banned for equivocation: its other leases are cut, not abandoned.
      await store.registerNode({ id: 'node-eq', publicKey: 'key-node-eq', advertisement: advertisement({ gpus: [{ index: 0, uuid: 'GPU-eq', vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }] }), now: T0, providerId: PROVIDER });
      await mintTo(store, ACCOUNTS.stake('node-eq'), 1_000_000);
      await assigned(store, 'job-e0', 'att-e0', 'node-eq', T0 + 100_000);
      await store.expireLeases(T0 + 130_001, decide, 10); // its free loss
      await assigned(store, 'job-e1', 'att-e1', 'node-eq', T0 + 200_000);
      await assigned(store, 'job-e2', 'att-e2', 'node-eq', T0 + 200_000);
      await store.finishAttempt(result('att-e1', 'node-eq', T0 + 200_010, { commitment: '{"a":1}', commitmentSignature: 'sig-1' }), decide);
      assert.ok(await store.recordEquivocation({ attemptId: 'att-e1', nodeId: 'node-eq', commitment: '{"a":2}', signature: 'sig-2', now: T0 + 200_020 }));
      const cut = await store.expireLeases(T0 + 200_020, decide, 10);
      assert.deepEqual(
        cut.map((l) => l.attemptId),
        ['att-e2'],
      );
      assert.equal((await leasePenalties(store, 'node-eq')).length, 1, 'only the earlier abandoned lease');
      assertBalanced(await store.ledgerTotals());
    }));

  test('not abandoned: a cancel-grace end, the agent’s own failure report, a coordinator restart', () =>
    withStore(open, async (store) => {
      await assigned(store, 'job-1', 'att-1', NODE, T0);
      await store.startAttempt('att-1', NODE, T0 + 1);
      await store.requestCancel('job-1', T0 + 10, 5_000);
      const ended = await store.expireLeases(T0 + 5_011, decide, 10);
      assert.deepEqual(
        ended.map((l) => l.outcome),
        ['cancelled'],
      );
      await assigned(store, 'job-2', 'att-2', NODE, T0 + 20);
      await store.finishAttempt(result('att-2', NODE, T0 + 30, { outcome: 'failed', exitCode: null, error: 'the node no longer runs this attempt (agent restarted?)' }), decide);
      // The coordinator was down past the lease; at start it extends every active lease first.
      await assigned(store, 'job-3', 'att-3', NODE, T0 + 40);
      await store.extendActiveLeases(T0 + 500_000 + 30_000);
      assert.deepEqual(await store.expireLeases(T0 + 500_000, decide, 10), []);
      assert.deepEqual(await leasePenalties(store), []);
      assert.equal(await store.getReputation(NODE), undefined, 'none of these touches the reputation');
    }));
}
