/** Conformance: tokens, job submission (idempotency), reading and listing jobs, cancel requests, counts. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { JobRecord } from '@gpux/core';
import { assigned, code, eventTypes, type OpenStore, spec, submit, T0, withStore } from './fixtures.js';

export function jobTests(open: OpenStore): void {
  test('tokens: create, find by hash, count by role, duplicate hash rejected', () =>
    withStore(open, async (store) => {
      const buyer = { id: 'tok-1', hash: 'h'.repeat(64), role: 'buyer' as const, accountId: 'buyer-1', name: 'laptop', createdAt: T0 };
      await store.createToken(buyer);
      await store.createToken({ ...buyer, id: 'tok-2', hash: 'o'.repeat(64), role: 'operator', accountId: 'op-1' });
      assert.deepEqual(await store.findTokenByHash('h'.repeat(64)), buyer);
      assert.equal(await store.findTokenByHash('x'.repeat(64)), undefined);
      assert.equal(await store.countTokens(), 2);
      assert.equal(await store.countTokens('buyer'), 1);
      assert.equal(await store.countTokens('operator'), 1);
      await assert.rejects(store.createToken({ ...buyer, id: 'tok-3' }), code('CONFLICT'));
      assert.equal(await store.countTokens(), 2);
    }));

  test('getJobs reads many jobs in one call and ignores unknown ids', () =>
    withStore(open, async (store) => {
      for (const id of ['job-1', 'job-2', 'job-3']) await submit(store, id, T0);
      const got = await store.getJobs(['job-3', 'job-1', 'nope', 'job-1']);
      assert.deepEqual(got.map((j) => j.id).sort(), ['job-1', 'job-3']);
      assert.deepEqual(got.find((j) => j.id === 'job-1'), await store.getJob('job-1'));
      assert.deepEqual(await store.getJobs([]), []);
    }));

  test('submitJob inserts a queued job with its job.submitted event', () =>
    withStore(open, async (store) => {
      const { job, created } = await store.submitJob({
        id: 'job-1',
        buyerId: 'buyer-1',
        spec: spec({ name: 'hello', maxRetries: 2 }),
        idempotencyKey: null,
        now: T0,
      });
      assert.equal(created, true);
      const expected: JobRecord = {
        id: 'job-1',
        name: 'hello',
        buyerId: 'buyer-1',
        state: 'queued',
        spec: job.spec,
        attemptCount: 0,
        currentAttemptId: null,
        runAfter: null,
        exitCode: null,
        error: null,
        cancelRequested: false,
        createdAt: T0,
        updatedAt: T0,
        startedAt: null,
        finishedAt: null,
        idempotencyKey: null,
        avoidNodeIds: [],
        payment: null,
      };
      assert.deepEqual(job, expected);
      assert.equal(job.spec.maxRetries, 2);
      assert.deepEqual(await store.getJob('job-1'), expected);
      assert.equal(await store.getJob('nope'), undefined);
      const events = await store.listEvents('job', 'job-1', 10);
      assert.deepEqual(
        events.map((e) => [e.type, e.subject, e.subjectId, e.at]),
        [['job.submitted', 'job', 'job-1', T0]],
      );
    }));

  test('submitJob with an idempotency key: same buyer+key returns the same job and writes nothing; other buyers may reuse the key', () =>
    withStore(open, async (store) => {
      const first = await store.submitJob({ id: 'job-1', buyerId: 'b1', spec: spec(), idempotencyKey: 'k1', now: T0 });
      assert.equal(first.created, true);
      assert.equal(first.job.idempotencyKey, 'k1');
      const again = await store.submitJob({ id: 'job-2', buyerId: 'b1', spec: spec(), idempotencyKey: 'k1', now: T0 + 5 });
      assert.equal(again.created, false);
      assert.deepEqual(again.job, first.job);
      assert.equal(await store.getJob('job-2'), undefined);
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted']);
      assert.deepEqual(await store.listEvents('job', 'job-2', 10), []);
      const other = await submit(store, 'job-3', T0, { buyerId: 'b2', key: 'k1' });
      assert.equal(other.id, 'job-3');
      // No key: never deduplicated.
      await submit(store, 'job-4', T0, { buyerId: 'b1' });
      await submit(store, 'job-5', T0, { buyerId: 'b1' });
      assert.equal((await store.countJobsByState()).queued, 4);
    }));

  test('listJobs: newest first, filters by buyer and state, cursor pages without duplicates or gaps', () =>
    withStore(open, async (store) => {
      // Equal createdAt values exercise the id tie-break of the cursor.
      const times = [T0, T0 + 10, T0 + 10, T0 + 10, T0 + 20, T0 + 30, T0 + 30];
      for (const [i, at] of times.entries()) await submit(store, `job-${i}`, at, { buyerId: i % 2 === 0 ? 'b1' : 'b2' });
      await store.requestCancel('job-3', T0 + 40);
      const all = (await store.listJobs({ limit: 100 })).items.map((j) => j.id);
      assert.deepEqual(all, ['job-6', 'job-5', 'job-4', 'job-3', 'job-2', 'job-1', 'job-0']);
      for (const limit of [1, 2, 3, 7]) {
        const seen: string[] = [];
        let cursor: string | undefined;
        for (let pages = 0; pages < 20; pages++) {
          const page = await store.listJobs({ limit, ...(cursor ? { cursor } : {}) });
          assert.ok(page.items.length <= limit);
          seen.push(...page.items.map((j) => j.id));
          if (page.nextCursor === null) break;
          assert.equal(typeof page.nextCursor, 'string');
          cursor = page.nextCursor;
        }
        assert.deepEqual(seen, all, `limit ${limit}`);
      }
      const b1 = await store.listJobs({ buyerId: 'b1', limit: 2 });
      assert.deepEqual(
        b1.items.map((j) => j.id),
        ['job-6', 'job-4'],
      );
      assert.ok(b1.nextCursor);
      const b1rest = await store.listJobs({ buyerId: 'b1', limit: 5, cursor: b1.nextCursor });
      assert.deepEqual(
        b1rest.items.map((j) => j.id),
        ['job-2', 'job-0'],
      );
      assert.equal(b1rest.nextCursor, null);
      const cancelled = await store.listJobs({ states: ['cancelled'], limit: 10 });
      assert.deepEqual(
        cancelled.items.map((j) => j.id),
        ['job-3'],
      );
      const open2 = await store.listJobs({ buyerId: 'b2', states: ['queued', 'running'], limit: 10 });
      assert.deepEqual(
        open2.items.map((j) => j.id),
        ['job-5', 'job-1'],
      );
      await assert.rejects(store.listJobs({ limit: 2, cursor: 'not-a-cursor' }), code('REQUEST_INVALID'));
    }));

  test('requestCancel: queued -> cancelled at once; active -> cancel requested with its attempts; finished -> JOB_FINISHED', () =>
    withStore(open, async (store) => {
      await submit(store, 'job-q', T0);
      const q = await store.requestCancel('job-q', T0 + 1);
      assert.equal(q.job.state, 'cancelled');
      assert.equal(q.job.finishedAt, T0 + 1);
      assert.deepEqual(q.stopAttemptIds, []);
      assert.deepEqual(await eventTypes(store, 'job', 'job-q'), ['job.submitted', 'job.cancelled']);
      await assert.rejects(store.requestCancel('job-q', T0 + 2), code('JOB_FINISHED'));
      await assert.rejects(store.requestCancel('missing', T0 + 2), code('JOB_NOT_FOUND'));

      const a = await assigned(store, 'job-r', 'att-r', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const r = await store.requestCancel('job-r', T0 + 2);
      assert.equal(r.job.state, 'running');
      assert.equal(r.job.cancelRequested, true);
      assert.equal(r.job.finishedAt, null);
      assert.deepEqual(r.stopAttemptIds, ['att-r']);
      // Asking again returns the same answer and writes nothing new.
      const again = await store.requestCancel('job-r', T0 + 3);
      assert.deepEqual(again.stopAttemptIds, ['att-r']);
      assert.equal(again.job.cancelRequested, true);
      const types = await eventTypes(store, 'job', 'job-r');
      assert.equal(types.filter((t) => t === 'job.cancel_requested').length, 1);
      assert.equal((await store.getJob('job-r'))?.cancelRequested, true);

      const b = await assigned(store, 'job-a', 'att-a', 'node-1', T0);
      const ra = await store.requestCancel('job-a', T0 + 2);
      assert.equal(ra.job.state, 'assigned');
      assert.deepEqual(ra.stopAttemptIds, [b.id]);
    }));

  test('countJobsByState returns all six states, zeros included', () =>
    withStore(open, async (store) => {
      assert.deepEqual(await store.countJobsByState(), { queued: 0, assigned: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 });
      await submit(store, 'j1', T0);
      await submit(store, 'j2', T0);
      await store.requestCancel('j2', T0 + 1);
      await assigned(store, 'j3', 'a3', 'n1', T0);
      const a4 = await assigned(store, 'j4', 'a4', 'n1', T0);
      await store.startAttempt(a4.id, 'n1', T0 + 1);
      assert.deepEqual(await store.countJobsByState(), { queued: 1, assigned: 1, running: 1, succeeded: 0, failed: 0, cancelled: 1 });
    }));
}
