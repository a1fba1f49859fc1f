/**
 * The benchmark's coordinator: quiet logs, a free port on 127.0.0.1, otherwise the defaults. Optionally
 * SQLite's synchronous mode, and a count of Store calls by method (written as JSON on close).
 */
import { writeFileSync } from 'node:fs';
import type { Store } from '@gpux/core';
import { loadCoordinatorConfig, openSqliteStore, openStore, parseDbUrl, startCoordinator } from '@gpux/coordinator';

export interface BenchCoordinatorSettings {
  db: string;
  dataDir: string;
  /** SQLite only: null keeps the coordinator's default (FULL). */
  sqliteSynchronous: 'FULL' | 'NORMAL' | null;
  /** Count Store calls by method and write them here as JSON on close; null: no counting. */
  storeCallsFile: string | null;
}

/** A Store that counts its calls by method name. */
function countingStore(store: Store, counts: Record<string, number>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      return (...args: unknown[]) => {
        counts[prop] = (counts[prop] ?? 0) + 1;
        return v.apply(target, args);
      };
    },
  });
}

export async function startBenchCoordinator(s: BenchCoordinatorSettings) {
  const config = loadCoordinatorConfig({}, { db: s.db, dataDir: s.dataDir, port: 0, host: '127.0.0.1', logLevel: 'warn' });
  const target = parseDbUrl(s.db);
  if (s.storeCallsFile === null && (target.dialect !== 'sqlite' || s.sqliteSynchronous === null)) return startCoordinator(config);
  // The coordinator does not close a store it was handed: this wrapper does.
  const raw = target.dialect === 'sqlite' && s.sqliteSynchronous !== null ? await openSqliteStore(target.path, { synchronous: s.sqliteSynchronous }) : await openStore(s.db);
  const counts: Record<string, number> = {};
  const c = await startCoordinator(config, { store: s.storeCallsFile === null ? raw : countingStore(raw, counts) });
  const file = s.storeCallsFile;
  const close = async () => {
    await c.close();
    await raw.close();
    if (file !== null) writeFileSync(file, JSON.stringify(counts));
  };
  return { ...c, close };
}
