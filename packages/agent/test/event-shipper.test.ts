/** EventShipper: job events in order, best effort (a batch that keeps failing is dropped, never blocks the attempt). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { systemClock } from '@gpux/core';
import type { AttemptEvent } from '@gpux/protocol';
import { silentLogger } from '../src/index.js';
import { EventShipper } from '../src/loop/event-shipper.js';

function shipper(fail: () => 'down' | 'gone' | null) {
  const sent: AttemptEvent[][] = [];
  let calls = 0;
  const s = new EventShipper({
    send: async (events) => {
      calls++;
      const f = fail();
      if (f) throw new Error(f);
      sent.push(events);
      return { accepted: events.length };
    },
    isGone: (e) => (e as Error).message === 'gone',
    clock: systemClock,
    logger: silentLogger,
    retryIntervalMs: 20,
  });
  return { s, sent, calls: () => calls };
}

test('events arrive in order, each with its time', async () => {
  const { s, sent } = shipper(() => null);
  s.push('image.pull.started', { image: 'a' });
  s.push('image.pull.progress', { layers: 1 });
  s.push('image.pull.finished', { image: 'a' });
  await s.close(Date.now() + 5000);
  const all = sent.flat();
  assert.deepEqual(
    all.map((e) => e.type),
    ['image.pull.started', 'image.pull.progress', 'image.pull.finished'],
  );
  for (const e of all) assert.ok(Number.isInteger(e.at));
});

test('an unreachable coordinator: a few tries, then the events are dropped and close() returns', async () => {
  const { s, sent, calls } = shipper(() => 'down');
  s.push('image.pull.started', { image: 'a' });
  await s.close(Date.now() + 30_000);
  assert.equal(sent.length, 0);
  assert.equal(calls(), 3);
});

test('a gone attempt stops shipping', async () => {
  const { s, calls } = shipper(() => 'gone');
  s.push('image.pull.started', { image: 'a' });
  await s.close(Date.now() + 5000);
  s.push('image.pull.finished', { image: 'a' });
  await s.close(Date.now() + 5000);
  assert.equal(calls(), 1);
});

test('the coordinator says the event budget is spent (truncated): the shipper stops sending', async () => {
  const sent: AttemptEvent[][] = [];
  const s = new EventShipper({
    send: async (events) => {
      sent.push(events);
      return { accepted: 0, truncated: true };
    },
    isGone: () => false,
    clock: systemClock,
    logger: silentLogger,
    retryIntervalMs: 20,
  });
  s.push('image.pull.progress', { layers: 1 });
  await s.flush();
  s.push('image.pull.progress', { layers: 2 });
  await s.close(Date.now() + 2000);
  assert.equal(sent.length, 1);
});
