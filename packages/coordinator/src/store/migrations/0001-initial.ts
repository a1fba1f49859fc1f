/**
 * Migration 0001: the initial schema. FROZEN: never edit after it lands; add 0002-… instead.
 * Timestamps are integer epoch ms (bigint), booleans 0/1 integers, JSON as text, ids text.
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0001: Migration = {
  name: '0001-initial',
  async up(db: Kysely<unknown>, dialect: 'sqlite' | 'postgres'): Promise<void> {
    const s = db.schema;

    await s
      .createTable('tokens')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('hash', 'text', (c) => c.notNull().unique())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('tokens_role').on('tokens').column('role').execute();

    await s
      .createTable('jobs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('buyer_id', 'text', (c) => c.notNull())
      .addColumn('name', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('idempotency_key', 'text')
      .addColumn('attempt_count', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('current_attempt_id', 'text')
      .addColumn('run_after', 'bigint')
      .addColumn('exit_code', 'integer')
      .addColumn('error', 'text')
      .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('avoid_node_ids', 'text', (c) => c.notNull().defaultTo('[]'))
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .execute();
    // claimQueued: walks queued jobs in (created_at, id) order and stops at its LIMIT; run_after (mostly null)
    // is checked on the way. An index led by run_after would force a sort of every queued job per pass.
    await s.createIndex('jobs_claim').on('jobs').columns(['state', 'created_at', 'id']).execute();
    await s
      .createIndex('jobs_idempotency')
      .unique()
      .on('jobs')
      .columns(['buyer_id', 'idempotency_key'])
      .where(sql.ref('idempotency_key'), 'is not', null)
      .execute();
    await s.createIndex('jobs_buyer_created').on('jobs').columns(['buyer_id', 'created_at', 'id']).execute();
    await s.createIndex('jobs_created').on('jobs').columns(['created_at', 'id']).execute();

    await s
      .createTable('attempts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('job_id', 'text', (c) => c.notNull().references('jobs.id'))
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('gpu_indices', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('error', 'text')
      .addColumn('output_digest', 'text')
      .addColumn('metrics', 'text')
      .addColumn('lease_expires_at', 'bigint')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('started_at', 'bigint')
      .addColumn('finished_at', 'bigint')
      .execute();
    await s.createIndex('attempts_node_state').on('attempts').columns(['node_id', 'state']).execute();
    await s.createIndex('attempts_state_lease').on('attempts').columns(['state', 'lease_expires_at']).execute();
    await s.createIndex('attempts_job').on('attempts').column('job_id').execute();

    await s
      .createTable('nodes')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('advertisement', 'text', (c) => c.notNull())
      .addColumn('status', 'text', (c) => c.notNull())
      .addColumn('admin_state', 'text', (c) => c.notNull())
      .addColumn('simulated', 'integer', (c) => c.notNull().defaultTo(0))
      .addColumn('registered_at', 'bigint', (c) => c.notNull())
      .addColumn('last_heartbeat_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('nodes_status_heartbeat').on('nodes').columns(['status', 'last_heartbeat_at']).execute();

    await s
      .createTable('outputs')
      .addColumn('attempt_id', 'text', (c) => c.notNull().references('attempts.id'))
      .addColumn('path', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('content', 'text')
      .addPrimaryKeyConstraint('outputs_pk', ['attempt_id', 'path'])
      .execute();

    // AUTOINCREMENT (SQLite) / identity (PostgreSQL): cursors only grow, ids are never reused.
    const serial = (t: ReturnType<typeof s.createTable>, col: string) =>
      dialect === 'postgres'
        ? t.addColumn(col, 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
        : t.addColumn(col, 'integer', (c) => c.primaryKey().autoIncrement());

    await serial(s.createTable('logs'), 'id')
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('attempt_id', 'text', (c) => c.notNull().references('attempts.id'))
      .addColumn('seq', 'bigint', (c) => c.notNull())
      .addColumn('stream', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addUniqueConstraint('logs_attempt_seq', ['attempt_id', 'seq'])
      .execute();
    await s.createIndex('logs_job_id').on('logs').columns(['job_id', 'id']).execute();

    await serial(s.createTable('events'), 'seq')
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('subject', 'text', (c) => c.notNull())
      .addColumn('subject_id', 'text', (c) => c.notNull())
      .addColumn('type', 'text', (c) => c.notNull())
      .addColumn('data', 'text', (c) => c.notNull())
      .execute();
    await s.createIndex('events_subject').on('events').columns(['subject', 'subject_id', 'seq']).execute();
  },
};
