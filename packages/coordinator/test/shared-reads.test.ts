/** The long-poll building blocks of issue 10 item 10: wake generations, shared reads, poll slots. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PollSlots, SharedReads, Waiters } from '../src/waiters.js';

test('Waiters.generation changes on every wake of its key, and only then', () => {
  const w = new Waiters();
  const g0 = w.generation('job-1');
  w.wake('job-2');
  assert.equal(w.generation('job-1'), g0);
  w.wake('job-1');
  const g1 = w.generation('job-1');
  assert.notEqual(g1, g0);
  w.wake('job-1');
  assert.notEqual(w.generation('job-1'), g1);
});

test('SharedReads: same key and generation share one read, in flight or just settled; a new generation reads again', async () => {
  let calls = 0;
  let release: (v: string[]) => void = () => {};
  const reads = new SharedReads<string[]>({ keepMs: 60_000, maxWeight: 100, weigh: (v) => v.length });
  const fn = () => {
    calls++;
    return new Promise<string[]>((r) => {
      release = r;
    });
  };
  const a = reads.read('k', 1, fn);
  const b = reads.read('k', 1, fn);
  assert.equal(calls, 1, 'joined in flight');
  release(['x']);
  assert.deepEqual(await Promise.all([a, b]), [['x'], ['x']]);
  assert.deepEqual(await reads.read('k', 1, fn), ['x']);
  assert.equal(calls, 1, 'kept while the generation stays');
  const c = reads.read('k', 2, fn);
  assert.equal(calls, 2, 'a wake since: read again');
  release(['y']);
  assert.deepEqual(await c, ['y']);
});

test('SharedReads: results past the weight budget and failures are not kept', async () => {
  let calls = 0;
  const reads = new SharedReads<number[]>({ keepMs: 60_000, maxWeight: 5, weigh: (v) => v.length });
  const big = async () => {
    calls++;
    return [1, 2, 3, 4, 5, 6];
  };
  await reads.read('k', 1, big);
  await reads.read('k', 1, big);
  assert.equal(calls, 2, 'too heavy to keep');
  const failing = async (): Promise<number[]> => {
    calls++;
    throw new Error('store down');
  };
  await assert.rejects(reads.read('f', 1, failing));
  await assert.rejects(reads.read('f', 1, failing));
  assert.equal(calls, 4);
  assert.equal(reads.size, 0);
});

test('SharedReads: kept results expire after keepMs', async () => {
  let calls = 0;
  const reads = new SharedReads<number[]>({ keepMs: 1, maxWeight: 100, weigh: (v) => v.length });
  const fn = async () => {
    calls++;
    return [1];
  };
  await reads.read('k', 1, fn);
  await new Promise((r) => setTimeout(r, 10));
  await reads.read('other', 1, fn);
  assert.equal(reads.size, 1, 'the expired one was dropped');
  await reads.read('k', 1, fn);
  assert.equal(calls, 3);
});

test('PollSlots: at most max per key, released once each', () => {
  const slots = new PollSlots();
  const r1 = slots.take('t', 2);
  const r2 = slots.take('t', 2);
  assert.ok(r1 && r2);
  assert.equal(slots.take('t', 2), undefined);
  assert.ok(slots.take('other', 2), 'per key');
  r1();
  r1();
  assert.equal(slots.count('t'), 1, 'a second release is a no-op');
  assert.ok(slots.take('t', 2));
});
