import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '@gpux/core';
import type { LogEntry } from '@gpux/protocol';
import { silentLogger } from '../src/index.js';
import { LogShipper, TRUNCATED_MESSAGE } from '../src/loop/log-shipper.js';

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
