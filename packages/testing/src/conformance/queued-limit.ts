/**
 * Conformance: queued jobs per buyer (NewJob.maxQueued) and the claims' scheduling view (issue 10 item 7).
 * A buyer at the limit gets LIMIT_EXCEEDED with nothing written or held; the claims return each spec less
 * its payload (command, args, env, inputs, labels), while getJob returns it whole.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, holdFor, move, type Store } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { code, eventTypes, type OpenStore, placement, register, spec, T0, withStore } from './fixtures.js';

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

export function queuedLimitTests(open: OpenStore): void {
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
}

/** listJobs stops a page near 8 MiB of stored spec, so a page of jobs with 1 MiB inputs each stays bounded. */
export function listPageBytesTests(open: OpenStore): void {
  test('listJobs cuts a page of large specs by bytes, keeps at least one job, and pages on without gaps', () =>
    withStore(open, async (store) => {
      const big = 'x'.repeat(1000 * 1024);
      for (let i = 0; i < 10; i++) {
        await store.submitJob({ id: `job-big-${i}`, buyerId: 'buyer-1', spec: spec({ inputs: [{ path: 'in.txt', content: big }] }), idempotencyKey: null, now: T0 + i });
      }
      const first = await store.listJobs({ buyerId: 'buyer-1', limit: 500 });
      assert.ok(first.items.length >= 1 && first.items.length < 10, `a page holds ${first.items.length} jobs of 1 MiB`);
      assert.ok(first.nextCursor, 'the cut page says there is more');
      assert.equal(first.items[0]?.spec.inputs[0]?.content.length, big.length, 'the jobs on the page are whole');
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
