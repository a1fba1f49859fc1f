/**
 * Migration 0023: finished runs in order (issue 17). The run-time predictions read succeeded attempts by finish time
 * (store/finished-runs.ts): an index on (state, finished_at, id) keeps that a range scan however long the history.
 * FROZEN once it lands.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0023: Migration = {
  name: '0023-finished-runs',
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.createIndex('attempts_finished').on('attempts').columns(['state', 'finished_at', 'id']).execute();
  },
};
