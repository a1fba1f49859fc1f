/** The Store conformance suite on SQLite (a temp file), plus SQLite specifics: pragmas, two connections racing. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import type { Store } from '@gpux/core';
import { runStoreConformance, sampleAdvertisement, sampleJobSpec, tempDir } from '@gpux/testing';
import BetterSqlite3 from 'better-sqlite3';
import { openSqliteStore } from '../src/store/index.js';

async function openTemp() {
  const dir = tempDir('gpux-store-sqlite');
  const file = join(dir.path, 'nested', 'gpux.db'); // the parent directory is created on open
  const opened: Store[] = [];
  const openOne = async () => {
    const s = await openSqliteStore(file);
    opened.push(s);
    return s;
  };
  const store = await openOne();
  return {
    file,
    store,
    reopen: openOne,
    async cleanup() {
      for (const s of opened) await s.close();
      await dir.cleanup();
    },
  };
}

/** Claim and assign until the queue is empty; attempt ids carry `tag` so the racers never collide. */
async function claimLoop(store: Store, tag: string, now: number): Promise<number> {
  let written = 0;
  for (let round = 0; round < 1_000; round++) {
    const jobs = await store.claimQueued(now, 7);
    if (jobs.length === 0) return written;
    const placements = jobs.map((j) => ({ jobId: j.id, attemptId: `${j.id}-${tag}-${round}`, nodeId: 'n', gpuIndices: [], leaseExpiresAt: now + 60_000 }));
    written += (await store.assign(placements, now)).length;
  }
  return written;
}

/** Worker bootstrap: load tsx in the worker, then this file (workers do not inherit the loader hooks). */
const TS_WORKER = `const { workerData } = require('node:worker_threads');
import('tsx/esm/api').then(({ register }) => { register(); return import(workerData.url); });`;

if (!isMainThread) {
  // Worker side of the race below: a second connection in its own thread, as a second process would be.
  const store = await openSqliteStore(workerData.file as string);
  const written = await claimLoop(store, 'worker', workerData.now as number);
  await store.close();
  parentPort?.postMessage(written);
} else {
  runStoreConformance('sqlite', openTemp);

  test('sqlite: the file is in WAL mode with foreign keys enforced', async () => {
    const h = await openTemp();
    try {
      await h.store.submitJob({ id: 'j', buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: 1 });
      const raw = new BetterSqlite3(h.file, { readonly: true });
      try {
        assert.equal(raw.pragma('journal_mode', { simple: true }), 'wal');
        const tables = raw.prepare(`select name from sqlite_master where type = 'table' order by name`).all() as { name: string }[];
        for (const t of ['attempts', 'events', 'gpux_migrations', 'jobs', 'logs', 'nodes', 'outputs', 'tokens']) {
          assert.ok(
            tables.some((r) => r.name === t),
            t,
          );
        }
      } finally {
        raw.close();
      }
      // foreign_keys=ON: a log line for an attempt that does not exist is refused.
      await assert.rejects(h.store.appendLogs('j', 'no-such-attempt', [{ seq: 0, stream: 'stdout', data: 'x', at: 1 }]));
    } finally {
      await h.cleanup();
    }
  });

  test('sqlite: two connections (another thread) racing claim+assign never write two attempts for a job', async (t) => {
    const h = await openTemp();
    try {
      const now = 1_700_000_000_000;
      await h.store.registerNode({ id: 'n', publicKey: 'k', advertisement: sampleAdvertisement(), now });
      for (let i = 0; i < 150; i++) {
        await h.store.submitJob({ id: `job-${String(i).padStart(3, '0')}`, buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: now + i });
      }
      const worker = new Worker(TS_WORKER, { eval: true, workerData: { url: import.meta.url, role: 'sqlite-claimer', file: h.file, now: now + 1_000 } });
      const workerDone = new Promise<number>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.once('exit', (c) => (c === 0 ? undefined : reject(new Error(`worker exited with ${c}`))));
      });
      const [mine, theirs] = await Promise.all([claimLoop(h.store, 'main', now + 1_000), workerDone]);
      t.diagnostic(`main thread assigned ${mine}, worker ${theirs}`);
      assert.equal(mine + theirs, 150);
      const attempts = await h.store.listActiveAttempts('n');
      assert.equal(attempts.length, 150);
      assert.equal(new Set(attempts.map((a) => a.jobId)).size, 150);
      assert.equal((await h.store.countJobsByState()).assigned, 150);
    } finally {
      await h.cleanup();
    }
  });
}
