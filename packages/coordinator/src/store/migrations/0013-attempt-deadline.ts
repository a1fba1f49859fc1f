/**
 * Migration 0013: the coordinator's deadline of an attempt (core attempt-end/deadline.ts, the slow-loris
 * node). FROZEN once it lands.
 * - attempts.deadline_at: set at start (startedAt + the job's timeout + the result grace), and on an
 *   assigned attempt by its node's first heartbeat (creation + the start grace); no heartbeat leases the
 *   attempt past it, so the lease expiry (the attempts (state, lease_expires_at) index) ends it. NULL: none
 *   yet. Rows from before keep NULL and are leased as before.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0013: Migration = {
  name: '0013-attempt-deadline',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    await db.schema.alterTable('attempts').addColumn('deadline_at', 'bigint').execute();
  },
};
