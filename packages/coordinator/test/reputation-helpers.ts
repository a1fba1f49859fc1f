/**
 * Stores built in the test, so the test holds the StoreContext that applyReputationIn takes (the attempt-end
 * and verification paths' in-transaction write), on SQLite (a temp file) or PostgreSQL (a given database).
 */
import { join } from 'node:path';
import type { ReputationEventKind, Store } from '@gpux/core';
import { tempDir } from '@gpux/testing';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { inTx, resolvePolicy, resolveQuirks, type StoreContext } from '../src/store/context.js';
import { createKyselyStore } from '../src/store/kysely-store.js';
import { applyReputationIn } from '../src/store/reputation.js';
import type { Database } from '../src/store/schema.js';

export interface OpenedWithCtx {
  store: Store;
  ctx: StoreContext;
  cleanup(): Promise<void>;
}

async function withCtx(db: Kysely<Database>, dialect: 'sqlite' | 'postgres', cleanup: () => Promise<void>): Promise<OpenedWithCtx> {
  const store = createKyselyStore(db, { dialect });
  await store.migrate();
  const ctx: StoreContext = { db, q: resolveQuirks({ dialect }), policy: resolvePolicy() };
  return {
    store,
    ctx,
    cleanup: async () => {
      await store.close();
      await cleanup();
    },
  };
}

export async function openSqliteWithCtx(): Promise<OpenedWithCtx> {
  const dir = tempDir('gpux-reputation');
  const raw = new BetterSqlite3(join(dir.path, 'gpux.db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('busy_timeout = 5000');
  return withCtx(new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }) }), 'sqlite', () => dir.cleanup());
}

/** int8 as number, as the coordinator's pool reads it (store/postgres.ts). */
const pgTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20 && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

export async function openPostgresWithCtx(url: string): Promise<OpenedWithCtx> {
  const pool = new pg.Pool({ connectionString: url, max: 8, types: pgTypes });
  pool.on('error', () => undefined);
  return withCtx(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres', async () => undefined);
}

/** One reputation event in its own transaction, as the attempt-end or verification path writes it. */
export const applyReputation = (o: OpenedWithCtx, nodeId: string, kind: ReputationEventKind, at: number) =>
  inTx(o.ctx, (trx) => applyReputationIn(trx, o.ctx, nodeId, kind, at));
