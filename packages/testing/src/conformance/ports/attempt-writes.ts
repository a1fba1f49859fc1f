/**
 * Conformance, attempts port (node writes under budgets, issue 10 items 5, 6): writeAttemptLogs /
 * writeAttemptEvents (budget, marker, gone, concurrency) and byte-bounded readLogs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { transitionDecider } from '@gpux/core';
import type { LogEntry } from '@gpux/protocol';
import { assigned, type OpenStore, result, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const MARKER = 2 ** 40 + 1;
const entry = (seq: number, data: string): LogEntry => ({ seq, stream: 'stdout', data, at: T0 + seq });

export function attemptWriteTests(open: OpenStore): void {
  test('writeAttemptLogs: within the budget, repeats not counted; past it one marker, counts kept, nothing more stored', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      const w = (entries: LogEntry[]) => store.writeAttemptLogs({ attemptId: a.id, entries, maxBytes: 10, maxEntries: 100, markerSeq: MARKER, now: T0 + 50 });
      assert.deepEqual(await w([entry(0, 'abcd'), entry(1, 'efgh')]), { status: 'ok', accepted: 2, dropped: 0, truncated: false });
      assert.deepEqual(await w([entry(1, 'efgh')]), { status: 'ok', accepted: 0, dropped: 0, truncated: false }, 'a retried entry is not counted twice');
      const over = await w([entry(2, 'ij'), entry(3, 'klm'), entry(4, 'n')]);
      assert.deepEqual(over, { status: 'ok', accepted: 1, dropped: 2, truncated: true }, 'ij fits (10 bytes), klm does not, n comes after it');
      assert.deepEqual(await w([entry(5, 'x')]), { status: 'ok', accepted: 0, dropped: 1, truncated: true });
      const logs = await store.readLogs('job-1', -1, 100);
      assert.deepEqual(
        logs.map((l) => [l.seq, l.data]),
        [
          [0, 'abcd'],
          [1, 'efgh'],
          [2, 'ij'],
          [MARKER, logs.at(-1)?.data],
        ],
      );
      const marker = logs.at(-1);
      assert.equal(marker?.stream, 'system');
      assert.match(marker?.data ?? '', /^\[gpux\] log limit of 10 bytes or 100 entries per attempt reached; 5 bytes in 3 entries dropped/);
      const stored = logs.slice(0, -1).reduce((n, l) => n + Buffer.byteLength(l.data), 0);
      assert.ok(stored <= 10, `${stored} bytes stored`);
    }));

  test('writeAttemptLogs: the entry budget, and an ended or unknown attempt stores nothing', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      const w = (attemptId: string, entries: LogEntry[]) => store.writeAttemptLogs({ attemptId, entries, maxBytes: 1 << 20, maxEntries: 2, markerSeq: MARKER, now: T0 });
      assert.equal((await w(a.id, [entry(0, 'a'), entry(1, 'b'), entry(2, 'c')])).dropped, 1);
      await store.finishAttempt(result(a.id, 'node-1', T0 + 10), decide);
      assert.deepEqual(await w(a.id, [entry(9, 'late')]), { status: 'gone', accepted: 0, dropped: 0, truncated: true });
      assert.equal((await w('att-nope', [entry(0, 'x')])).status, 'missing');
      assert.deepEqual(
        (await store.readLogs('job-1', -1, 100)).map((l) => l.seq),
        [0, 1, MARKER],
      );
    }));

  test('writeAttemptLogs: concurrent batches cannot both pass the budget', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      const batches = Array.from({ length: 8 }, (_, b) => Array.from({ length: 10 }, (_, i) => entry(b * 10 + i, 'x'.repeat(100))));
      const results = await Promise.all(batches.map((entries) => store.writeAttemptLogs({ attemptId: a.id, entries, maxBytes: 2500, maxEntries: 1000, markerSeq: MARKER, now: T0 })));
      assert.equal(
        results.reduce((n, r) => n + r.accepted, 0),
        25,
      );
      const logs = await store.readLogs('job-1', -1, 1000);
      assert.equal(logs.filter((l) => l.seq === MARKER).length, 1, 'one marker');
      assert.equal(logs.filter((l) => l.seq !== MARKER).reduce((n, l) => n + l.data.length, 0), 2500);
    }));

  test('readLogs with maxBytes: pages stop at the byte cap, always hold one entry, and page through everything', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.appendLogs('job-1', a.id, Array.from({ length: 10 }, (_, i) => entry(i, String(i).repeat(300))));
      const first = await store.readLogs('job-1', -1, 100, 1000);
      assert.equal(first.length, 3, '3 × 300 bytes fit in 1000');
      assert.equal((await store.readLogs('job-1', -1, 100, 10)).length, 1, 'one entry even when it alone passes the cap');
      const seen: string[] = [];
      let after = -1;
      for (;;) {
        const page = await store.readLogs('job-1', after, 100, 1000);
        if (page.length === 0) break;
        assert.ok(page.reduce((n, l) => n + l.data.length, 0) <= 1000);
        seen.push(...page.map((l) => l.data[0] ?? ''));
        after = page.at(-1)?.cursor ?? after;
      }
      assert.deepEqual(seen, ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    }));

  test('writeAttemptEvents: budget with one attempt.events_dropped event; an ended attempt takes none', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const ev = (n: number) => Array.from({ length: n }, (_, i) => ({ type: 'image.pull.progress', at: T0 + 2 + i, data: { i } }));
      assert.deepEqual(await store.writeAttemptEvents({ attemptId: a.id, events: ev(3), maxEvents: 5, now: T0 + 10 }), { status: 'ok', accepted: 3, dropped: 0, truncated: false });
      assert.deepEqual(await store.writeAttemptEvents({ attemptId: a.id, events: ev(4), maxEvents: 5, now: T0 + 11 }), { status: 'ok', accepted: 2, dropped: 2, truncated: true });
      assert.deepEqual(await store.writeAttemptEvents({ attemptId: a.id, events: ev(1), maxEvents: 5, now: T0 + 12 }), { status: 'ok', accepted: 0, dropped: 1, truncated: true });
      const history = await store.listEvents('job', 'job-1', 100);
      assert.equal(history.filter((e) => e.type === 'image.pull.progress').length, 5);
      assert.deepEqual(
        history.filter((e) => e.type === 'attempt.events_dropped').map((e) => e.data),
        [{ attemptId: a.id, limit: 5 }],
      );
      await store.finishAttempt(result(a.id, 'node-1', T0 + 20), decide);
      assert.equal((await store.writeAttemptEvents({ attemptId: a.id, events: ev(1), maxEvents: 5, now: T0 + 21 })).status, 'gone');
      assert.equal((await store.writeAttemptEvents({ attemptId: 'att-nope', events: ev(1), maxEvents: 5, now: T0 + 21 })).status, 'missing');
    }));
}
