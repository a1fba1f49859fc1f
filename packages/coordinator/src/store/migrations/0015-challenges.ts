/**
 * Migration 0015: proof of hardware (issue 12; TRUST.md "the node proved a GPU of class X at challenge time
 * (timed, checked computation)"). FROZEN once it lands.
 * - challenges: one row per challenge issued to a node: the seed and sizing it was sent, the GPUs it covers,
 *   the class it was sized for, its deadline; then the node's digests and timings, the reveals chosen after
 *   them, and the verdict (state pending → digested → passed | failed, or expired; reason, class, score).
 *   At most one open (pending or digested) challenge per node: a partial unique index, so issuing twice for
 *   a node is a no-op however it races. Indexed by (state, deadline_at) for the expiry pass.
 * - nodes: the proof as it stands (proof_state unproven | challenging | proven | failed | skipped, proven
 *   class, score, when proven, why dispatch is blocked, when the next random re-check is due) and the trust
 *   tier (open | curated | attested; open unless an operator vouches or attestation evidence is verified).
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0015: Migration = {
  name: '0015-challenges',
  async up(db: Kysely<unknown>, dialect): Promise<void> {
    const s = db.schema;
    const real = dialect === 'postgres' ? 'double precision' : 'real';
    await s
      .createTable('challenges')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('provider_id', 'text')
      .addColumn('seed', 'text', (c) => c.notNull())
      .addColumn('n', 'integer', (c) => c.notNull())
      .addColumn('products', 'integer', (c) => c.notNull())
      .addColumn('row_block', 'integer', (c) => c.notNull())
      .addColumn('gpu_indices', 'text', (c) => c.notNull())
      .addColumn('class', 'text', (c) => c.notNull())
      .addColumn('issued_at', 'bigint', (c) => c.notNull())
      .addColumn('deadline_at', 'bigint', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('runner', 'text')
      .addColumn('digests', 'text')
      .addColumn('timings', 'text')
      .addColumn('digested_at', 'bigint')
      .addColumn('reveal', 'text')
      .addColumn('reveal_by', 'bigint')
      .addColumn('reason', 'text')
      .addColumn('score', real)
      .addColumn('decided_at', 'bigint')
      .execute();
    await sql`create unique index challenges_open on challenges (node_id) where state in ('pending', 'digested')`.execute(db);
    await s.createIndex('challenges_node').on('challenges').columns(['node_id', 'issued_at']).execute();
    await s.createIndex('challenges_state').on('challenges').columns(['state', 'deadline_at']).execute();
    const addColumns = async (cols: [string, 'text' | 'bigint' | typeof real][]) => {
      for (const [name, type] of cols) await s.alterTable('nodes').addColumn(name, type).execute();
    };
    await s
      .alterTable('nodes')
      .addColumn('proof_state', 'text', (c) => c.notNull().defaultTo('unproven'))
      .execute();
    await addColumns([
      ['proven_class', 'text'],
      ['proof_score', real],
      ['proven_at', 'bigint'],
      ['proof_reason', 'text'],
      ['next_check_at', 'bigint'],
    ]);
    await s
      .alterTable('nodes')
      .addColumn('tier', 'text', (c) => c.notNull().defaultTo('open'))
      .execute();
    await s.createIndex('nodes_next_check').on('nodes').columns(['next_check_at']).execute();
  },
};
