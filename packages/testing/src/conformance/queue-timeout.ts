/**
 * Conformance: queue timeouts (issue 10 item 4). A queued job past its deadline (submission + its spec's
 * queueTimeoutSeconds, else the default) fails with the caller's reason, its escrow returns, events
 * job.queue_timeout and job.failed are written; jobs not yet due, assigned or cancelled are untouched; a
 * job requeued after a lost attempt gets a fresh deadline; calls are bounded by `limit` and idempotent.
 * The ledger balances after each scenario.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, holdFor, type JobPaymentRecord, type JobRecord, move, type Store, transitionDecider } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { eventTypes, type OpenStore, placement, register, spec, T0, withStore } from './fixtures.js';

const BUYER = 'buyer-q';
const CAP = 2_000_000;
const DEFAULT_S = 100;

function paymentOf(over: Partial<JobSpecInput>): JobPaymentRecord {
  const s = spec(over);
  return { asset: 'usdc', capPerUnitHour: CAP, units: Math.max(1, s.resources.gpu.count), held: holdFor(s, CAP) };
}

async function submitPaid(store: Store, id: string, now: number, over: Partial<JobSpecInput> = {}): Promise<JobRecord> {
  const s = { timeoutSeconds: 600, resources: { gpu: { count: 1 } }, ...over };
  return (await store.submitJob({ id, buyerId: BUYER, spec: spec(s), idempotencyKey: null, now, payment: paymentOf(s) })).job;
}

function timeouts(store: Store, now: number, limit = 100) {
  return store.failQueueTimeouts({
    now,
    defaultTimeoutSeconds: DEFAULT_S,
    limit,
    reason: (_job, waited) => `waited ${waited} s in the queue: no node fits it`,
  });
}

async function assertBalanced(store: Store): Promise<void> {
  for (const t of await store.ledgerTotals()) {
    assert.equal(t.inside, t.minted, `${t.asset}: money inside equals money minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

export function queueTimeoutTests(open: OpenStore): void {
  test('a due queued job fails with the reason, its escrow returns, and the events say why', () =>
    withStore(open, async (store) => {
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet(BUYER), amount: 100_000_000 }]), at: T0, memo: 'funds' });
      const due = await submitPaid(store, 'job-due', T0);
      const long = await submitPaid(store, 'job-long', T0, { queueTimeoutSeconds: 10_000 });
      const short = await submitPaid(store, 'job-short', T0 + 1000, { queueTimeoutSeconds: 5 });
      await submitPaid(store, 'job-cancel', T0);
      await store.requestCancel('job-cancel', T0 + 1);
      assert.ok(due.payment && long.payment && short.payment);

      assert.deepEqual(await timeouts(store, T0 + 5_000), [], 'nothing due yet (job-short is due at T0 + 6 s)');
      const first = await timeouts(store, T0 + 6_000);
      assert.deepEqual(
        first.map((j) => j.id),
        ['job-short'],
      );
      const failed = await timeouts(store, T0 + DEFAULT_S * 1000);
      assert.deepEqual(
        failed.map((j) => j.id),
        ['job-due'],
      );
      const job = await store.getJob('job-due');
      assert.equal(job?.state, 'failed');
      assert.equal(job?.error, `waited ${DEFAULT_S} s in the queue: no node fits it`);
      assert.equal(job?.finishedAt, T0 + DEFAULT_S * 1000);
      assert.equal(await store.getBalance(ACCOUNTS.escrow('job-due'), 'usdc'), 0, 'the escrow is empty');
      const types = await eventTypes(store, 'job', 'job-due');
      assert.ok(types.includes('job.queue_timeout') && types.includes('job.failed') && types.includes('job.escrow_released'), types.join(','));
      assert.equal((await store.getJob('job-long'))?.state, 'queued', 'its own longer timeout holds');
      assert.equal((await store.getJob('job-cancel'))?.state, 'cancelled');
      assert.equal(
        await store.getBalance(ACCOUNTS.wallet(BUYER), 'usdc'),
        100_000_000 - long.payment.held,
        'every hold but the waiting job\'s is back in the wallet',
      );
      assert.deepEqual(await timeouts(store, T0 + DEFAULT_S * 1000 + 1), [], 'a failed job is not failed twice');
      await assertBalanced(store);
    }));

  test('a job requeued after a lost attempt gets a fresh deadline; assigned jobs never time out', () =>
    withStore(open, async (store) => {
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet(BUYER), amount: 100_000_000 }]), at: T0, memo: 'funds' });
      await register(store, 'node-q', T0);
      await submitPaid(store, 'job-r', T0);
      await submitPaid(store, 'job-a', T0);
      assert.deepEqual(await timeouts(store, T0 + 1), [], 'deadlines set, nothing due');
      assert.equal((await store.assign([placement('job-r', 'att-r', 'node-q', T0 + 20_000)], T0 + 10_000)).length, 1);
      assert.equal((await store.assign([placement('job-a', 'att-a', 'node-q', T0 + 10_000_000)], T0 + 10_000)).length, 1);
      const lost = await store.expireLeases(T0 + 50_000, transitionDecider({ baseBackoffMs: 1000, maxBackoffMs: 1000 }), 10);
      assert.deepEqual(
        lost.map((l) => [l.jobId, l.jobState]),
        [['job-r', 'queued']],
      );
      // Past the first deadline (T0 + 100 s) but within DEFAULT_S of the requeue: it waits on.
      assert.deepEqual(await timeouts(store, T0 + 120_000), []);
      assert.equal((await store.getJob('job-r'))?.state, 'queued');
      assert.equal((await store.getJob('job-a'))?.state, 'assigned');
      const failed = await timeouts(store, T0 + 51_000 + DEFAULT_S * 1000);
      assert.deepEqual(
        failed.map((j) => j.id),
        ['job-r'],
      );
      assert.equal((await store.getJob('job-a'))?.state, 'assigned');
      await assertBalanced(store);
    }));

  test('at most `limit` jobs per call; the rest fail on the next calls', () =>
    withStore(open, async (store) => {
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet(BUYER), amount: 1_000_000_000 }]), at: T0, memo: 'funds' });
      for (let i = 0; i < 7; i++) await submitPaid(store, `job-${i}`, T0 + i);
      const now = T0 + DEFAULT_S * 1000 + 10;
      const a = await timeouts(store, now, 3);
      const b = await timeouts(store, now, 3);
      const c = await timeouts(store, now, 3);
      assert.deepEqual(
        [a.length, b.length, c.length],
        [3, 3, 1],
      );
      assert.deepEqual(await timeouts(store, now, 3), []);
      assert.equal(await store.getBalance(ACCOUNTS.wallet(BUYER), 'usdc'), 1_000_000_000, 'every hold returned');
      await assertBalanced(store);
    }));
}
