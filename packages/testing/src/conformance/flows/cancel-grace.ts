/**
 * Conformance: cancel billing and fee carry (issue 10 items 8, 15). A running paid job's cancel gives its
 * attempt stopBy = cancel + grace: heartbeats lease it no further, settlement charges it only up to stopBy,
 * and the expiry pass ends it as cancelled (job cancelled, escrow returned, stake unlocked) whether or not
 * the node answers; a late report is a duplicate or a CONFLICT. A node that goes silent first is lost as
 * usual. The treasury fee carries its remainder per provider, across jobs, so tiny charges pay the fee of
 * their sum. Every scenario ends with the ledger balanced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACCOUNTS,
  type AttemptPriceRecord,
  chargeFor,
  feeOf,
  holdFor,
  move,
  type Placement,
  type Store,
  stakeToLock,
  transitionDecider,
} from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { advertisement, code, distinctGpuPair, type OpenStore, placement, result, spec, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const BUYER = 'buyer-c';
const CAP = 3_000_000;
const PRICE = 2_345_679;
const FEE_BPS = 500;
const TIMEOUT = 600;
const SPEC: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, resources: { gpu: { count: 2 } } };
const HELD = holdFor(spec(SPEC), CAP);
const GRACE = 5_000;

async function mint(store: Store, account: string, amount: number): Promise<void> {
  await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at: T0, memo: `test funds for ${account}` });
}

function price(providerId: string, perUnitHour = PRICE): AttemptPriceRecord {
  return { asset: 'usdc', pricePerUnitHour: perUnitHour, units: 2, feeBps: FEE_BPS, providerId, stakeLock: stakeToLock(perUnitHour, 2, TIMEOUT), marketClass: 'h100-80gb' };
}

async function node(store: Store, nodeId: string, providerId: string, locks = 1): Promise<void> {
  const gpus = [0, 1].map((index) => ({ index, uuid: `GPU-${nodeId}-${index}`, vendor: 'nvidia' as const, model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }));
  await store.registerNode({ id: nodeId, publicKey: `key-${nodeId}`, advertisement: advertisement({ gpus }), now: T0, providerId });
  await mint(store, ACCOUNTS.stake(nodeId), locks * stakeToLock(PRICE, 2, TIMEOUT));
}

/** A paid job assigned at a price (lease until start + 40 s) and started at `start`. */
async function running(store: Store, jobId: string, attemptId: string, nodeId: string, start: number, p: AttemptPriceRecord): Promise<void> {
  await store.submitJob({ id: jobId, buyerId: BUYER, spec: spec(SPEC), idempotencyKey: null, now: start - 2, payment: { asset: 'usdc', capPerUnitHour: CAP, units: 2, held: HELD } });
  const pl: Placement = { ...placement(jobId, attemptId, nodeId, start + 40_000, distinctGpuPair()), price: p };
  const [a] = await store.assign([pl], start - 1);
  assert.ok(a, `assign ${jobId}`);
  await store.startAttempt(attemptId, nodeId, start);
}

