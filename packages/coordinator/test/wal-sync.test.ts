/**
 * SQLite group commit (store/wal-sync.ts): commits don't wait for the disk, a shared WAL flush does, and
 * nothing is acknowledged or shown before the flush that covers it. The flush is held open here to show it.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { sampleAdvertisement, sampleJobSpec, tempDir } from '@gpux/testing';
import BetterSqlite3 from 'better-sqlite3';
import { openSqliteStore } from '../src/store/index.js';
import { WalSync } from '../src/store/wal-sync.js';
import { call, spec, startHarness } from './helpers.js';

/** A flush that passes while open and, once held, waits until released; counts the flushes it saw. */
function gate() {
  let held = false;
  let waiting: (() => void)[] = [];
  const g = {
    flushes: 0,
    flush: async () => {
      g.flushes++;
      if (held) await new Promise<void>((resolve) => waiting.push(resolve));
    },
    hold: () => {
      held = true;
    },
    release: () => {
      held = false;
      const w = waiting;
      waiting = [];
      for (const r of w) r();
    },
    pending: () => waiting.length,
  };
  return g;
}

/** Resolved now or still pending, after the event loop had a few turns. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  return done;
}

test('WalSync: commits made while a flush is on the disk share the next flush; nothing resolves before its flush', async () => {
  const dir = tempDir('gpux-wal-sync');
  try {
    const db = join(dir.path, 'x.db');
    writeFileSync(`${db}-wal`, '');
    const g = gate();
    const wal = new WalSync(db, g.flush);
    assert.equal(await settled(wal.synced()), true, 'nothing committed: nothing to wait for');
    g.hold();
    wal.committed();
    const first = wal.synced();
    assert.equal(await settled(first), false);
    wal.committed();
    wal.committed();
    const second = wal.synced();
    const third = wal.synced();
    assert.equal(second, third, 'commits behind a running flush wait for one more, shared');
    const flushesWhileHeld = g.flushes;
    g.release();
    await first;
    await second;
    // The directory once, then one flush for the first commit and one for the two behind it.
    assert.equal(g.flushes, 3);
    assert.ok(flushesWhileHeld <= 2, 'the second flush starts only after the first ended');
    await wal.close();
  } finally {
    await dir.cleanup();
  }
});

test('sqlite store: a durable write resolves only after its WAL flush, while another transaction commits meanwhile', async () => {
  const dir = tempDir('gpux-wal-store');
  const g = gate();
  const file = join(dir.path, 'gpux.db');
  const store = await openSqliteStore(file, { flushFile: g.flush });
  try {
    await store.submitJob({ id: 'j0', buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: 1 });
    g.hold();
    const one = store.submitJob({ id: 'j1', buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: 2 });
    assert.equal(await settled(one), false, 'not acknowledged before the flush');
    // The connection is free while the disk works: another transaction commits meanwhile. (Submits are grouped:
    // the next group gathers while this one's flush runs, so the other write here is a node's registration.)
    const two = store.registerNode({ id: 'n1', publicKey: 'k', advertisement: sampleAdvertisement(), now: 3 });
    assert.equal(await settled(two), false);
    const raw = new BetterSqlite3(file, { readonly: true });
    try {
      assert.deepEqual(raw.prepare(`select id from jobs order by id`).all(), [{ id: 'j0' }, { id: 'j1' }]);
      assert.deepEqual(raw.prepare(`select id from nodes`).all(), [{ id: 'n1' }], 'committed (in the WAL) before any flush ended');
    } finally {
      raw.close();
    }
    assert.equal(await settled(store.synced()), false, 'a reader waits for the flush too');
    g.release();
    await Promise.all([one, two, store.synced()]);
  } finally {
    g.release();
    await store.close();
    await dir.cleanup();
  }
});

test('coordinator on a SQLite file: no answer, even a read, leaves before the commits it may show are on disk', async () => {
  const dir = tempDir('gpux-wal-http');
  const g = gate();
  const store = await openSqliteStore(join(dir.path, 'gpux.db'), { flushFile: g.flush });
  const h = await startHarness({}, { store });
  try {
    const buyer = await h.buyer();
    g.hold();
    const submit = call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() } });
    await waitUntil(() => g.pending() > 0);
    const health = call(h.url, 'GET', '/healthz');
    assert.equal(await settledAfter(health, 200), false, 'a read waits while a commit is not on disk');
    assert.equal(await settledAfter(submit, 0), false, 'the submit is not acknowledged');
    g.release();
    assert.equal((await submit).status, 201);
    assert.equal((await health).status, 200);
  } finally {
    g.release();
    await h.close();
    await store.close();
    await dir.cleanup();
  }
});

async function waitUntil(ok: () => boolean, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function settledAfter(p: Promise<unknown>, ms: number): Promise<boolean> {
  await new Promise((r) => setTimeout(r, ms));
  return settled(p);
}
