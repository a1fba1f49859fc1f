/**
 * Migration 0008: cancel grace and fee carry (issue 10 items 8, 15). FROZEN once it lands.
 * - attempts.stop_by: set when the job's cancel is requested (cancel + grace); the attempt is charged only
 *   up to it, and no heartbeat renews its lease past it, so it ends even if the node never answers;
 * - fee_carry: per (provider, asset) the remainder of the treasury fee rounding, below 10000 (fee bps
 *   units), so many small charges pay the same fee as one large one.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0008: Migration = {
  name: '0008-edges',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    const s = db.schema;
    await s.alterTable('attempts').addColumn('stop_by', 'bigint').execute();
    await s
      .createTable('fee_carry')
      .addColumn('provider_id', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('carry', 'integer', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint('fee_carry_pk', ['provider_id', 'asset'])
      .execute();
  },
};
