/**
 * Conformance, jobs port (the queue): claimQueued (order, runAfter, cancel requests), the fair-share claim
 * and queue standing, assign (attempts, skips, races, gangs written together), and queue timeouts (issue 10
 * item 4: a queued job past its deadline fails with the caller's reason, its escrow returns, events
 * job.queue_timeout and job.failed; a requeued job gets a fresh deadline; calls bounded by `limit`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, type AttemptRecord, fairQueuePosition, holdFor, type JobPaymentRecord, type JobRecord, move, type Store, transitionDecider } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { assigned, eventTypes, gang, type OpenStore, placement, register, result, spec, submit, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
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

export function jobQueueTests(open: OpenStore): void {
  test('claimQueued: oldest first, respects limit and runAfter, skips non-queued and cancel-requested jobs', () =>
    withStore(open, async (store) => {
      await submit(store, 'job-c', T0 + 3);
      await submit(store, 'job-a', T0 + 1);
      await submit(store, 'job-b', T0 + 2);
      await submit(store, 'job-d', T0 + 4);
      assert.deepEqual(
        (await store.claimQueued(T0 + 10, 10)).map((j) => j.id),
        ['job-a', 'job-b', 'job-c', 'job-d'],
      );
      assert.deepEqual(
        (await store.claimQueued(T0 + 10, 2)).map((j) => j.id),
        ['job-a', 'job-b'],
      );
      // job-b fails for infrastructure reasons: requeued with backoff (runAfter in the future).
      const a = await assigned(store, 'job-b', 'att-b', 'node-1', T0 + 10);
      const { job: requeued } = await store.finishAttempt(
        result(a.id, 'node-1', T0 + 20, { outcome: 'failed', exitCode: null, error: 'executor failed: image pull' }),
        decide,
      );
      assert.equal(requeued.state, 'queued');
      const runAfter = requeued.runAfter as number;
      assert.ok(runAfter > T0 + 20);
      assert.deepEqual(
        (await store.claimQueued(runAfter - 1, 10)).map((j) => j.id),
        ['job-a', 'job-c', 'job-d'],
      );
      assert.deepEqual(
        (await store.claimQueued(runAfter, 10)).map((j) => j.id),
        ['job-a', 'job-b', 'job-c', 'job-d'],
      );
      // A queued job carrying a cancel request (a decider may requeue one) is never claimed nor assigned.
      const c = await assigned(store, 'job-c', 'att-c', 'node-1', T0 + 30);
      await store.requestCancel('job-c', T0 + 31);
      const requeueAnyway = () => ({ state: 'queued' as const, runAfter: null, error: 'requeued', exitCode: null, avoidNode: false });
      const fin = await store.finishAttempt(result(c.id, 'node-1', T0 + 32, { outcome: 'failed', exitCode: null }), requeueAnyway);
      assert.equal(fin.job.state, 'queued');
      assert.equal(fin.job.cancelRequested, true);
      assert.deepEqual(
        (await store.claimQueued(runAfter, 10)).map((j) => j.id),
        ['job-a', 'job-b', 'job-d'],
      );
      assert.deepEqual(await store.assign([placement('job-c', 'att-c2', 'node-1', T0 + 60_000)], T0 + 33), []);
      assert.equal((await store.claimQueued(T0, 0)).length, 0);
    }));

  test('assign writes attempts with leases, moves jobs to assigned, and skips jobs no longer queued', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0);
      for (const id of ['job-1', 'job-2', 'job-3']) await submit(store, id, T0);
      await store.requestCancel('job-3', T0 + 1);
      const out = await store.assign(
        [
          placement('job-2', 'att-2', 'node-2', T0 + 30_000, [0]),
          placement('job-1', 'att-1', 'node-1', T0 + 30_000, [0]),
          placement('job-3', 'att-3', 'node-1', T0 + 30_000, []),
          placement('missing', 'att-x', 'node-1', T0 + 30_000, []),
        ],
        T0 + 2,
      );
      const expected1: AttemptRecord = {
        id: 'att-1',
        jobId: 'job-1',
        nodeId: 'node-1',
        state: 'assigned',
        gpuIndices: [0],
        exitCode: null,
        error: null,
        outputDigest: null,
        metrics: null,
        leaseExpiresAt: T0 + 30_000,
        createdAt: T0 + 2,
        startedAt: null,
        finishedAt: null,
        price: null,
        settlement: { charged: 0, fee: 0, settledMs: 0 },
      };
      assert.deepEqual(
        out.map((a) => a.id),
        ['att-2', 'att-1'],
      );
      assert.deepEqual(
        out.find((a) => a.id === 'att-1'),
        expected1,
      );
      assert.deepEqual(await store.getAttempt('att-1'), expected1);
      assert.equal(await store.getAttempt('att-3'), undefined);
      assert.equal(await store.getAttempt('att-x'), undefined);
      const job1 = await store.getJob('job-1');
      assert.equal(job1?.state, 'assigned');
      assert.equal(job1?.attemptCount, 1);
      assert.equal(job1?.currentAttemptId, 'att-1');
      assert.equal(job1?.updatedAt, T0 + 2);
      assert.equal((await store.getJob('job-3'))?.state, 'cancelled');
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.assigned']);
      const ev = (await store.listEvents('job', 'job-1', 10))[1];
      assert.equal(ev?.data.attemptId, 'att-1');
      assert.equal(ev?.data.nodeId, 'node-1');
      // Already assigned: a second placement for the same job is skipped.
      assert.deepEqual(await store.assign([placement('job-1', 'att-1b', 'node-2', T0 + 30_000)], T0 + 3), []);
      assert.deepEqual(
        (await store.listAttempts('job-1')).map((a) => a.id),
        ['att-1'],
      );
      assert.deepEqual(
        (await store.listActiveAttempts('node-1')).map((a) => a.id),
        ['att-1'],
      );
      assert.deepEqual((await store.listActiveAttempts()).map((a) => a.id).sort(), ['att-1', 'att-2']);
      assert.deepEqual(await store.listActiveAttempts('node-9'), []);
      assert.deepEqual(await store.assign([], T0 + 4), []);
    }));

  test('assign racing itself on the same jobs never writes two attempts for one job', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      const ids = Array.from({ length: 20 }, (_, i) => `job-${String(i).padStart(2, '0')}`);
      for (const id of ids) await submit(store, id, T0);
      const pass = (tag: string) => store.assign(ids.map((id) => placement(id, `${id}-${tag}`, 'node-1', T0 + 30_000, [])), T0 + 1);
      const [x, y] = await Promise.all([pass('x'), pass('y')]);
      assert.equal(x.length + y.length, ids.length);
      for (const id of ids) assert.equal((await store.listAttempts(id)).length, 1, id);
    }));

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
      assert.equal((await store.assign([placement('job-a', 'att-a', 'node-q', T0 + 10_000_000, [1])], T0 + 10_000)).length, 1);
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
