/**
 * A fresh database for every run: a new SQLite file each time, or one PostgreSQL database (two pools on
 * it, as two coordinators would have) emptied before each run, which is much cheaper than a new database.
 */
import { join } from 'node:path';
import type { Store } from '@gpux/core';
import { type PostgresServer, startPostgres } from '@gpux/testing';
import pg from 'pg';
import { openPostgresStore, openSqliteStore } from '../../../src/store/index.js';

/** Opens the stores of one run on an empty database; `done` lets go of what only that run used. */
export type OpenRun = () => Promise<{ stores: Store[]; done(): Promise<void> }>;

/** Each run on a database file of its own in `dir`. */
export function sqliteRuns(dir: string): OpenRun {
  let opened = 0;
  return async () => {
    const store = await openSqliteStore(join(dir, `run-${opened++}.db`));
    return { stores: [store], done: () => store.close() };
  };
}

/** Every run on the same PostgreSQL database, truncated first; commands of a batch alternate between the two pools. */
export class PostgresRuns {
  private server: PostgresServer | undefined;
  private admin: pg.Client | undefined;
  private stores: Store[] = [];
  private tables = '';

  async start(): Promise<void> {
    this.server = await startPostgres();
    const url = await this.server.newDatabase();
    this.stores = await Promise.all([openPostgresStore(url, { max: 4 }), openPostgresStore(url, { max: 4 })]);
    this.admin = new pg.Client({ connectionString: url });
    await this.admin.connect();
    const { rows } = await this.admin.query<{ t: string }>(`select tablename as t from pg_tables where schemaname = 'public' and tablename <> 'gpux_migrations'`);
    this.tables = rows.map((r) => `"${r.t}"`).join(', ');
  }

  readonly open: OpenRun = async () => {
    if (!this.admin) throw new Error('PostgresRuns.start() has not run');
    await this.admin.query(`truncate ${this.tables} restart identity cascade`);
    return { stores: this.stores, done: async () => undefined };
  };

  async stop(): Promise<void> {
    await Promise.all(this.stores.map((s) => s.close()));
    await this.admin?.end();
    await this.server?.stop();
  }
}
