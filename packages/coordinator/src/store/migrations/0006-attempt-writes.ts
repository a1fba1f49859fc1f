/**
 * Migration 0006: per-attempt write budgets (issue 10 items 5, 6). FROZEN once it lands.
 * - attempts.log_bytes / log_entries / log_dropped_*: what the node wrote into the attempt's logs and what
 *   was dropped past the budget, kept in the transaction that inserts, so two batches cannot both pass it;
 * - attempts.event_count / events_dropped: the same for node-reported job events;
 * - logs.bytes: the UTF-8 length of each entry, so a page can stop at a byte cap without reading the data.
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0006: Migration = {
  name: '0006-attempt-writes',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    for (const col of ['log_bytes', 'log_entries', 'log_dropped_bytes', 'log_dropped_entries', 'event_count', 'events_dropped']) {
      await s
        .alterTable('attempts')
        .addColumn(col, 'bigint', (c) => c.notNull().defaultTo(0))
        .execute();
    }
    await s
      .alterTable('logs')
      .addColumn('bytes', 'integer', (c) => c.notNull().defaultTo(0))
      .execute();
    // Older rows: characters stand in for bytes (close enough to page by); the attempts' running totals
    // start from what they already hold, so an attempt running across the upgrade keeps its budget.
    await sql`update logs set bytes = length(data)`.execute(db);
    await sql`update attempts set log_bytes = coalesce((select sum(l.bytes) from logs l where l.attempt_id = attempts.id), 0), log_entries = (select count(*) from logs l where l.attempt_id = attempts.id) where state in ('assigned', 'running')`.execute(db);
  },
};
