/**
 * Conformance: job money inside the job verbs — the hold at submission, release on cancel and at the end,
 * provider binding, the stake check at assignment, settlement of attempts (at once or in chunks), lost
 * attempts, top-ups before a retry and the failure when the wallet is short. Every scenario ends with the
 * ledger balanced. Amounts come from core's settlement functions, so they are exact.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACCOUNTS,
  type AttemptPriceRecord,
  chargeFor,
  feeOf,
  holdFor,
  type JobPaymentRecord,
  move,
  type Placement,
  type Store,
  stakeToLock,
  transitionDecider,
} from '@gpux/core';
import type { Asset, JobSpecInput } from '@gpux/protocol';
import { advertisement, code, distinctGpuPair, eventTypes, type OpenStore, placement, register, result, spec, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();

const BUYER = 'buyer-1';
const PROVIDER = 'prov-1';
const CAP = 3_000_000; // 3 USDC per unit-hour
const PRICE = 2_345_679; // odd on purpose: chunks round
const FEE_BPS = 500;
const TIMEOUT = 600;
const GPU_SPEC: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, resources: { gpu: { count: 2 } } };
const HELD = holdFor(spec(GPU_SPEC), CAP); // 1.000000 USDC

async function mint(store: Store, account: string, amount: number, at = T0, asset: Asset = 'usdc'): Promise<void> {
  await store.postTransfer({ kind: 'mint', postings: move(asset, ACCOUNTS.world, [{ account, amount }]), at, memo: `test funds for ${account}` });
}

const bal = (store: Store, account: string, asset: Asset = 'usdc') => store.getBalance(account, asset);

function payment(over: Partial<JobSpecInput> = GPU_SPEC, cap = CAP): JobPaymentRecord {
  const s = spec(over);
  return { asset: 'usdc', capPerUnitHour: cap, units: Math.max(1, s.resources.gpu.count), held: holdFor(s, cap) };
}

function price(units = 2, perUnitHour = PRICE, providerId = PROVIDER): AttemptPriceRecord {
  return { asset: 'usdc', pricePerUnitHour: perUnitHour, units, feeBps: FEE_BPS, providerId, stakeLock: stakeToLock(perUnitHour, units, TIMEOUT), marketClass: 'h100-80gb' };
}

async function submitPaid(store: Store, id: string, now: number, over: { buyerId?: string; key?: string; spec?: Partial<JobSpecInput>; cap?: number } = {}) {
  const s = over.spec ?? GPU_SPEC;
  return store.submitJob({ id, buyerId: over.buyerId ?? BUYER, spec: spec(s), idempotencyKey: over.key ?? null, now, payment: payment(s, over.cap) });
}

/** A provider's node with enough stake for `locks` attempts at PRICE on 2 GPUs. */
async function stakedNode(store: Store, nodeId: string, locks = 1, providerId = PROVIDER): Promise<void> {
  await store.registerNode({ id: nodeId, publicKey: `key-${nodeId}`, advertisement: advertisement(), now: T0, providerId });
  await mint(store, ACCOUNTS.stake(nodeId), locks * stakeToLock(PRICE, 2, TIMEOUT));
}

function pricedPlacement(jobId: string, attemptId: string, nodeId: string, lease: number, p: AttemptPriceRecord = price()): Placement {
  return { ...placement(jobId, attemptId, nodeId, lease, distinctGpuPair()), price: p };
}

/** Submit with payment, assign at a price, start at `start`: the running attempt. */
async function running(store: Store, jobId: string, attemptId: string, nodeId: string, start: number, p: AttemptPriceRecord = price()) {
  const [a] = await store.assign([pricedPlacement(jobId, attemptId, nodeId, start + 40_000, p)], start - 1);
  assert.ok(a, `assign ${jobId}`);
  return (await store.startAttempt(attemptId, nodeId, start)).attempt;
}