async function assertBalanced(store: Store): Promise<void> {
  for (const t of await store.ledgerTotals()) {
    assert.equal(t.inside, t.minted, `${t.asset}: money inside equals money minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

export function cancelGraceTests(open: OpenStore): void {
  test('cancel of a running paid job: charged only to cancel + grace, never leased past it, ended as cancelled with no node report', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await node(store, 'node-1', 'prov-1');
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start, price('prov-1'));
      const cancelAt = start + 10_000;
      const stopBy = cancelAt + GRACE;
      const asked = await store.requestCancel('job-1', cancelAt, GRACE);
      assert.deepEqual(asked.stopAttemptIds, ['att-1']);
      assert.equal(asked.job.state, 'running');
      assert.equal((await store.getAttempt('att-1'))?.leaseExpiresAt, stopBy, 'the lease is cut to the stop');
      // Asking again does not move the stop.
      await store.requestCancel('job-1', cancelAt + 1_000, GRACE);

      // The node keeps heartbeating and never stops: its lease is never renewed past stopBy.
      const hb = await store.heartbeat('node-1', cancelAt + 2_000, cancelAt + 42_000);
      assert.deepEqual(hb.cancelAttemptIds, ['att-1']);
      assert.equal((await store.getAttempt('att-1'))?.leaseExpiresAt, stopBy);
      await store.heartbeat('node-1', stopBy + 1_000, stopBy + 41_000);
      assert.equal((await store.getAttempt('att-1'))?.leaseExpiresAt, stopBy);

      // Chunk settlement long after the cancel charges only up to stopBy, and only once.
      const upTo = chargeFor(PRICE, 2, stopBy - start, TIMEOUT);
      assert.equal(await store.settleRunning(stopBy + 30_000, 0, 10), 1);
      assert.equal((await store.getAttempt('att-1'))?.settlement.charged, upTo);
      assert.equal(await store.settleRunning(stopBy + 60_000, 0, 10), 0, 'nothing more to settle, and it does not hold a slot');
      assert.equal((await store.getStake('node-1')).locked, stakeToLock(PRICE, 2, TIMEOUT));

      // The expiry pass ends it as cancelled: the job is cancelled, the escrow returned, the stake unlocked.
      const ended = await store.expireLeases(stopBy + 1, decide, 10);
      assert.deepEqual(
        ended.map((l) => [l.attemptId, l.outcome, l.jobState]),
        [['att-1', 'cancelled', 'cancelled']],
      );
      const a = await store.getAttempt('att-1');
      assert.equal(a?.state, 'cancelled');
      assert.equal(a?.settlement.charged, upTo);
      assert.match(a?.error ?? '', /cancel grace/);
      const job = await store.getJob('job-1');
      assert.equal(job?.state, 'cancelled');
      assert.equal(await store.getBalance(ACCOUNTS.escrow('job-1'), 'usdc'), 0);
      assert.equal(await store.getBalance(ACCOUNTS.wallet(BUYER), 'usdc'), 5_000_000 - upTo);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov-1'), 'usdc'), upTo - feeOf(upTo, FEE_BPS));
      assert.equal((await store.getStake('node-1')).locked, 0);
      assert.deepEqual(await store.expireLeases(stopBy + 100_000, decide, 10), []);

      // The node reports late: the same end is a duplicate, another one a CONFLICT; nothing moves.
      const dup = await store.finishAttempt(result('att-1', 'node-1', stopBy + 200_000, { outcome: 'cancelled', exitCode: null }), decide);
      assert.equal(dup.duplicate, true);
      await assert.rejects(store.finishAttempt(result('att-1', 'node-1', stopBy + 200_000), decide), code('CONFLICT'));
      assert.equal((await store.getAttempt('att-1'))?.settlement.charged, upTo);
      await assertBalanced(store);
    }));

  test('a node that stops within the grace is charged to its report; one that reports after the grace only to cancel + grace', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await node(store, 'node-1', 'prov-1', 2);
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start, price('prov-1'));
      await running(store, 'job-2', 'att-2', 'node-1', start, price('prov-1'));
      await store.requestCancel('job-1', start + 10_000, GRACE);
      await store.requestCancel('job-2', start + 10_000, GRACE);
      const r1 = await store.finishAttempt(result('att-1', 'node-1', start + 12_000, { outcome: 'cancelled', exitCode: null }), decide);
      assert.equal(r1.job.state, 'cancelled');
      assert.equal(r1.attempt.settlement.charged, chargeFor(PRICE, 2, 12_000, TIMEOUT));
      const r2 = await store.finishAttempt(result('att-2', 'node-1', start + 90_000), decide);
      assert.equal(r2.job.state, 'cancelled', 'a cancel request wins over a late success');
      assert.equal(r2.attempt.settlement.charged, chargeFor(PRICE, 2, 10_000 + GRACE, TIMEOUT));
      assert.equal(await store.getBalance(ACCOUNTS.escrow('job-2'), 'usdc'), 0);
      await assertBalanced(store);
    }));

  test('a node that goes silent after the cancel is lost, charged nothing past its last chunk', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await node(store, 'node-1', 'prov-1');
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start, price('prov-1')); // lease until start + 40 s
      await store.requestCancel('job-1', start + 10_000, 60_000); // stop by start + 70 s: after the lease
      assert.equal((await store.getAttempt('att-1'))?.leaseExpiresAt, start + 40_000);
      const ended = await store.expireLeases(start + 40_001, decide, 10);
      assert.deepEqual(
        ended.map((l) => [l.outcome ?? 'lost', l.jobState]),
        [['lost', 'cancelled']],
      );
      assert.equal((await store.getAttempt('att-1'))?.settlement.charged, 0);
      assert.equal(await store.getBalance(ACCOUNTS.wallet(BUYER), 'usdc'), 5_000_000);
      await assertBalanced(store);
    }));

  test('the fee carries its remainder per provider across jobs: tiny charges pay the fee of their sum', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 50_000_000);
      await node(store, 'node-a', 'prov-a', 12);
      await node(store, 'node-b', 'prov-b', 12);
      // 18,000 per unit-hour on 2 units for 1 s charges 10: alone, a 5% fee of 0.5 rounds to 0.
      const tiny = 18_000;
      const c = chargeFor(tiny, 2, 1_000, TIMEOUT);
      assert.equal(c, 10);
      assert.equal(feeOf(c, FEE_BPS), 0);
      let start = T0 + 1_000;
      const n = 11;
      for (let i = 0; i < n; i++) {
        for (const [p, nd] of [
          ['prov-a', 'node-a'],
          ['prov-b', 'node-b'],
        ] as const) {
          const id = `${p}-${i}`;
          await running(store, `job-${id}`, `att-${id}`, nd, start, price(p, tiny));
          await store.finishAttempt(result(`att-${id}`, nd, start + 1_000), decide);
        }
        start += 10_000;
      }
      const each = feeOf(n * c, FEE_BPS); // floor(110 × 5%) = 5 per provider
      assert.equal(each, 5);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), 2 * each);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov-a'), 'usdc'), n * c - each);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov-b'), 'usdc'), n * c - each);
      await assertBalanced(store);
    }));
}
