/**
 * Conformance, history port: event histories (listEvents), the job history pages (node-reported events
 * never crowd out the job's own), job counts by state.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { transitionDecider } from '@gpux/core';
import type { LogEntry } from '@gpux/protocol';
import { assigned, type OpenStore, result, submit, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const _entry = (seq: number, data: string): LogEntry => ({ seq, stream: 'stdout', data, at: T0 + seq });
const NODE_TYPES = ['image.pull.started', 'image.pull.progress', 'image.pull.finished', 'image.pull.failed'];

export function historyTests(open: OpenStore): void {
  test('listFinishedRuns: succeeded runs in finish order after a cursor, with the spec view, paged by rows read', () =>
    withStore(open, async (store) => {
      for (const [i, ran] of [[1, 60_000], [2, 30_000], [3, 90_000]] as const) {
        const a = await assigned(store, `job-${i}`, `att-${i}`, 'node-1', T0, { spec: { name: 'train' } });
        await store.startAttempt(a.id, 'node-1', T0 + 10);
        await store.finishAttempt(result(a.id, 'node-1', T0 + 10 + ran, i === 2 ? { outcome: 'failed', exitCode: 1 } : {}), decide);
      }
      const page = await store.listFinishedRuns({ finishedAt: 0, attemptId: '' }, 10);
      assert.deepEqual(
        page.runs.map((r) => [r.attemptId, r.finishedAt - r.startedAt, r.buyerId, r.spec.name, r.spec.resources.gpu.count]),
        [
          ['att-1', 60_000, 'buyer-1', 'train', 0],
          ['att-3', 90_000, 'buyer-1', 'train', 0],
        ],
        'the failed run is not a run time',
      );
      assert.deepEqual(page.last, { finishedAt: T0 + 10 + 90_000, attemptId: 'att-3' });
      assert.equal(page.rows, 2);
      const next = await store.listFinishedRuns({ finishedAt: T0 + 10 + 60_000, attemptId: 'att-1' }, 1);
      assert.deepEqual(next.runs.map((r) => r.attemptId), ['att-3']);
      assert.deepEqual(await store.listFinishedRuns(page.last as { finishedAt: number; attemptId: string }, 10), { runs: [], last: null, rows: 0 });
    }));

  test('listEvents returns a job and a node history in order, with data, honouring the limit', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      await store.finishAttempt(result(a.id, 'node-1', T0 + 2), decide);
      const events = await store.listEvents('job', 'job-1', 100);
      assert.deepEqual(
        events.map((e) => e.type),
        ['job.submitted', 'job.assigned', 'attempt.started', 'attempt.finished', 'job.succeeded'],
      );
      for (const e of events) {
        assert.equal(e.subject, 'job');
        assert.equal(e.subjectId, 'job-1');
        assert.equal(typeof e.seq, 'number');
        assert.equal(typeof e.data, 'object');
      }
      for (let i = 1; i < events.length; i++) assert.ok((events[i]?.seq ?? 0) > (events[i - 1]?.seq ?? 0));
      assert.deepEqual(
        events.map((e) => e.at),
        [T0, T0, T0 + 1, T0 + 2, T0 + 2],
      );
      assert.equal(events[3]?.data.outcome, 'succeeded');
      assert.deepEqual(
        (await store.listEvents('job', 'job-1', 2)).map((e) => e.type),
        ['job.submitted', 'job.assigned'],
      );
      assert.deepEqual(
        (await store.listEvents('node', 'node-1', 10)).map((e) => e.type),
        ['node.registered'],
      );
      assert.deepEqual(await store.listEvents('node', 'job-1', 10), []);
      assert.deepEqual(await store.listEvents('job', 'nope', 10), []);
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

  test('listJobHistory: node-reported events never crowd out the job’s own; pages go back without gaps or repeats', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const junk = Array.from({ length: 100 }, (_, i) => ({ type: 'image.pull.progress', at: T0 + 2, data: { i } }));
      for (let i = 0; i < 3; i++) await store.writeAttemptEvents({ attemptId: a.id, events: junk, maxEvents: 1000, now: T0 + 2 });
      await store.finishAttempt(result(a.id, 'node-1', T0 + 20), decide);
      const all = await store.listEvents('job', 'job-1', 10_000);
      const own = all.filter((e) => !NODE_TYPES.includes(e.type));
      assert.ok(own.length >= 5, own.map((e) => e.type).join());

      const page = await store.listJobHistory('job-1', { limit: 50, nodeTypes: NODE_TYPES });
      assert.deepEqual(
        page.events.filter((e) => !NODE_TYPES.includes(e.type)).map((e) => e.seq),
        own.map((e) => e.seq),
        'every one of the job’s own events is on the first page',
      );
      assert.equal(page.events.filter((e) => NODE_TYPES.includes(e.type)).length, 50);
      assert.equal(page.nodeElided, 250);
      assert.equal(page.moreBefore, null);
      for (let i = 1; i < page.events.length; i++) assert.ok((page.events[i]?.seq ?? 0) > (page.events[i - 1]?.seq ?? 0), 'oldest first');
      assert.equal(page.events.at(-1)?.type, 'job.succeeded');

      // Small pages: walk back through the job's own events.
      const seen: number[] = [];
      let before: number | undefined;
      for (let n = 0; n < 100; n++) {
        const p = await store.listJobHistory('job-1', { limit: 2, nodeTypes: NODE_TYPES, ...(before !== undefined ? { before } : {}) });
        seen.unshift(...p.events.filter((e) => !NODE_TYPES.includes(e.type)).map((e) => e.seq));
        if (p.moreBefore === null) break;
        before = p.moreBefore;
      }
      assert.deepEqual(
        seen,
        own.map((e) => e.seq),
      );
      assert.deepEqual(await store.listJobHistory('job-nope', { limit: 10, nodeTypes: NODE_TYPES }), { events: [], moreBefore: null, nodeElided: 0 });
    }));
}
