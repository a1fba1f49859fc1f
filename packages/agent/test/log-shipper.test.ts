import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '@gpux/core';
import { LOG_ENTRY_MAX_BYTES, LogEntry } from '@gpux/protocol';
import { CoordinatorApiError } from '../src/coordinator-client.js';
import { silentLogger } from '../src/index.js';
import { isGone } from '../src/loop/attempt-runner.js';
import { LogShipper, splitUtf8, TRUNCATED_MESSAGE } from '../src/loop/log-shipper.js';

function shipper(opts: { fail?: () => boolean; maxBytes?: number; flushBytes?: number }) {
  const sent: LogEntry[][] = [];
  let cancels = 0;
  const s = new LogShipper({
    send: async (entries) => {
      if (opts.fail?.()) throw new Error('down');
      sent.push(entries);
      return { accepted: entries.length, cancel: false };
    },
    onCancel: () => cancels++,
    isGone: () => false,
    clock: systemClock,
    logger: silentLogger,
    maxBytes: opts.maxBytes,
    flushBytes: opts.flushBytes,
  });
  return { s, sent, cancels: () => cancels };
}

test('seq from 0, order kept, all delivered on close', async () => {
  const { s, sent } = shipper({});
  s.push('stdout', 'a');
  s.push('stderr', 'b');
  s.push('stdout', 'c');
  await s.close(Date.now() + 5000);
  const all = sent.flat();
  assert.deepEqual(
    all.map((e) => [e.seq, e.stream, e.data]),
    [
      [0, 'stdout', 'a'],
      [1, 'stderr', 'b'],
      [2, 'stdout', 'c'],
    ],
  );
});

test('failed batches are retried with the same seqs', async () => {
  let failures = 2;
  const { s, sent } = shipper({ fail: () => failures-- > 0 });
  s.push('stdout', 'x');
  await s.flush();
  assert.equal(sent.length, 0);
  await s.close(Date.now() + 10_000);
  assert.deepEqual(sent.flat().map((e) => e.seq), [0]);
});

test('capped per attempt: one "[logs truncated]" system entry, then nothing', async () => {
  const { s, sent } = shipper({ maxBytes: 10 });
  s.push('stdout', '12345');
  s.push('stdout', '67890');
  s.push('stdout', 'over');
  s.push('stdout', 'more');
  await s.close(Date.now() + 5000);
  assert.deepEqual(
    sent.flat().map((e) => [e.seq, e.stream, e.data]),
    [
      [0, 'stdout', '12345'],
      [1, 'stdout', '67890'],
      [2, 'system', `${TRUNCATED_MESSAGE}\n`],
    ],
  );
  assert.deepEqual(s.metrics, { logBytes: 10, logsTruncated: true });
});

test('flushes on size without waiting for the timer', async () => {
  const { s, sent } = shipper({ flushBytes: 4 });
  s.push('stdout', 'abcd');
  await s.flush();
  assert.equal(sent.flat().length, 1);
  await s.close(Date.now() + 1000);
});

test('output longer than the protocol entry limit is split into entries of at most 64 KiB, never inside a character', async () => {
  const { s, sent } = shipper({ maxBytes: 1 << 30, flushBytes: 1 << 30 });
  const text = `${'a'.repeat(70_000)}${'€'.repeat(30_000)}😀end`;
  s.push('stdout', text);
  await s.close(Date.now() + 5000);
  const all = sent.flat();
  assert.ok(all.length >= 3, `${all.length} entries`);
  for (const e of all) assert.ok(Buffer.byteLength(e.data) <= LOG_ENTRY_MAX_BYTES && LogEntry.safeParse(e).success, `${Buffer.byteLength(e.data)} bytes`);
  assert.equal(all.map((e) => e.data).join(''), text);
  assert.deepEqual(
    all.map((e) => e.seq),
    all.map((_, i) => i),
  );
  assert.deepEqual(splitUtf8('😀😀', 4), ['😀', '😀']);
  assert.deepEqual(splitUtf8('short'), ['short']);
});

test('the coordinator says the budget is spent (truncated): the shipper stops sending', async () => {
  const sent: LogEntry[][] = [];
  const s = new LogShipper({
    send: async (entries) => {
      sent.push(entries);
      return { accepted: 0, cancel: false, truncated: true };
    },
    onCancel: () => {},
    isGone: () => false,
    clock: systemClock,
    logger: silentLogger,
  });
  s.push('stdout', 'a');
  await s.flush();
  s.push('stdout', 'b');
  await s.close(Date.now() + 2000);
  assert.equal(sent.length, 1);
  assert.equal(s.metrics.logsTruncated, true);
});

test('a batch the coordinator refuses (400) is dropped, not retried forever; 410 stops the shipper', async () => {
  let calls = 0;
  const refuse = (status: number) =>
    new LogShipper({
      send: async () => {
        calls++;
        throw new CoordinatorApiError(status, status === 410 ? 'GONE' : 'REQUEST_INVALID', 'no');
      },
      onCancel: () => {},
      isGone,
      clock: systemClock,
      logger: silentLogger,
    });
  const bad = refuse(400);
  bad.push('stdout', 'x');
  await bad.close(Date.now() + 5000);
  assert.equal(calls, 1);
  calls = 0;
  const gone = refuse(410);
  gone.push('stdout', 'x');
  await gone.flush();
  gone.push('stdout', 'y');
  await gone.close(Date.now() + 5000);
  assert.equal(calls, 1);
});
