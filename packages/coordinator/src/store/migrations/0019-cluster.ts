/**
 * Migration 0019: several replicas on one database (issue 14). FROZEN once it lands.
 * - coordinator_leases: one row per lease (the leader's is 'leader'); `epoch` grows at every change of holder and
 *   fences the leader's writes.
 * - node_nonces: signature nonces seen by any replica, until they expire (a replay to another replica is refused).
 *   UNLOGGED on PostgreSQL: a nonce only matters for the two-minute signature window, and a crash of the database
 *   server (which empties an unlogged table) also restarts every replica, which then refuses requests signed before
 *   its start.
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0019: Migration = {
  name: '0019-cluster',
  async up(db: Kysely<unknown>, dialect): Promise<void> {
    const s = db.schema;
    await s
      .createTable('coordinator_leases')
      .addColumn('name', 'text', (c) => c.primaryKey())
      .addColumn('holder', 'text', (c) => c.notNull())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    const unlogged = dialect === 'postgres' ? 'unlogged ' : '';
    await sql
      .raw(`create ${unlogged}table node_nonces (node_id text not null, nonce text not null, expires_at bigint not null, primary key (node_id, nonce))`)
      .execute(db);
    await s.createIndex('node_nonces_expiry').on('node_nonces').column('expires_at').execute();
  },
};
