/**
 * The Store conformance suite on PostgreSQL (one throwaway cluster for the file, a fresh database per store),
 * plus what only a shared server shows: two coordinators (two pools) racing on the same rows.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Store, transitionDecider } from '@gpux/core';
import { type PostgresServer, requirePostgres, runStoreConformance, sampleAdvertisement, sampleJobSpec, startPostgres } from '@gpux/testing';
import pg from 'pg';
import { openPostgresStore } from '../src/store/index.js';

const T0 = 1_700_000_000_000;

describe('PostgreSQL store', requirePostgres(), () => {
  let server: PostgresServer;
  let migrated: string; // a migrated, empty database: copying it is faster than migrating each one
  before(async () => {
    server = await startPostgres();
    migrated = await server.newDatabase();
    await (await openPostgresStore(migrated)).close();
  });
  after(async () => {
    await server?.stop();
  });

  // Databases given back by cleanup(), emptied: reusing one is cheaper than creating a database per test.
  const spare: string[] = [];
  async function emptyAndKeep(url: string): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ t: string }>(`select tablename as t from pg_tables where schemaname = 'public' and tablename <> 'gpux_migrations'`);
      await client.query(`truncate ${rows.map((r) => `"${r.t}"`).join(', ')} restart identity cascade`);
      spare.push(url);
    } finally {
      await client.end();
    }
  }

  /** `count` stores (pools) on one empty database, closed by cleanup(). fresh: a never-migrated database. */
  async function openShared(count: number, opts: { fresh?: boolean } = {}) {
    const url = opts.fresh ? await server.newDatabase() : (spare.pop() ?? (await server.newDatabase({ template: migrated })));
    const opened: Store[] = [];
    const openOne = async () => {
      const s = await openPostgresStore(url, { max: 4 });
      opened.push(s);
      return s;
    };
    const stores = await Promise.all(Array.from({ length: count }, openOne)); // concurrent migrations too
    const cleanup = async () => {
      await Promise.all(opened.map((s) => s.close()));
      await emptyAndKeep(url);
    };
    return { url, stores, openOne, cleanup };
  }

  runStoreConformance('postgres', async () => {
    const h = await openShared(1);
    return { store: h.stores[0] as Store, reopen: h.openOne, cleanup: h.cleanup };
  });

  test('concurrent first starts migrate once and all stores work', async () => {
    const h = await openShared(4, { fresh: true });
    try {
      for (const s of h.stores) assert.equal((await s.countJobsByState()).queued, 0);
    } finally {
      await h.cleanup();
    }
  });

  test('two coordinators racing claimQueued+assign never create two attempts for one job', async (t) => {
    const h = await openShared(2);
    try {
      const [a, b] = h.stores as [Store, Store];
      await a.registerNode({ id: 'n', publicKey: 'k', advertisement: sampleAdvertisement(), now: T0 });
      const ids = Array.from({ length: 200 }, (_, i) => `job-${String(i).padStart(3, '0')}`);
      for (const id of ids) await a.submitJob({ id, buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: T0 });
      const loop = async (store: Store, tag: string) => {
        let written = 0;
        for (let round = 0; round < 1_000; round++) {
          const jobs = await store.claimQueued(T0 + 1, 9);
          if (jobs.length === 0) return written;
          const placements = jobs.map((j) => ({ jobId: j.id, attemptId: `${j.id}-${tag}-${round}`, nodeId: 'n', gpuIndices: [], leaseExpiresAt: T0 + 60_000 }));
          written += (await store.assign(placements.reverse(), T0 + 1)).length;
        }
        return written;
      };
      const counts = await Promise.all([loop(a, 'a1'), loop(b, 'b1'), loop(a, 'a2'), loop(b, 'b2')]);
      t.diagnostic(`attempts written per racer: ${counts.join(', ')}`);
      assert.equal(
        counts.reduce((x, y) => x + y, 0),
        ids.length,
      );
      for (const id of ids) {
        const attempts = await b.listAttempts(id);
        assert.equal(attempts.length, 1, id);
        const job = await b.getJob(id);
        assert.equal(job?.attemptCount, 1);
        assert.equal(job?.currentAttemptId, attempts[0]?.id);
        assert.equal((await b.listEvents('job', id, 10)).filter((e) => e.type === 'job.assigned').length, 1);
      }
    } finally {
      await h.cleanup();
    }
  });

  test('the same idempotency key submitted through two pools at once creates one job', async () => {
    const h = await openShared(2);
    try {
      const [a, b] = h.stores as [Store, Store];
      const tries = Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).submitJob({ id: `job-${i}`, buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: 'same', now: T0 + i }),
      );
      const results = await Promise.all(tries);
      assert.equal(results.filter((r) => r.created).length, 1);
      assert.equal(new Set(results.map((r) => r.job.id)).size, 1);
      assert.equal((await a.countJobsByState()).queued, 1);
    } finally {
      await h.cleanup();
    }
  });

  test('a node result racing lease expiry: exactly one wins, the job moves once', async () => {
    const h = await openShared(2);
    try {
      const [a, b] = h.stores as [Store, Store];
      const decide = transitionDecider();
      await a.registerNode({ id: 'n', publicKey: 'k', advertisement: sampleAdvertisement(), now: T0 });
      const ids = Array.from({ length: 20 }, (_, i) => `job-${String(i).padStart(2, '0')}`);
      for (const id of ids) await a.submitJob({ id, buyerId: 'b', spec: sampleJobSpec({ maxRetries: 3 }), idempotencyKey: null, now: T0 });
      await a.assign(
        ids.map((id) => ({ jobId: id, attemptId: `${id}-att`, nodeId: 'n', gpuIndices: [], leaseExpiresAt: T0 + 1_000 })),
        T0,
      );
      const now = T0 + 5_000;
      const finishes = ids.map((id) =>
        a
          .finishAttempt(
            { attemptId: `${id}-att`, nodeId: 'n', outcome: 'succeeded', exitCode: 0, error: null, outputDigest: 'f'.repeat(64), outputs: [], metrics: { durationMs: 1 }, now },
            decide,
          )
          .then(
            () => 'finished' as const,
            (err: { code?: string }) => {
              assert.equal(err.code, 'CONFLICT');
              return 'conflict' as const;
            },
          ),
      );
      const expiries = [b.expireLeases(now, decide, 7), b.expireLeases(now, decide, 7), b.expireLeases(now, decide, 7)];
      const outcomes = await Promise.all(finishes);
      const lost = (await Promise.all(expiries)).flat();
      assert.equal(new Set(lost.map((l) => l.attemptId)).size, lost.length, 'no attempt lost twice');
      for (const [i, id] of ids.entries()) {
        const attempt = await a.getAttempt(`${id}-att`);
        const wasLost = lost.some((l) => l.jobId === id);
        assert.equal(attempt?.state, wasLost ? 'lost' : 'succeeded', id);
        assert.equal(outcomes[i], wasLost ? 'conflict' : 'finished', id);
        const job = await a.getJob(id);
        assert.equal(job?.state, wasLost ? 'queued' : 'succeeded', id);
        const moves = (await a.listEvents('job', id, 20)).filter((e) => e.type === 'job.requeued' || e.type === 'job.succeeded');
        assert.equal(moves.length, 1, id);
      }
    } finally {
      await h.cleanup();
    }
  });
});
