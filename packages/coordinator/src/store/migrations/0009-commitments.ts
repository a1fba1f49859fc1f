/**
 * Migration 0009: signed result commitments (issue 11). FROZEN once it lands.
 * - attempts.commitment (canonical JSON) and attempts.commitment_signature (base64): what the node signed for
 *   the attempt, stored in the transaction that ends it;
 * - equivocations: two different validly signed commitments for one attempt, both kept as evidence; the
 *   pair (attempt, second commitment's digest) is unique so the same pair again records nothing new;
 * - nodes.banned_at / banned_reason: a banned node is removed and may never register again.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0009: Migration = {
  name: '0009-commitments',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    const s = db.schema;
    await s.alterTable('attempts').addColumn('commitment', 'text').execute();
    await s.alterTable('attempts').addColumn('commitment_signature', 'text').execute();
    await s.alterTable('nodes').addColumn('banned_at', 'bigint').execute();
    await s.alterTable('nodes').addColumn('banned_reason', 'text').execute();
    await s
      .createTable('equivocations')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('attempt_id', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('first_commitment', 'text', (c) => c.notNull())
      .addColumn('first_signature', 'text', (c) => c.notNull())
      .addColumn('second_commitment', 'text', (c) => c.notNull())
      .addColumn('second_signature', 'text', (c) => c.notNull())
      .addColumn('second_digest', 'text', (c) => c.notNull())
      .addColumn('slashed', 'bigint', (c) => c.notNull())
      .addColumn('transfer_id', 'text')
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('equivocations_pair').on('equivocations').columns(['attempt_id', 'second_digest']).unique().execute();
    await s.createIndex('equivocations_node').on('equivocations').columns(['node_id', 'at']).execute();
  },
};
