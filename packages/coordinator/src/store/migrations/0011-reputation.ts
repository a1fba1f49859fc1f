/**
 * Migration 0011: node reputation (issue 11). FROZEN once it lands.
 * - node_reputation: each node's decayed good and bad sums (core trust/reputation.ts) and the time they are
 *   decayed to, written in the transaction of the outcome that changed them. 'double precision', not 'real':
 *   PostgreSQL's real is 4 bytes and would round the sums. updated_at is indexed for the capacity index's
 *   incremental reads (changed at or after a time), as node_stats is.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0011: Migration = {
  name: '0011-reputation',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    const s = db.schema;
    await s
      .createTable('node_reputation')
      .addColumn('node_id', 'text', (c) => c.primaryKey())
      .addColumn('good', 'double precision', (c) => c.notNull())
      .addColumn('bad', 'double precision', (c) => c.notNull())
      .addColumn('as_of', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('node_reputation_updated').on('node_reputation').columns(['updated_at']).execute();
  },
};
