/** Conformance of the Store itself: migrations are idempotent and data survives closing and reopening. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { transitionDecider } from '@gpux/core';
import { assigned, type OpenStore, register, result, submit, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

export function lifecycleTests(open: OpenStore): void {
  test('migrate() is idempotent', () =>
    withStore(open, async (store) => {
      await submit(store, 'job-1', T0);
      await store.migrate();
      await store.migrate();
      assert.equal((await store.getJob('job-1'))?.id, 'job-1');
    }));

  test('data survives closing and reopening the store', async (t) => {
    const h = await open();
    try {
      if (!h.reopen) {
        t.skip('the store under test offers no reopen()');
        return;
      }
      const store = h.store;
      await store.createToken({ id: 'tok-1', hash: 'h'.repeat(64), role: 'operator', accountId: 'op', name: 'admin', createdAt: T0 });
      await register(store, 'node-1', T0);
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.appendLogs('job-1', a.id, [{ seq: 0, stream: 'stdout', data: 'line', at: T0 }]);
      const outputs = [{ path: 'out.txt', size: 2, sha256: 'e'.repeat(64), content: 'aGk=' }];
      await store.finishAttempt(result(a.id, 'node-1', T0 + 5, { outputs }), decide);
      await submit(store, 'job-2', T0 + 6, { key: 'idem' });
      const before = {
        jobs: await store.listJobs({ limit: 10 }),
        attempt: await store.getAttempt(a.id),
        node: await store.getNode('node-1'),
        events: await store.listEvents('job', 'job-1', 100),
        logs: await store.readLogs('job-1', 0, 10),
        counts: await store.countJobsByState(),
      };
      await store.close();
      await store.close(); // closing twice is harmless

      const again = await h.reopen();
      assert.deepEqual(await again.listJobs({ limit: 10 }), before.jobs);
      assert.deepEqual(await again.getAttempt(a.id), before.attempt);
      assert.deepEqual(await again.getNode('node-1'), before.node);
      assert.deepEqual(await again.listEvents('job', 'job-1', 100), before.events);
      assert.deepEqual(await again.readLogs('job-1', 0, 10), before.logs);
      assert.deepEqual(await again.countJobsByState(), before.counts);
      assert.deepEqual(await again.getOutputs(a.id), outputs);
      assert.equal((await again.findTokenByHash('h'.repeat(64)))?.id, 'tok-1');
      const dup = await again.submitJob({ id: 'job-3', buyerId: 'buyer-1', spec: (await again.getJob('job-2'))!.spec, idempotencyKey: 'idem', now: T0 + 7 });
      assert.equal(dup.created, false);
      assert.equal(dup.job.id, 'job-2');
      // New rows continue after the old ones (sequences survive).
      await again.appendLogs('job-1', a.id, [{ seq: 1, stream: 'stdout', data: 'more', at: T0 + 8 }]);
      const logs = await again.readLogs('job-1', before.logs[0]?.cursor ?? 0, 10);
      assert.deepEqual(
        logs.map((l) => l.data),
        ['more'],
      );
    } finally {
      await h.cleanup();
    }
  });
}
