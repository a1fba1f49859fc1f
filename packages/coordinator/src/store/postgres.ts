/** openPostgresStore: PostgreSQL for scale. Builds the Kysely instance over a pg Pool (int8 read as number) and migrates. */
import type { Store } from '@gpux/core';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { StorePolicies } from './context.js';
import { namingStatements } from './pg-prepared.js';
import { createKyselyStore } from './kysely-store.js';
import { logConfigFor, type QueryObserver } from './query-observer.js';
import type { Database } from './schema.js';

export interface PostgresStoreOptions {
  /** Pool size (default 10). */
  max?: number;
  /** The coordinator's store policies (node stats); defaults for anything left out. */
  policies?: StorePolicies;
  /** Name statements so each connection parses and plans them once (pg-prepared.ts). Default true. */
  namedStatements?: boolean;
  /** Told of every statement and its round trip (a diagnostic: query-observer.ts). */
  onQuery?: QueryObserver;
}

const INT8_OID = 20;

/** Per-pool type parsing, so other pg users in the process keep pg's defaults. Epoch ms fit a double exactly. */
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** A Kysely over its own pool; `options`: server settings for every session of it. */
function kyselyOver(url: string, max: number, named: boolean, onQuery: QueryObserver | undefined, options?: string): Kysely<Database> {
  // A server that stops answering (a partition drops packets) fails a new connection after 10 s instead of never.
  const pool = new pg.Pool({ connectionString: url, max, types, connectionTimeoutMillis: 10_000, ...(options && { options }) });
  // An idle client losing its connection must not crash the process; the next query reports the failure.
  pool.on('error', () => undefined);
  // pg-pool listens for errors only on idle clients: a checked-out one whose socket dies (the server restarted, a
  // partition) would emit 'error' with no listener and kill the process. Its queries are rejected anyway, and the pool
  // drops it on release.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: named ? namingStatements(pool) : pool }), ...logConfigFor(onQuery) });
}

export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<Store> {
  const named = opts.namedStatements ?? true;
  const db = kyselyOver(url, opts.max ?? 10, named, opts.onQuery);
  // Heartbeats' single statements commit without waiting for the disk and without a transaction (context.ts).
  const relaxedDb = kyselyOver(url, Math.max(2, Math.ceil((opts.max ?? 10) / 2)), named, opts.onQuery, '-c synchronous_commit=off');
  const store = createKyselyStore(db, { dialect: 'postgres' }, opts.policies, relaxedDb);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
