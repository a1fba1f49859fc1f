/**
 * Migration 0002: what the placement engine needs. FROZEN once it lands; add 0003-… instead.
 * - jobs.priority (0 high, 1 normal, 2 low) and an index for the fair-share claim per (buyer, priority);
 * - attempts.gang_leader / attempts.gang: members of a gang job (leader attempt id; rank, world size, peers);
 * - nodes.admin_reason: why the coordinator cordoned a node (auto-cordon);
 * - node_stats: each node's decayed track record (reliability, runtime against its class, recent failures);
 * - runtime_expectations: the fleet's mean runtime per (job shape, GPU class), the "expected" of performance.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0002: Migration = {
  name: '0002-scheduler',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    await s
      .alterTable('jobs')
      .addColumn('priority', 'integer', (c) => c.notNull().defaultTo(1))
      .execute();
    // claimQueuedFair: next (buyer, priority) pair by an index seek, then that pair's oldest jobs in order.
    await s.createIndex('jobs_fair_claim').on('jobs').columns(['state', 'buyer_id', 'priority', 'created_at', 'id']).execute();

    await s.alterTable('attempts').addColumn('gang_leader', 'text').execute();
    await s.alterTable('attempts').addColumn('gang', 'text').execute();
    await s.alterTable('nodes').addColumn('admin_reason', 'text').execute();

    await s
      .createTable('node_stats')
      .addColumn('node_id', 'text', (c) => c.primaryKey())
      .addColumn('successes', 'double precision', (c) => c.notNull())
      .addColumn('failures', 'double precision', (c) => c.notNull())
      .addColumn('outages', 'double precision', (c) => c.notNull())
      .addColumn('decayed_at', 'bigint', (c) => c.notNull())
      .addColumn('runtime_ratio', 'double precision')
      .addColumn('runtime_weight', 'double precision', (c) => c.notNull())
      .addColumn('recent_failures', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('node_stats_updated').on('node_stats').columns(['updated_at']).execute();

    await s
      .createTable('runtime_expectations')
      .addColumn('key', 'text', (c) => c.primaryKey())
      .addColumn('mean_ms', 'double precision', (c) => c.notNull())
      .addColumn('samples', 'integer', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
