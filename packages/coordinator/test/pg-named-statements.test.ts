/**
 * Named statements on PostgreSQL (store/pg-prepared.ts): statements with parameters are prepared once per
 * connection under a name; at most MAX_NAMED texts get one; a statement whose table changed its columns under it
 * fails once and is prepared afresh under a new name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type PostgresServer, requirePostgres, startPostgres } from '@gpux/testing';
import pg from 'pg';
import { namingStatements } from '../src/store/pg-prepared.js';

describe('named statements on PostgreSQL', requirePostgres(), () => {
  let server: PostgresServer;
  let pool: pg.Pool;
  before(async () => {
    server = await startPostgres();
    pool = new pg.Pool({ connectionString: server.url, max: 1 });
    await pool.query('create table t (id int primary key, v text)');
    await pool.query("insert into t values (1, 'a'), (2, 'b')");
  });
  after(async () => {
    await pool.end();
    await server.stop();
  });

  const prepared = async (c: { query(text: string, values: unknown[]): Promise<unknown> }) =>
    ((await c.query('select name, statement from pg_prepared_statements order by name', [])) as { rows: Array<{ name: string; statement: string }> }).rows;

  it('prepares a statement with parameters once per connection, and leaves one without parameters unnamed', async () => {
    const named = namingStatements(pool, 2);
    const c = await named.connect();
    try {
      for (const id of [1, 2, 1]) {
        const res = (await c.query('select v from t where id = $1', [id])) as { rows: Array<{ v: string }> };
        assert.equal(res.rows[0]?.v, id === 1 ? 'a' : 'b');
      }
      await c.query('select count(*) from t', []);
      const names = await prepared(c);
      assert.deepEqual(
        names.map((n) => n.statement),
        ['select v from t where id = $1'],
      );
      // A second and a third text: only the second gets a name (at most 2 texts in all).
      await c.query('select v from t where id = $1 and v is not null', [1]);
      await c.query('select v from t where id = $1 or false', [1]);
      assert.equal((await prepared(c)).length, 2);
    } finally {
      c.release();
    }
  });

  it('a statement whose table changed its columns fails once, then runs prepared afresh', async () => {
    const named = namingStatements(pool);
    const c = await named.connect();
    try {
      const text = 'select * from t where id = $1';
      assert.deepEqual(Object.keys(((await c.query(text, [1])) as { rows: object[] }).rows[0] ?? {}), ['id', 'v']);
      // The pool's one connection is the one checked out: another replica's migration, through a client of its own.
      const other = new pg.Client({ connectionString: server.url });
      await other.connect();
      await other.query('alter table t add column w int default 7');
      await other.end();
      await assert.rejects(c.query(text, [1]), /cached plan must not change result type/);
      const again = (await c.query(text, [1])) as { rows: Array<Record<string, unknown>> };
      assert.deepEqual(again.rows[0], { id: 1, v: 'a', w: 7 });
    } finally {
      c.release();
    }
  });
});
