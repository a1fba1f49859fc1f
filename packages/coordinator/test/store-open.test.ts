/** openStore / parseDbUrl: the accepted --db forms and the error for anything else. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '@gpux/testing';
import { openStore, parseDbUrl } from '../src/store/index.js';

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
