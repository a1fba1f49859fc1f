/**
 * The leader lease's client (cluster/leadership.ts) on a real store with a hand-moved clock: one replica leads and
 * renews; another takes over only once the lease ran out; a leader whose renewal finds the lease taken, or that
 * cannot reach the database until its lease is about to run out, or whose fenced write was refused, steps down.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Clock, LeaseGrant, Store } from '@gpux/core';
import { Leadership } from '../src/cluster/leadership.js';
import { createLogger } from '../src/logger.js';
import { openSqliteStore } from '../src/store/index.js';

let dir: string;
let store: Store;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gpux-leadership-'));
  store = await openSqliteStore(join(dir, 'c.db'));
});
after(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const T0 = 1_700_000_000_000;
const opts = { ttlMs: 3000, renewMs: 1000 };

function replica(name: string, clock: { now: number }, s: Store = store) {
  const log: string[] = [];
  const c: Clock = { now: () => clock.now };
  const l = new Leadership(s, name, c, opts, {
    elected: async (g: LeaseGrant) => void log.push(`elected ${g.epoch}`),
    deposed: async () => void log.push('deposed'),
  }, createLogger('silent'));
  // tick() is private: the tests drive renewals by hand instead of waiting for the interval.
  const tick = () => (l as unknown as { tick(): Promise<void> }).tick();
  return { l, log, tick };
}

test('one leads and renews; the other takes over only after the lease ran out; a stale leader steps down', async () => {
  const clock = { now: T0 };
  const a = replica('rep-a', clock);
  const b = replica('rep-b', clock);
  await a.tick();
  await b.tick();
  assert.deepEqual([a.log, b.log], [['elected 1'], []]);
  clock.now += 2000;
  await a.tick(); // renewed until T0 + 5000
  clock.now += 2500;
  await b.tick();
  assert.equal(b.l.isLeader, false, 'the renewed lease still holds');
  clock.now += 1000; // a paused: no renewal; its lease ran out
  await b.tick();
  assert.deepEqual(b.log, ['elected 2']);
  await a.tick();
  assert.deepEqual(a.log, ['elected 1', 'deposed'], 'its renewal names epoch 1: refused');
});

test('a leader cut off from the database steps down before its lease runs out; a refused fenced write steps it down at once', async () => {
  const clock = { now: T0 + 100_000 };
  let down = false;
  const flaky = new Proxy(store, {
    get: (t, k, r) => (k === 'acquireLease' && down ? async () => Promise.reject(new Error('connect ECONNREFUSED')) : Reflect.get(t, k, r)),
  });
  const c = replica('rep-c', clock, flaky);
  await c.tick();
  assert.equal(c.l.isLeader, true);
  down = true;
  clock.now += 1000;
  await c.tick();
  assert.equal(c.l.isLeader, true, 'one failed renewal with time left on the lease: still leads');
  clock.now += 1000; // within renewMs of the lease's end
  await c.tick();
  assert.deepEqual(c.log.at(-1), 'deposed');
  down = false;
  clock.now += 5000;
  await c.tick();
  assert.equal(c.l.isLeader, true);
  c.l.lost();
  await new Promise((r) => setImmediate(r));
  assert.equal(c.l.isLeader, false);
  assert.equal(c.log.at(-1), 'deposed');
});
