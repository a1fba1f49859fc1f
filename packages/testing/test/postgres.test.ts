/** startPostgres: a private cluster, and GPUX_TEST_PG_URL mode (a fresh database on a given server, dropped on stop). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { requirePostgres, startPostgres } from '../src/index.js';

async function query<T extends pg.QueryResultRow>(url: string, text: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text)).rows;
  } finally {
    await c.end();
  }
}

describe('startPostgres', requirePostgres(), () => {
  test('starts a server with an empty database, more databases on demand, and a GPUX_TEST_PG_URL mode', async () => {
    const saved = process.env.GPUX_TEST_PG_URL;
    const server = await startPostgres();
    try {
      const [row] = await query<{ db: string; tables: string }>(
        server.url,
        `select current_database() as db, (select count(*) from pg_tables where schemaname = 'public')::text as tables`,
      );
      assert.match(row?.db ?? '', /^gpux_test_/);
      assert.equal(row?.tables, '0');
      const second = await server.newDatabase();
      assert.notEqual(second, server.url);
      await query(second, 'create table t (x int)');
      const copy = await server.newDatabase({ template: second });
      assert.equal((await query(copy, `select count(*)::int as n from pg_tables where tablename = 't'`))[0]?.n, 1);

      // GPUX_TEST_PG_URL: a fresh database on that server, dropped by stop().
      process.env.GPUX_TEST_PG_URL = server.url;
      const onUrl = await startPostgres();
      const name = new URL(onUrl.url).pathname.slice(1);
      assert.notEqual(onUrl.url, server.url);
      await query(onUrl.url, 'select 1');
      await onUrl.stop();
      const left = await query(server.url, `select datname from pg_database where datname = '${name}'`);
      assert.deepEqual(left, []);
    } finally {
      if (saved === undefined) delete process.env.GPUX_TEST_PG_URL;
      else process.env.GPUX_TEST_PG_URL = saved;
      await server.stop();
    }
  });
});
