/**
 * Migration 0022: forwarded jobs (issue 15; core store/forwards.ts). One row per home attempt sent to a peer region:
 * the peer, its job id once it answered, where the forward stands, the peer's log cursor, its final bill once booked,
 * why the home forwarded it, and the last contact (or failure to make one). Open rows are read oldest contact first
 * by the forwarding loop (index on state, last contact), a job's rows by job. FROZEN once it lands.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0022: Migration = {
  name: '0022-forwards',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    await s
      .createTable('forwards')
      .addColumn('attempt_id', 'text', (c) => c.primaryKey().references('attempts.id'))
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('peer_id', 'text', (c) => c.notNull())
      .addColumn('remote_job_id', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('log_cursor', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('charged', 'bigint')
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('last_contact_at', 'bigint')
      .addColumn('last_error', 'text')
      .execute();
    await s.createIndex('forwards_open').on('forwards').columns(['state', 'last_contact_at']).execute();
    await s.createIndex('forwards_job').on('forwards').column('job_id').execute();
    await s.createIndex('forwards_peer').on('forwards').column('peer_id').execute();
  },
};
