/** openStore / parseDbUrl: the accepted --db forms and the error for anything else; the stores' onQuery observer. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { Store } from '@gpux/core';
import { requirePostgres, sampleJobSpec, startPostgres, tempDir } from '@gpux/testing';
import { openPostgresStore, openSqliteStore, openStore, parseDbUrl, type QueryObserver } from '../src/store/index.js';

test('parseDbUrl accepts sqlite:PATH, sqlite://PATH, *.db paths and postgres URLs', () => {
  assert.deepEqual(parseDbUrl('sqlite:data/gpux.db'), { dialect: 'sqlite', path: 'data/gpux.db' });
  assert.deepEqual(parseDbUrl('sqlite:/var/lib/gpux/state'), { dialect: 'sqlite', path: '/var/lib/gpux/state' });
  assert.deepEqual(parseDbUrl('sqlite:///var/lib/gpux.db'), { dialect: 'sqlite', path: '/var/lib/gpux.db' });
  assert.deepEqual(parseDbUrl('sqlite://rel/gpux.db'), { dialect: 'sqlite', path: 'rel/gpux.db' });
  assert.deepEqual(parseDbUrl('./gpux.db'), { dialect: 'sqlite', path: './gpux.db' });
  assert.deepEqual(parseDbUrl('/abs/gpux.db'), { dialect: 'sqlite', path: '/abs/gpux.db' });
  assert.deepEqual(parseDbUrl('postgres://u:p@h:5432/db'), { dialect: 'postgres', url: 'postgres://u:p@h:5432/db' });
  assert.deepEqual(parseDbUrl('postgresql://h/db?sslmode=require'), { dialect: 'postgres', url: 'postgresql://h/db?sslmode=require' });
});

test('parseDbUrl rejects anything else with REQUEST_INVALID naming the accepted forms', () => {
  for (const bad of ['mysql://h/db', 'gpux.sqlite3', '', 'sqlite:', 'http://x/y.db']) {
    assert.throws(
      () => parseDbUrl(bad),
      (err: unknown) => {
        const e = err as { code?: string; message?: string };
        assert.equal(e.code, 'REQUEST_INVALID', bad);
        assert.match(e.message ?? '', /sqlite:PATH.*postgres:\/\//);
        return true;
      },
    );
  }
});

test('openStore opens and migrates a SQLite file from each form', async () => {
  const dir = tempDir('gpux-open-store');
  try {
    for (const dbUrl of [`sqlite:${join(dir.path, 'a.db')}`, `sqlite://${join(dir.path, 'b', 'b.db')}`, join(dir.path, 'c.db')]) {
      const store = await openStore(dbUrl);
      try {
        assert.equal(store.dialect, 'sqlite');
        assert.equal((await store.countJobsByState()).queued, 0);
      } finally {
        await store.close();
      }
    }
  } finally {
    await dir.cleanup();
  }
});

/** What an onQuery observer saw while one job was enqueued: its insert, inside the write transaction, timed. */
async function observedSubmit(open: (onQuery: QueryObserver) => Promise<Store>): Promise<void> {
  const seen: { sql: string; ms: number }[] = [];
  let on = false;
  const store = await open((sql, ms) => {
    if (on) seen.push({ sql, ms });
  });
  try {
    on = true;
    await store.submitJob({ id: 'job_observed', buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: 1 });
    on = false;
    assert.ok(
      seen.some((q) => /^insert into "jobs"/.test(q.sql)),
      `the job's insert was seen: ${seen.map((q) => q.sql.slice(0, 40)).join(' | ')}`,
    );
    assert.ok(seen.some((q) => /^commit$/i.test(q.sql.trim())), 'the commit was seen');
    assert.ok(seen.every((q) => Number.isFinite(q.ms) && q.ms >= 0));
  } finally {
    await store.close();
  }
}

test('onQuery: a SQLite store tells its observer each statement with its time', async () => {
  const dir = tempDir('gpux-open-store');
  try {
    await observedSubmit((onQuery) => openSqliteStore(join(dir.path, 'q.db'), { onQuery }));
  } finally {
    await dir.cleanup();
  }
});

describe('onQuery on PostgreSQL', requirePostgres(), () => {
  test('a PostgreSQL store tells its observer each statement with its round trip', async () => {
    const server = await startPostgres();
    try {
      await observedSubmit((onQuery) => openPostgresStore(server.url, { onQuery }));
    } finally {
      await server.stop();
    }
  });
});
