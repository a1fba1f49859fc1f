/**
 * Migration 0012: canaries (issue 11, TRUST.md layer 6). FROZEN once it lands.
 * - canary_specs: the catalog of known answers, from buyers' jobs whose verification passed audited (two
 *   independent operators agreed): the full spec and payment terms, the output digest and exit code, the
 *   operators that produced it (JSON), how often it was issued; unique by spec digest, trimmed to the newest N;
 * - canary_runs: one row per canary job (the known answer copied, so a trimmed or dropped entry keeps its
 *   evidence), its state ('running' | 'refereeing' | 'passed' | 'failed' | 'dropped' | 'no-result'), the node's
 *   result and the referees it took; indexed by state (reconciling, stats) and by catalog entry (its earlier
 *   runs' operators are avoided);
 * - canary_cursor: the one row saying up to which verification (created_at, job_id) the issuing pass drew;
 * - verifications (created_at, job_id): the pass reads the next ones after its cursor.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0012: Migration = {
  name: '0012-canaries',
  async up(db: Kysely<unknown>, dialect): Promise<void> {
    const s = db.schema;
    const real = dialect === 'postgres' ? 'double precision' : 'real';
    await s
      .createTable('canary_specs')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('spec_digest', 'text', (c) => c.notNull().unique())
      .addColumn('source_job_id', 'text', (c) => c.notNull())
      .addColumn('spec', 'text', (c) => c.notNull())
      .addColumn('payment', 'text', (c) => c.notNull())
      .addColumn('output_digest', 'text', (c) => c.notNull())
      .addColumn('exit_code', 'integer')
      .addColumn('operators', 'text', (c) => c.notNull())
      .addColumn('uses', 'integer', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('canary_specs_created').on('canary_specs').columns(['created_at', 'id']).execute();
    await s
      .createTable('canary_runs')
      .addColumn('job_id', 'text', (c) => c.primaryKey())
      .addColumn('spec_id', 'text', (c) => c.notNull())
      .addColumn('source_job_id', 'text', (c) => c.notNull())
      .addColumn('buyer_id', 'text', (c) => c.notNull())
      .addColumn('drawn_for', 'text', (c) => c.notNull())
      .addColumn('draw', real, (c) => c.notNull())
      .addColumn('known_digest', 'text', (c) => c.notNull())
      .addColumn('known_exit_code', 'integer')
      .addColumn('known_operators', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('attempt_id', 'text')
      .addColumn('node_id', 'text')
      .addColumn('provider_id', 'text')
      .addColumn('output_digest', 'text')
      .addColumn('exit_code', 'integer')
      .addColumn('referees', 'integer', (c) => c.notNull())
      .addColumn('verdict', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('resolved_at', 'bigint')
      .execute();
    await s.createIndex('canary_runs_state').on('canary_runs').columns(['state', 'resolved_at']).execute();
    await s.createIndex('canary_runs_spec').on('canary_runs').columns(['spec_id']).execute();
    await s
      .createTable('canary_cursor')
      .addColumn('id', 'integer', (c) => c.primaryKey())
      .addColumn('after_at', 'bigint', (c) => c.notNull())
      .addColumn('after_job_id', 'text', (c) => c.notNull())
      .execute();
    await s.createIndex('verifications_created').on('verifications').columns(['created_at', 'job_id']).execute();
  },
};
