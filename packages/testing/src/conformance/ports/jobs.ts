/**
 * Conformance, jobs port (submission and reading): submitJob (idempotency, queued jobs per buyer with
 * NewJob.maxQueued), getJob/getJobs, listJobs (pages bounded by bytes), requestCancel, and the claims'
 * scheduling view of a spec (issue 10 item 7). The queue verbs are in jobs-queue.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, holdFor, type JobRecord, move, type Store } from '@gpux/core';
import { isInlineInput, type JobSpecInput } from '@gpux/protocol';
import { assigned, code, eventTypes, type OpenStore, placement, register, spec, submit, T0, withStore } from '../fixtures.js';

const CAP = 2_000_000;
const S: Partial<JobSpecInput> = { timeoutSeconds: 600, resources: { gpu: { count: 1 } } };
const HELD = holdFor(spec(S), CAP);

function paid(store: Store, id: string, now: number, max: number | undefined, over: { buyerId?: string; key?: string } = {}) {
  return store.submitJob({
    id,
    buyerId: over.buyerId ?? 'buyer-1',
    spec: spec(S),
    idempotencyKey: over.key ?? null,
    now,
    payment: { asset: 'usdc', capPerUnitHour: CAP, units: 1, held: HELD },
    ...(max === undefined ? {} : { maxQueued: max }),
  });
}

export function jobTests(open: OpenStore): void {
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

  test('submitJob with maxQueued: at the limit LIMIT_EXCEEDED, nothing written or held; resubmissions, other buyers and freed places go through', () =>
    withStore(open, async (store) => {
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet('buyer-1'), amount: 10 * HELD }]), at: T0, memo: 'funds' });
      await paid(store, 'job-1', T0 + 1, 3, { key: 'k1' });
      await paid(store, 'job-2', T0 + 2, 3);
      await paid(store, 'job-3', T0 + 3, 3);
      const before = await store.getBalance(ACCOUNTS.wallet('buyer-1'), 'usdc');
      await assert.rejects(paid(store, 'job-4', T0 + 4, 3), (err: unknown) => {
        code('LIMIT_EXCEEDED')(err);
        assert.match(String((err as Error).message), /3 of your jobs are queued; the most one buyer may have queued is 3/);
        return true;
      });
      assert.equal(await store.getJob('job-4'), undefined, 'nothing written');
      assert.deepEqual(await eventTypes(store, 'job', 'job-4'), []);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('buyer-1'), 'usdc'), before, 'nothing held');
      // A resubmission of a job already there is not a new job: it answers as before, limit or not.
      const again = await paid(store, 'job-1b', T0 + 5, 3, { key: 'k1' });
      assert.equal(again.created, false);
      assert.equal(again.job.id, 'job-1');
      // Another buyer has its own count; no maxQueued means no limit.
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet('buyer-2'), amount: HELD }]), at: T0, memo: 'funds' });
      assert.equal((await paid(store, 'job-x', T0 + 6, 3, { buyerId: 'buyer-2' })).created, true);
      assert.equal((await store.submitJob({ id: 'job-free', buyerId: 'buyer-1', spec: spec(), idempotencyKey: null, now: T0 + 7 })).created, true);
      // Jobs that leave the queue (cancelled, assigned) free their places.
      await store.requestCancel('job-free', T0 + 8);
      await store.requestCancel('job-2', T0 + 8);
      await register(store, 'node-1', T0);
      await store.assign([placement('job-1', 'att-1', 'node-1', T0 + 60_000)], T0 + 9);
      await paid(store, 'job-5', T0 + 10, 3);
      await paid(store, 'job-6', T0 + 11, 3);
      await assert.rejects(paid(store, 'job-7', T0 + 12, 3), code('LIMIT_EXCEEDED'));
    }));

  test('submitJob with maxQueued: concurrent submits of one buyer never pass the limit', () =>
    withStore(open, async (store) => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) => store.submitJob({ id: `job-${i}`, buyerId: 'buyer-1', spec: spec(), idempotencyKey: null, now: T0 + i, maxQueued: 5 })),
      );
      assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 5);
      for (const o of outcomes) if (o.status === 'rejected') code('LIMIT_EXCEEDED')(o.reason);
      assert.equal((await store.claimQueued(T0 + 100, 100)).length, 5);
    }));

  test('claims return the scheduling view of a spec; getJob returns it whole', () =>
    withStore(open, async (store) => {
      const full = spec({
        command: ['python', '-c', 'x'.repeat(5000)],
        args: ['--big', 'y'.repeat(5000)],
        env: { SECRET: 'z'.repeat(5000) },
        labels: { team: 'a' },
        inputs: [{ path: 'in.txt', content: 'w'.repeat(10_000) }],
        resources: { gpu: { count: 2, models: ['H100'] }, cpuCores: 4, memoryGb: 8 },
        constraints: { region: 'eu', nodeLabels: { zone: 'a' }, minTrustTier: 'open' },
        priority: 'high',
        nodes: 2,
        timeoutSeconds: 900,
        maxRetries: 1,
      });
      await store.submitJob({ id: 'job-big', buyerId: 'buyer-1', spec: full, idempotencyKey: null, now: T0 });
      for (const claimed of [(await store.claimQueued(T0 + 1, 10))[0], (await store.claimQueuedFair(T0 + 1, 10))[0]]) {
        assert.ok(claimed);
        const { command, args, env, inputs, labels, ...rest } = full;
        assert.deepEqual({ ...claimed.spec, command: undefined, args: undefined, env: undefined, inputs: undefined, labels: undefined }, {
          ...rest,
          command: undefined,
          args: undefined,
          env: undefined,
          inputs: undefined,
          labels: undefined,
        });
        assert.deepEqual([claimed.spec.command, claimed.spec.args, claimed.spec.env, claimed.spec.inputs, claimed.spec.labels], [[], [], {}, [], {}]);
        assert.equal(claimed.name, full.name);
        assert.equal(claimed.buyerId, 'buyer-1');
      }
      assert.deepEqual((await store.getJob('job-big'))?.spec, full);
    }));

  test('listJobs cuts a page of large specs by bytes, keeps at least one job, and pages on without gaps', () =>
    withStore(open, async (store) => {
      const big = 'x'.repeat(1000 * 1024);
      for (let i = 0; i < 10; i++) {
        await store.submitJob({ id: `job-big-${i}`, buyerId: 'buyer-1', spec: spec({ inputs: [{ path: 'in.txt', content: big }] }), idempotencyKey: null, now: T0 + i });
      }
      const first = await store.listJobs({ buyerId: 'buyer-1', limit: 500 });
      assert.ok(first.items.length >= 1 && first.items.length < 10, `a page holds ${first.items.length} jobs of 1 MiB`);
      assert.ok(first.nextCursor, 'the cut page says there is more');
      const firstInput = first.items[0]?.spec.inputs[0];
      assert.equal(firstInput && isInlineInput(firstInput) ? firstInput.content.length : -1, big.length, 'the jobs on the page are whole');
      const seen = [...first.items];
      let cursor: string | null = first.nextCursor;
      while (cursor) {
        const page: Awaited<ReturnType<Store['listJobs']>> = await store.listJobs({ buyerId: 'buyer-1', limit: 500, cursor });
        assert.ok(page.items.length >= 1);
        seen.push(...page.items);
        cursor = page.nextCursor;
      }
      assert.deepEqual(
        seen.map((j) => j.id),
        Array.from({ length: 10 }, (_, i) => `job-big-${9 - i}`),
      );
    }));
}
