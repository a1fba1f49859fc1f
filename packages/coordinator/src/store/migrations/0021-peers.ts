/**
 * Migration 0021: federation peers (issue 15). One row per peer region: its URL and the fingerprint of its
 * coordinator key (each unique), and what the last summary exchange left (status, round trip, last seen, the
 * peer's summary as JSON, failures in a row and the next try). FROZEN once it lands.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0021: Migration = {
  name: '0021-peers',
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('peers')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('url', 'text', (c) => c.notNull().unique())
      .addColumn('key_fingerprint', 'text', (c) => c.notNull().unique())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('last_seen_at', 'bigint')
      .addColumn('rtt_ms', 'integer')
      .addColumn('last_error', 'text')
      .addColumn('failures', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('next_try_at', 'bigint')
      .addColumn('summary', 'text')
      .addColumn('summary_at', 'bigint')
      .execute();
  },
};
