/** openSqliteStore: the embedded default. Builds the Kysely instance over better-sqlite3 and migrates. */
import type { Store } from '@gpux/core';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { StorePolicies } from './context.js';
import { createKyselyStore } from './kysely-store.js';
import { logConfigFor, type QueryObserver } from './query-observer.js';
import type { Database } from './schema.js';
import { type ModeNotice, secureDatabaseFiles, secureDatabaseLocation } from './sqlite-file-modes.js';
import { type FlushFile, WalSync } from './wal-sync.js';

export interface SqliteStoreOptions {
  /**
   * FULL (default): every commit is on disk before it is acknowledged (a file database flushes its WAL off the
   * event loop, shared by the commits of a burst: wal-sync.ts). NORMAL: faster, may lose the last commits on power loss.
   */
  synchronous?: 'FULL' | 'NORMAL';
  /** How the WAL is flushed (tests hold a flush open); default fsync on the thread pool. */
  flushFile?: FlushFile;
  /** Told when an existing database file or data dir was open to other users and is now 0600/0700. Default: a warning on stderr. */
  onModeFixed?: ModeNotice;
  /** The coordinator's store policies (node stats); defaults for anything left out. */
  policies?: StorePolicies;
  /** Told of every statement and its time (a diagnostic: query-observer.ts). */
  onQuery?: QueryObserver;
}

const warnOnStderr: ModeNotice = (message) => process.emitWarning(message, { code: 'GPUX_FILE_MODE' });

const STATEMENT_CACHE = 512;

/**
 * A writing statement run outside a transaction commits on its own: the WAL flush must cover it too. Commits of
 * write transactions are counted by inTx, which knows whether they are durable.
 */
function noticingAutocommit(db: BetterSqlite3.Database, stmt: BetterSqlite3.Statement, wal: WalSync): SqliteStatement {
  const noticed = <T>(result: T): T => {
    if (!db.inTransaction) wal.committed();
    return result;
  };
  return {
    reader: stmt.reader,
    all: (params) => noticed(stmt.all(params)),
    run: (params) => noticed(stmt.run(params)),
    iterate: (params) => stmt.iterate(params),
  };
}

/** better-sqlite3 behind Kysely's SqliteDatabase, with prepared statements reused (Kysely prepares per query). */
function withStatementCache(db: BetterSqlite3.Database, wal: WalSync | undefined): SqliteDatabase {
  const cache = new Map<string, SqliteStatement>();
  return {
    close: () => db.close(),
    prepare(sql: string) {
      let stmt = cache.get(sql);
      if (!stmt) {
        const raw = db.prepare(sql);
        stmt = wal && !raw.readonly ? noticingAutocommit(db, raw, wal) : raw;
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
  let wal: WalSync | undefined;
  try {
    const mode = raw.pragma('journal_mode = WAL', { simple: true });
    if (!inMemory) secureDatabaseFiles(path, notice);
    // FULL on a WAL file: commits don't wait for the disk, the WAL flush does (off the event loop).
    if (opts.synchronous !== 'NORMAL' && mode === 'wal') wal = new WalSync(path, opts.flushFile);
    raw.pragma(`synchronous = ${opts.synchronous === 'NORMAL' || wal ? 'NORMAL' : 'FULL'}`);
    raw.pragma('busy_timeout = 5000');
    raw.pragma('foreign_keys = ON');
  } catch (err) {
    raw.close();
    throw err;
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw, wal) }), ...logConfigFor(opts.onQuery) });
  // With synchronous=NORMAL as the base there is nothing to relax (and nothing to restore): a relaxed commit
  // just does not wait for the WAL flush.
  const relaxedCommit = opts.synchronous === 'NORMAL' || wal ? { before: null, inside: null, after: null } : undefined;
  const store = createKyselyStore(db, { dialect: 'sqlite', ...(relaxedCommit && { relaxedCommit }) }, opts.policies, undefined, wal);
  try {
    await store.migrate();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