async function assertBalanced(store: Store): Promise<void> {
  const totals = await store.ledgerTotals();
  assert.ok(totals.length > 0);
  for (const t of totals) {
    assert.equal(t.inside, t.minted, `${t.asset}: money inside equals money minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

const kinds = async (store: Store, jobId: string) => (await store.jobTransfers(jobId)).map((t) => t.kind);

export function jobMoneyTests(open: OpenStore): void {
  test('submitJob holds payment.held; a short wallet writes nothing (INSUFFICIENT_FUNDS); a resubmission holds once; cancel while queued releases all', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 10_000_000);
      assert.equal(HELD, 1_000_000);
      const first = await submitPaid(store, 'job-1', T0 + 1, { key: 'k1' });
      assert.equal(first.created, true);
      assert.deepEqual(first.job.payment, { asset: 'usdc', capPerUnitHour: CAP, units: 2, held: HELD });
      assert.deepEqual((await store.getJob('job-1'))?.payment, first.job.payment);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - HELD);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), HELD);
      const [hold] = await store.jobTransfers('job-1');
      assert.equal(hold?.kind, 'escrow.hold');
      assert.equal(hold?.jobId, 'job-1');
      assert.match(hold?.memo ?? '', /^hold for job job-1: cap 3\.000000 USDC per GPU-hour × 2 GPUs × 1 node × 600 s$/);
      assert.deepEqual(
        hold?.postings.map((p) => [p.account, p.amount]),
        [
          [ACCOUNTS.escrow('job-1'), HELD],
          [ACCOUNTS.wallet(BUYER), -HELD],
        ],
      );

      // The same key again: the existing job, no second hold.
      const again = await submitPaid(store, 'job-1b', T0 + 2, { key: 'k1' });
      assert.equal(again.created, false);
      assert.equal(again.job.id, 'job-1');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - HELD);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold']);

      // A buyer who cannot cover the hold: 402, and neither the job, its event nor a transfer exists.
      await mint(store, ACCOUNTS.wallet('poor'), HELD - 1);
      await assert.rejects(submitPaid(store, 'job-poor', T0 + 3, { buyerId: 'poor', key: 'kp' }), (err: unknown) => {
        code('INSUFFICIENT_FUNDS')(err);
        assert.match((err as Error).message, /wallet:poor/);
        return true;
      });
      assert.equal(await store.getJob('job-poor'), undefined);
      assert.deepEqual(await store.jobTransfers('job-poor'), []);
      assert.deepEqual(await store.listEvents('job', 'job-poor', 10), []);
      assert.equal(await bal(store, ACCOUNTS.wallet('poor')), HELD - 1);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-poor')), 0);

      // Cancelled while queued: the whole hold goes back at once.
      const { job: cancelled } = await store.requestCancel('job-1', T0 + 4);
      assert.equal(cancelled.state, 'cancelled');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), 0);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'escrow.release']);
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.cancelled', 'job.escrow_released']);
      assert.equal((await store.listEvents('job', 'job-1', 10)).at(-1)?.data.amount, HELD);

      // A job without payment moves no money.
      const free = await store.submitJob({ id: 'job-free', buyerId: BUYER, spec: spec(), idempotencyKey: null, now: T0 + 5 });
      assert.equal(free.job.payment, null);
      await store.requestCancel('job-free', T0 + 6);
      assert.deepEqual(await store.jobTransfers('job-free'), []);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000);
      await assertBalanced(store);
    }));

  test('assign takes a priced placement only when the node’s free stake covers its lock (gangs whole), and records the price', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 100_000_000);
      const lock = stakeToLock(PRICE, 2, TIMEOUT);
      await stakedNode(store, 'node-1'); // one lock's worth
      await mint(store, ACCOUNTS.stake('node-1'), lock / 2);
      for (const id of ['job-a', 'job-b', 'job-c']) await submitPaid(store, id, T0 + 1);
      await store.requestCancel('job-c', T0 + 2);
      // job-c is no longer queued: it locks nothing, so job-a fits and job-b (second in job order) does not.
      const out = await store.assign(
        [
          pricedPlacement('job-c', 'att-c', 'node-1', T0 + 30_000),
          pricedPlacement('job-b', 'att-b', 'node-1', T0 + 30_000),
          pricedPlacement('job-a', 'att-a', 'node-1', T0 + 30_000),
        ],
        T0 + 3,
      );
      assert.deepEqual(
        out.map((a) => a.id),
        ['att-a'],
      );
      assert.deepEqual(out[0]?.price, price());
      assert.deepEqual(out[0]?.settlement, { charged: 0, fee: 0, settledMs: 0 });
      assert.deepEqual((await store.getAttempt('att-a'))?.price, price());
      assert.equal((await store.getJob('job-b'))?.state, 'queued');
      assert.equal(await store.getAttempt('att-b'), undefined);
      assert.equal((await store.getStake('node-1')).locked, lock);
      // Still short while att-a holds its lock; an unpriced placement needs no stake.
      await register(store, 'node-0', T0);
      await store.submitJob({ id: 'job-free', buyerId: BUYER, spec: spec(), idempotencyKey: null, now: T0 + 4 });
      const next = await store.assign([pricedPlacement('job-b', 'att-b', 'node-1', T0 + 30_000), placement('job-free', 'att-free', 'node-0', T0 + 30_000, [])], T0 + 5);
      assert.deepEqual(
        next.map((a) => a.id),
        ['att-free'],
      );
      assert.equal(next[0]?.price, null);
      // More stake: now it fits.
      await mint(store, ACCOUNTS.stake('node-1'), lock / 2);
      assert.deepEqual(
        (await store.assign([pricedPlacement('job-b', 'att-b', 'node-1', T0 + 30_000)], T0 + 6)).map((a) => a.id),
        ['att-b'],
      );
      assert.equal((await store.getStake('node-1')).locked, 2 * lock);

      // A gang is taken whole or not at all: node-3 has no stake, so neither member is written.
      await stakedNode(store, 'node-2');
      await register(store, 'node-3', T0);
      const gangSpec: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, nodes: 2, resources: { gpu: { count: 2 } } };
      await submitPaid(store, 'job-g', T0 + 7, { spec: gangSpec });
      const peers = ['node-2', 'node-3'].map((nodeId, rank) => ({ rank, nodeId, address: `${nodeId}.local` }));
      const gang = (nodes: string[]) =>
        nodes.map((nodeId, rank) => ({ ...pricedPlacement('job-g', rank === 0 ? 'att-g' : 'att-g-r1', nodeId, T0 + 30_000), gang: { leaderAttemptId: 'att-g', rank, worldSize: 2, peers } }));
      assert.deepEqual(await store.assign(gang(['node-2', 'node-3']), T0 + 8), []);
      assert.equal((await store.getJob('job-g'))?.state, 'queued');
      assert.equal((await store.getStake('node-2')).locked, 0);
      await mint(store, ACCOUNTS.stake('node-3'), lock);
      assert.equal((await store.assign(gang(['node-2', 'node-3']), T0 + 9)).length, 2);
      assert.equal((await store.getJob('job-g'))?.state, 'assigned');
      await assertBalanced(store);
    }));

  test('a 90 s run at price P on 2 GPUs: exactly chargeFor, the fee to the treasury, the rest to the provider, the remainder back', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await stakedNode(store, 'node-1');
      await submitPaid(store, 'job-1', T0);
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start);
      const r = await store.finishAttempt(result('att-1', 'node-1', start + 90_000), decide);
      const charge = chargeFor(PRICE, 2, 90_000, TIMEOUT);
      const fee = feeOf(charge, FEE_BPS);
      assert.equal(charge, 117_283);
      assert.equal(r.job.state, 'succeeded');
      assert.deepEqual(r.attempt.settlement, { charged: charge, fee, settledMs: 90_000 });
      assert.deepEqual((await store.getAttempt('att-1'))?.settlement, { charged: charge, fee, settledMs: 90_000 });
      assert.equal(await bal(store, ACCOUNTS.treasury), fee);
      assert.equal(await bal(store, ACCOUNTS.wallet(PROVIDER)), charge - fee);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - charge, 'the buyer got hold − charge back');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), 0);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'settlement', 'escrow.release']);
      const settlement = (await store.jobTransfers('job-1'))[1];
      assert.equal(settlement?.attemptId, 'att-1');
      assert.equal(settlement?.nodeId, 'node-1');
      assert.match(settlement?.memo ?? '', /^attempt att-1: 90000 ms at 2\.345679 USDC per GPU-hour × 2 GPUs$/);
      const events = await store.listEvents('job', 'job-1', 100);
      assert.deepEqual(
        events.map((e) => e.type).slice(-4),
        ['attempt.finished', 'job.charged', 'job.succeeded', 'job.escrow_released'],
      );
      assert.deepEqual(events.find((e) => e.type === 'job.charged')?.data, { attemptId: 'att-1', asset: 'usdc', charge, fee, provider: charge - fee });
      assert.equal(events.at(-1)?.data.amount, HELD - charge);
      // The stake lock ends with the attempt.
      assert.equal((await store.getStake('node-1')).locked, 0);

      // Cancelled while running: the attempt is paid for the time it ran (it stopped within the cancel grace), the rest goes back.
      await submitPaid(store, 'job-2', T0);
      await running(store, 'job-2', 'att-2', 'node-1', start);
      await store.requestCancel('job-2', start + 10_000);
      const c = await store.finishAttempt(result('att-2', 'node-1', start + 35_000, { outcome: 'cancelled', exitCode: null }), decide);
      assert.equal(c.job.state, 'cancelled');
      const charge2 = chargeFor(PRICE, 2, 35_000, TIMEOUT);
      assert.equal(c.attempt.settlement.charged, charge2);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-2')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - charge - charge2);
      await assertBalanced(store);
    }));

  test('chunked settlement (settleRunning at +30 s, +60 s, finish at +90 s) gives exactly the totals of one settlement', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await stakedNode(store, 'node-1');
      await submitPaid(store, 'job-1', T0);
      // An unpriced running attempt and a priced assigned one are never settled.
      await register(store, 'node-0', T0);
      await store.submitJob({ id: 'job-free', buyerId: BUYER, spec: spec(), idempotencyKey: null, now: T0 });
      await store.assign([placement('job-free', 'att-free', 'node-0', T0 + 900_000, [])], T0);
      await store.startAttempt('att-free', 'node-0', T0);
      await submitPaid(store, 'job-idle', T0);
      await store.assign([pricedPlacement('job-idle', 'att-idle', 'node-1', T0 + 900_000, price(2))], T0);
      await mint(store, ACCOUNTS.stake('node-1'), stakeToLock(PRICE, 2, TIMEOUT));

      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start);
      assert.equal(await store.settleRunning(start + 29_999, 30_000, 10), 0, 'not yet 30 s behind');
      assert.equal(await store.settleRunning(start + 30_000, 30_000, 10), 1);
      const c30 = chargeFor(PRICE, 2, 30_000, TIMEOUT);
      assert.deepEqual((await store.getAttempt('att-1'))?.settlement, { charged: c30, fee: feeOf(c30, FEE_BPS), settledMs: 30_000 });
      assert.equal(await store.settleRunning(start + 45_000, 30_000, 10), 0, 'only 15 s since the last chunk');
      assert.equal(await store.settleRunning(start + 60_000, 30_000, 0), 0, 'limit 0');
      assert.equal(await store.settleRunning(start + 60_000, 30_000, 10), 1);
      const r = await store.finishAttempt(result('att-1', 'node-1', start + 90_000), decide);
      const charge = chargeFor(PRICE, 2, 90_000, TIMEOUT);
      const fee = feeOf(charge, FEE_BPS);
      assert.deepEqual(r.attempt.settlement, { charged: charge, fee, settledMs: 90_000 });
      assert.equal(await bal(store, ACCOUNTS.treasury), fee);
      assert.equal(await bal(store, ACCOUNTS.wallet(PROVIDER)), charge - fee);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - HELD - charge, 'job-idle still holds');
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'settlement', 'settlement', 'settlement', 'escrow.release']);
      const chunks = (await store.jobTransfers('job-1')).filter((t) => t.kind === 'settlement');
      const escrowLeg = (t: (typeof chunks)[number]) => -(t.postings.find((p) => p.account === ACCOUNTS.escrow('job-1'))?.amount ?? 0);
      assert.deepEqual(chunks.map(escrowLeg), [c30, chargeFor(PRICE, 2, 60_000, TIMEOUT) - c30, charge - chargeFor(PRICE, 2, 60_000, TIMEOUT)]);
      assert.deepEqual((await store.getAttempt('att-idle'))?.settlement, { charged: 0, fee: 0, settledMs: 0 });
      assert.deepEqual(await store.jobTransfers('job-free'), []);
      await assertBalanced(store);
    }));

  test('a lost attempt keeps its settled chunks and is charged nothing more; the requeued job’s escrow is topped up to held', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      await stakedNode(store, 'node-1');
      await stakedNode(store, 'node-2');
      await submitPaid(store, 'job-1', T0);
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start); // lease until start + 40 s
      assert.equal(await store.settleRunning(start + 30_000, 30_000, 10), 1);
      const c30 = chargeFor(PRICE, 2, 30_000, TIMEOUT);
      const lost = await store.expireLeases(start + 100_000, decide, 10);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.jobState]),
        [['att-1', 'queued']],
      );
      assert.deepEqual((await store.getAttempt('att-1'))?.settlement, { charged: c30, fee: feeOf(c30, FEE_BPS), settledMs: 30_000 });
      assert.equal(await bal(store, ACCOUNTS.wallet(PROVIDER)), c30 - feeOf(c30, FEE_BPS), 'the provider keeps the chunk, forfeits the rest');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), HELD, 'topped up to a whole hold');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - HELD - c30);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'settlement', 'escrow.topup']);
      const topup = (await store.jobTransfers('job-1'))[2];
      assert.equal(topup?.postings.find((p) => p.account === ACCOUNTS.escrow('job-1'))?.amount, c30);
      assert.equal(await store.settleRunning(start + 200_000, 30_000, 10), 0, 'a lost attempt is not settled again');

      // The retry runs 10 s elsewhere and succeeds.
      const s2 = start + 200_000;
      await running(store, 'job-1', 'att-2', 'node-2', s2);
      const r = await store.finishAttempt(result('att-2', 'node-2', s2 + 10_000), decide);
      assert.equal(r.job.state, 'succeeded');
      const c10 = chargeFor(PRICE, 2, 10_000, TIMEOUT);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - c30 - c10);
      // One provider: its fee carries its remainder from job to job, so the fee is that of the sum.
      assert.equal(await bal(store, ACCOUNTS.treasury), feeOf(c30 + c10, FEE_BPS));
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), 0);
      await assertBalanced(store);
    }));

  test('a retry the wallet cannot top up: the job fails with the reason and the escrow remainder goes back', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), HELD);
      await stakedNode(store, 'node-1');
      await submitPaid(store, 'job-1', T0);
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start);
      // An executor failure (no exit code) would be retried, but the wallet is empty.
      const r = await store.finishAttempt(result('att-1', 'node-1', start + 30_000, { outcome: 'failed', exitCode: null, error: 'executor failed' }), decide);
      const c30 = chargeFor(PRICE, 2, 30_000, TIMEOUT);
      assert.equal(r.job.state, 'failed');
      assert.match(r.job.error ?? '', /^could not top up escrow for a retry: insufficient funds in wallet:buyer-1: needs 0\.039094 USDC, has 0\.000000 USDC/);
      assert.ok(r.job.finishedAt !== null);
      assert.deepEqual(r.job.avoidNodeIds, ['node-1']);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), HELD - c30);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'settlement', 'escrow.release']);
      assert.deepEqual((await eventTypes(store, 'job', 'job-1')).slice(-3), ['job.charged', 'job.failed', 'job.escrow_released']);
      assert.deepEqual(await store.claimQueued(start + 600_000, 10), []);

      // The same through a lost lease, with part of the top-up in the wallet: still failed, nothing taken from it.
      await mint(store, ACCOUNTS.wallet('buyer-2'), HELD + 1_000);
      await submitPaid(store, 'job-2', T0, { buyerId: 'buyer-2' });
      await running(store, 'job-2', 'att-2', 'node-1', start);
      assert.equal(await store.settleRunning(start + 30_000, 30_000, 10), 1);
      const lost = await store.expireLeases(start + 100_000, decide, 10);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.jobState]),
        [['att-2', 'failed']],
      );
      const job2 = await store.getJob('job-2');
      assert.match(job2?.error ?? '', /^could not top up escrow for a retry: insufficient funds in wallet:buyer-2: needs 0\.039094 USDC, has 0\.001000 USDC/);
      assert.equal(await bal(store, ACCOUNTS.wallet('buyer-2')), 1_000 + HELD - c30);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-2')), 0);
      assert.deepEqual(await kinds(store, 'job-2'), ['escrow.hold', 'settlement', 'escrow.release']);
      await assertBalanced(store);
    }));

  test('the buyer never pays more than held: a run past its timeout and a price above the cap are capped', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 10_000_000);
      await stakedNode(store, 'node-1', 3);
      // Past the timeout at price = cap: the charge stops at the timeout, i.e. exactly the hold.
      await submitPaid(store, 'job-1', T0);
      const start = T0 + 1_000;
      await running(store, 'job-1', 'att-1', 'node-1', start, price(2, CAP));
      assert.equal(await store.settleRunning(start + 400_000, 30_000, 10), 1);
      assert.equal(await store.settleRunning(start + 900_000, 30_000, 10), 1);
      const r = await store.finishAttempt(result('att-1', 'node-1', start + 1_200_000), decide);
      assert.equal(r.attempt.settlement.charged, HELD);
      assert.equal(r.attempt.settlement.fee, feeOf(HELD, FEE_BPS));
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - HELD);
      // A price twice the cap (it never should be): what the escrow holds, no more.
      await submitPaid(store, 'job-2', T0);
      const bigLock = { ...price(2, 2 * CAP), stakeLock: stakeToLock(PRICE, 2, TIMEOUT) };
      await running(store, 'job-2', 'att-2', 'node-1', start, bigLock);
      assert.equal(await store.settleRunning(start + 500_000, 30_000, 10), 1);
      const r2 = await store.finishAttempt(result('att-2', 'node-1', start + 590_000), decide);
      assert.equal(r2.attempt.settlement.charged, HELD);
      assert.equal(r2.attempt.settlement.fee, feeOf(HELD, FEE_BPS));
      assert.equal(await bal(store, ACCOUNTS.escrow('job-2')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - 2 * HELD);
      assert.equal(await bal(store, ACCOUNTS.treasury) + (await bal(store, ACCOUNTS.wallet(PROVIDER))), 2 * HELD);
      await assertBalanced(store);
    }));

  test('gang: members the gang stops are paid for the time they ran; the job is requeued with its escrow topped up', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5_000_000);
      const gangSpec: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, nodes: 2, resources: { gpu: { count: 1 } } };
      const held = holdFor(spec(gangSpec), CAP);
      await stakedNode(store, 'n1');
      await stakedNode(store, 'n2', 1, 'prov-2');
      await submitPaid(store, 'job-g', T0, { spec: gangSpec });
      const peers = ['n1', 'n2'].map((nodeId, rank) => ({ rank, nodeId, address: `${nodeId}.local` }));
      const members = ['n1', 'n2'].map((nodeId, rank) => ({
        ...placement('job-g', rank === 0 ? 'att-g' : 'att-g-r1', nodeId, T0 + 900_000, [0]),
        gang: { leaderAttemptId: 'att-g', rank, worldSize: 2, peers },
        price: price(1, PRICE, rank === 0 ? PROVIDER : 'prov-2'),
      }));
      assert.equal((await store.assign(members, T0)).length, 2);
      const start = T0 + 1_000;
      await store.startAttempt('att-g', 'n1', start);
      await store.startAttempt('att-g-r1', 'n2', start);
      const f = await store.finishAttempt(result('att-g-r1', 'n2', start + 60_000, { outcome: 'failed', exitCode: null, error: 'executor failed' }), decide);
      assert.equal(f.job.state, 'queued');
      const each = chargeFor(PRICE, 1, 60_000, TIMEOUT);
      assert.equal(f.attempt.settlement.charged, each);
      const leader = await store.getAttempt('att-g');
      assert.equal(leader?.state, 'cancelled');
      assert.deepEqual(leader?.settlement, { charged: each, fee: feeOf(each, FEE_BPS), settledMs: 60_000 });
      assert.equal(await bal(store, ACCOUNTS.wallet(PROVIDER)), each - feeOf(each, FEE_BPS));
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-2')), each - feeOf(each, FEE_BPS));
      assert.equal(await bal(store, ACCOUNTS.escrow('job-g')), held);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 5_000_000 - held - 2 * each);
      assert.deepEqual(await kinds(store, 'job-g'), ['escrow.hold', 'settlement', 'settlement', 'escrow.topup']);
      await assertBalanced(store);
    }));

  test('a burst of submits, then of starts, then of results (group commits): each verb answered alone; a refused one writes nothing, the others commit', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet(BUYER), 5 * HELD + HELD / 2); // covers five holds, not six
      const subs = await Promise.allSettled([
        ...Array.from({ length: 6 }, (_, i) => submitPaid(store, `job-b${i}`, T0 + 1)),
        submitPaid(store, 'job-k1', T0 + 1, { key: 'same', buyerId: 'rich' }),
        submitPaid(store, 'job-k2', T0 + 1, { key: 'same', buyerId: 'rich' }),
      ]);
      const refused = subs.filter((r) => r.status === 'rejected');
      // The rich buyer has no wallet: both keyed submits are refused alone; five of the six others hold.
      assert.equal(refused.length, 3, String(refused.map((r) => (r as PromiseRejectedResult).reason)));
      for (const r of refused) code('INSUFFICIENT_FUNDS')((r as PromiseRejectedResult).reason);
      const held = subs.slice(0, 6).flatMap((r) => (r.status === 'fulfilled' ? [r.value.job.id] : []));
      assert.equal(held.length, 5);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), HELD / 2);
      const missing = ['job-b0', 'job-b1', 'job-b2', 'job-b3', 'job-b4', 'job-b5'].find((id) => !held.includes(id)) as string;
      assert.equal(await store.getJob(missing), undefined);
      assert.deepEqual(await store.listEvents('job', missing, 10), []);

      // The same key twice in one burst: one job, one hold.
      await mint(store, ACCOUNTS.wallet('rich'), 10 * HELD);
      const keyed = await Promise.all([submitPaid(store, 'job-k1', T0 + 2, { key: 'same', buyerId: 'rich' }), submitPaid(store, 'job-k2', T0 + 2, { key: 'same', buyerId: 'rich' })]);
      assert.equal(keyed.filter((r) => r.created).length, 1);
      assert.equal(keyed[0]?.job.id, keyed[1]?.job.id);
      assert.equal(await bal(store, ACCOUNTS.wallet('rich')), 9 * HELD);

      // Starts and results together; one start of an attempt that is not this node's is refused alone.
      for (let i = 0; i < held.length; i++) await stakedNode(store, `n${i}`);
      const placed = held.map((id, i) => pricedPlacement(id, `att-${i}`, `n${i}`, T0 + 900_000));
      assert.equal((await store.assign(placed, T0 + 3)).length, held.length);
      const starts = await Promise.allSettled([...held.map((_, i) => store.startAttempt(`att-${i}`, `n${i}`, T0 + 1_000)), store.startAttempt('att-0', 'n1', T0 + 1_000)]);
      assert.equal(starts.filter((r) => r.status === 'fulfilled').length, held.length);
      code('ATTEMPT_NOT_FOUND')((starts.at(-1) as PromiseRejectedResult).reason);
      // Results arriving together (grouped on SQLite); one of an attempt that is not this node's is refused alone.
      const settled = await Promise.allSettled([
        store.finishAttempt(result('att-0', 'n1', T0 + 61_000), decide),
        ...held.map((_, i) => store.finishAttempt(result(`att-${i}`, `n${i}`, T0 + 61_000), decide)),
      ]);
      code('ATTEMPT_NOT_FOUND')((settled[0] as PromiseRejectedResult).reason);
      const ends = settled.slice(1).map((r) => {
        assert.equal(r.status, 'fulfilled', String((r as PromiseRejectedResult).reason));
        return (r as PromiseFulfilledResult<Awaited<ReturnType<Store['finishAttempt']>>>).value;
      });
      assert.deepEqual(
        ends.map((e) => [e.job.state, e.duplicate]),
        held.map(() => ['succeeded', false]),
      );
      for (const id of held) assert.equal(await bal(store, ACCOUNTS.escrow(id)), 0);
      await assertBalanced(store);
    }));
}
