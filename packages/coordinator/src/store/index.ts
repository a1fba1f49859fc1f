/** The store adapters: openStore picks SQLite or PostgreSQL from a --db value. */
import { GpuxError, type Store } from '@gpux/core';
import type { StorePolicies } from './context.js';
import { openPostgresStore } from './postgres.js';
import { openSqliteStore } from './sqlite.js';

export type { StorePolicies, StoreQuirks, StoreQuirksInput } from './context.js';
export { createKyselyStore } from './kysely-store.js';
export { runMigrations } from './migrate.js';
export { MIGRATIONS, type Migration } from './migrations/index.js';
export { type PostgresStoreOptions, openPostgresStore } from './postgres.js';
export type { QueryObserver } from './query-observer.js';
export type { Database } from './schema.js';
export { type SqliteStoreOptions, openSqliteStore } from './sqlite.js';

export const DB_URL_FORMS = 'sqlite:PATH, sqlite://PATH, a file path ending in .db, postgres://… or postgresql://…';

/** Where a --db value points: which database, and its path or URL. */
export function parseDbUrl(dbUrl: string): { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string } {
  const v = dbUrl.trim();
  if (/^postgres(ql)?:\/\//i.test(v)) return { dialect: 'postgres', url: v };
  let path: string | undefined;
  if (/^sqlite:\/\//i.test(v)) path = v.slice('sqlite://'.length);
  else if (/^sqlite:/i.test(v)) path = v.slice('sqlite:'.length);
  else if (/\.db$/i.test(v) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(v)) path = v;
  if (path) return { dialect: 'sqlite', path };
  throw new GpuxError('REQUEST_INVALID', `unsupported database "${dbUrl}": use ${DB_URL_FORMS}`, {
    problems: [{ path: 'db', message: `expected ${DB_URL_FORMS}` }],
  });
}

/** Open (and migrate) the store a --db value points at. `policies`: the coordinator's store policies (from its config). */
export function openStore(dbUrl: string, opts: { onModeFixed?: (message: string) => void; policies?: StorePolicies; pgNamedStatements?: boolean } = {}): Promise<Store> {
  const target = parseDbUrl(dbUrl);
  if (target.dialect === 'postgres') {
    return openPostgresStore(target.url, { ...(opts.policies ? { policies: opts.policies } : {}), ...(opts.pgNamedStatements !== undefined ? { namedStatements: opts.pgNamedStatements } : {}) });
  }
  return openSqliteStore(target.path, opts);
}
