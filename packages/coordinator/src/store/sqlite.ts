/** openSqliteStore: the embedded default. Builds the Kysely instance over better-sqlite3 and migrates. */
import type { Store } from '@gpux/core';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase } from 'kysely';
import type { StorePolicies } from './context.js';
import { createKyselyStore } from './kysely-store.js';
import type { Database } from './schema.js';
import { type ModeNotice, secureDatabaseFiles, secureDatabaseLocation } from './sqlite-file-modes.js';

export interface SqliteStoreOptions {
  /** FULL (default): every commit is on disk before it is acknowledged. NORMAL: faster, may lose the last commits on power loss. */
  synchronous?: 'FULL' | 'NORMAL';
  /** Told when an existing database file or data dir was open to other users and is now 0600/0700. Default: a warning on stderr. */
  onModeFixed?: ModeNotice;
  /** The coordinator's store policies (node stats); defaults for anything left out. */
  policies?: StorePolicies;
}

const warnOnStderr: ModeNotice = (message) => process.emitWarning(message, { code: 'GPUX_FILE_MODE' });

const STATEMENT_CACHE = 512;

/** better-sqlite3 behind Kysely's SqliteDatabase, with prepared statements reused (Kysely prepares per query). */
function withStatementCache(db: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => db.close(),
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        stmt = db.prepare(sql);
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value as string);
        cache.set(sql, stmt);
      }
      return stmt;
    },
  };
}

export async function openSqliteStore(path: string, opts: SqliteStoreOptions = {}): Promise<Store> {
  const inMemory = path === ':memory:';
  const notice = opts.onModeFixed ?? warnOnStderr;
  if (!inMemory) secureDatabaseLocation(path, notice);
  const raw = new BetterSqlite3(path);
  try {
    raw.pragma('journal_mode = WAL');
    if (!inMemory) secureDatabaseFiles(path, notice);
    raw.pragma(`synchronous = ${opts.synchronous === 'NORMAL' ? 'NORMAL' : 'FULL'}`);
    raw.pragma('busy_timeout = 5000');
    raw.pragma('foreign_keys = ON');
  } catch (err) {
    raw.close();
    throw err;
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  // With synchronous=NORMAL as the base there is nothing to relax (and nothing to restore).
  const relaxedCommit = opts.synchronous === 'NORMAL' ? { before: null, inside: null, after: null } : undefined;
  const store = createKyselyStore(db, { dialect: 'sqlite', ...(relaxedCommit && { relaxedCommit }) }, opts.policies);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
