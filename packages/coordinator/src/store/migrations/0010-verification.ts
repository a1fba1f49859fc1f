/**
 * Migration 0010: the verification step of a job (issue 11, TRUST.md layers 4–5). FROZEN once it lands.
 * - jobs.kind ('buyer' | 'audit' | 'referee' | 'canary'), jobs.check_of (the job a check run checks, indexed),
 *   jobs.avoid_provider_ids (JSON: operators the job may not be placed with), jobs.hold_pay (0/1: the
 *   provider's share accrues to pending:<attempt> until verification), jobs.verify_window_ms and
 *   jobs.audit_floor_bps (the terms fixed at submission);
 * - verifications: one row per verified job (the attempt whose commitment is checked, the audit draw, the
 *   state and honest label, the dispute, the verdict), indexed (state, window_closes_at) for the window pass;
 * - penalties: every penalty with its evidence and ledger transfer, indexed (node_id, at);
 * - node_audits: audits passed in a row per node (the adaptive audit rate).
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0010: Migration = {
  name: '0010-verification',
  async up(db: Kysely<unknown>, dialect): Promise<void> {
    const s = db.schema;
    const real = dialect === 'postgres' ? 'double precision' : 'real';
    await s.alterTable('jobs').addColumn('kind', 'text', (c) => c.notNull().defaultTo('buyer')).execute();
    await s.alterTable('jobs').addColumn('check_of', 'text').execute();
    await s.alterTable('jobs').addColumn('avoid_provider_ids', 'text', (c) => c.notNull().defaultTo('[]')).execute();
    await s.alterTable('jobs').addColumn('hold_pay', 'integer', (c) => c.notNull().defaultTo(0)).execute();
    await s.alterTable('jobs').addColumn('verify_window_ms', 'bigint').execute();
    await s.alterTable('jobs').addColumn('audit_floor_bps', 'integer').execute();
    await s.createIndex('jobs_check_of').on('jobs').column('check_of').execute();
    await s
      .createTable('verifications')
      .addColumn('job_id', 'text', (c) => c.primaryKey())
      .addColumn('attempt_id', 'text', (c) => c.notNull())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('provider_id', 'text')
      .addColumn('buyer_id', 'text', (c) => c.notNull())
      .addColumn('asset', 'text')
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('label', 'text', (c) => c.notNull())
      .addColumn('p', real, (c) => c.notNull())
      .addColumn('draw', real)
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('output_digest', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('window_closes_at', 'bigint', (c) => c.notNull())
      .addColumn('dispute_buyer_id', 'text')
      .addColumn('dispute_reason', 'text')
      .addColumn('dispute_bond', 'bigint')
      .addColumn('dispute_asset', 'text')
      .addColumn('dispute_at', 'bigint')
      .addColumn('dispute_referee_id', 'text')
      .addColumn('verdict', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('resolved_at', 'bigint')
      .execute();
    await s.createIndex('verifications_window').on('verifications').columns(['state', 'window_closes_at']).execute();
    await s
      .createTable('penalties')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text')
      .addColumn('attempt_id', 'text')
      .addColumn('evidence', 'text', (c) => c.notNull())
      .addColumn('transfer_id', 'text')
      .addColumn('slashed', 'bigint', (c) => c.notNull())
      .addColumn('fee', 'bigint', (c) => c.notNull())
      .addColumn('banned', 'integer', (c) => c.notNull())
      .addColumn('suspended', 'integer', (c) => c.notNull())
      .addColumn('reason', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('penalties_node').on('penalties').columns(['node_id', 'at']).execute();
    await s
      .createTable('node_audits')
      .addColumn('node_id', 'text', (c) => c.primaryKey())
      .addColumn('consecutive_passes', 'integer', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
  },
};
