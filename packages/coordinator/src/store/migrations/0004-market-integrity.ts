/**
 * Migration 0004: market integrity (issue 10 item 4). FROZEN once it lands.
 * - jobs.queue_deadline: when a queued job times out (the time it entered the queue + its queue timeout),
 *   and jobs.queue_deadline_attempts: the attempt count it was set for (a requeue makes it stale). Both
 *   NULL until the queue-timeout pass sets them (store/queue-timeout.ts); indexed with the state, so both
 *   the fill (state = 'queued' AND queue_deadline IS NULL) and the due scan (queue_deadline <= now) use it.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0004: Migration = {
  name: '0004-market-integrity',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    await db.schema.alterTable('jobs').addColumn('queue_deadline', 'bigint').execute();
    await db.schema.alterTable('jobs').addColumn('queue_deadline_attempts', 'integer').execute();
    await db.schema.createIndex('jobs_queue_deadline').on('jobs').columns(['state', 'queue_deadline']).execute();
  },
};
