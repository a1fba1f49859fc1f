/** Conformance: claimQueued (order, runAfter, cancel requests), assign (attempts, skips), startAttempt. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type AttemptRecord, transitionDecider } from '@gpux/core';
import { assigned, code, eventTypes, type OpenStore, placement, register, result, submit, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

export function queueTests(open: OpenStore): void {
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

  test('startAttempt: assigned -> running (job too), idempotent, wrong node or unknown attempt rejected, ended attempt conflicts', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await register(store, 'node-2', T0);
      await assert.rejects(store.startAttempt(a.id, 'node-2', T0 + 1), code('ATTEMPT_NOT_FOUND'));
      await assert.rejects(store.startAttempt('att-missing', 'node-1', T0 + 1), code('ATTEMPT_NOT_FOUND'));
      const s1 = await store.startAttempt(a.id, 'node-1', T0 + 5);
      assert.equal(s1.attempt.state, 'running');
      assert.equal(s1.attempt.startedAt, T0 + 5);
      assert.equal(s1.job.state, 'running');
      assert.equal(s1.job.startedAt, T0 + 5);
      assert.equal(s1.job.cancelRequested, false);
      const s2 = await store.startAttempt(a.id, 'node-1', T0 + 9);
      assert.equal(s2.attempt.startedAt, T0 + 5);
      assert.equal(s2.job.state, 'running');
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.assigned', 'attempt.started']);
      await store.requestCancel('job-1', T0 + 10);
      assert.equal((await store.startAttempt(a.id, 'node-1', T0 + 11)).job.cancelRequested, true);
      await store.finishAttempt(result(a.id, 'node-1', T0 + 12, { outcome: 'cancelled', exitCode: null }), decide);
      await assert.rejects(store.startAttempt(a.id, 'node-1', T0 + 13), code('CONFLICT'));
    }));
}
