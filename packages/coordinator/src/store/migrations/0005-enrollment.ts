/**
 * Migration 0005: enrollment tokens, token expiry and revocation (issue 10 items 2, 14). FROZEN once it lands.
 * - enrollments: node enrollment tokens (hash only), bound to a provider account, with optional expiry and
 *   node limit; revoked_at once revoked;
 * - tokens.expires_at, tokens.revoked_at;
 * - nodes.enrollment_id (the enrollment it registered with) and nodes.removed_at (removed by a revocation);
 * - node_gpus: the GPU uuids each node advertises, indexed by uuid, so a uuid claimed by two providers'
 *   nodes is found with one lookup (filled from the existing advertisements here).
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0005: Migration = {
  name: '0005-enrollment',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    const s = db.schema;
    await s
      .createTable('enrollments')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('hash', 'text', (c) => c.notNull().unique())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint')
      .addColumn('revoked_at', 'bigint')
      .addColumn('max_nodes', 'integer')
      .execute();
    await s.createIndex('enrollments_account').on('enrollments').columns(['account_id', 'id']).execute();
    await s.alterTable('tokens').addColumn('expires_at', 'bigint').execute();
    await s.alterTable('tokens').addColumn('revoked_at', 'bigint').execute();
    await s.alterTable('nodes').addColumn('enrollment_id', 'text').execute();
    await s.alterTable('nodes').addColumn('removed_at', 'bigint').execute();
    await s.createIndex('nodes_enrollment').on('nodes').columns(['enrollment_id']).execute();
    await s.createIndex('nodes_provider').on('nodes').columns(['provider_id']).execute();
    await s
      .createTable('node_gpus')
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('uuid', 'text', (c) => c.notNull())
      .addPrimaryKeyConstraint('node_gpus_pk', ['node_id', 'uuid'])
      .execute();
    await s.createIndex('node_gpus_uuid').on('node_gpus').columns(['uuid']).execute();
    const nodes = await sql<{ id: string; advertisement: string }>`select id, advertisement from nodes`.execute(db);
    for (const n of nodes.rows) {
      let uuids: string[] = [];
      try {
        uuids = [...new Set((JSON.parse(n.advertisement).gpus ?? []).map((g: { uuid?: unknown }) => String(g.uuid)))] as string[];
      } catch {}
      for (const uuid of uuids) await sql`insert into node_gpus (node_id, uuid) values (${n.id}, ${uuid})`.execute(db);
    }
  },
};
