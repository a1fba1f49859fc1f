/**
 * Migration 0007: what the scheduling pass needs without reading whole specs (issue 10 item 7). FROZEN once
 * it lands.
 * - jobs.spec_payload: a job's command, args, env, labels and inline inputs (up to 64 KiB + 1 MiB), out of
 *   `spec`, which keeps the rest (the scheduling view: a few hundred bytes). The claims read `spec` and
 *   never spec_payload. Added last, so on SQLite the other columns are read without walking its overflow
 *   pages; on PostgreSQL it is TOASTed apart. Null: `spec` is whole (finished jobs from before).
 * Unfinished jobs are split here, in batches.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

const PAYLOAD = ['command', 'args', 'env', 'labels', 'inputs'];
const BATCH = 200;

/** A frozen copy of rows.ts specColumns as of this migration. */
function split(specText: string): { spec: string; spec_payload: string } {
  const view = JSON.parse(specText) as Record<string, unknown>;
  const payload: Record<string, unknown> = {};
  for (const k of PAYLOAD) {
    payload[k] = view[k];
    delete view[k];
  }
  return { spec: JSON.stringify(view), spec_payload: JSON.stringify(payload) };
}

export const migration0007: Migration = {
  name: '0007-queue',
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('jobs').addColumn('spec_payload', 'text').execute();
    const d = db as unknown as Kysely<{ jobs: { id: string; spec: string; state: string; spec_payload: string | null } }>;
    let after = '';
    for (;;) {
      const rows = await d
        .selectFrom('jobs')
        .select(['id', 'spec'])
        .where('state', 'in', ['queued', 'assigned', 'running'])
        .where('id', '>', after)
        .orderBy('id')
        .limit(BATCH)
        .execute();
      for (const r of rows) await d.updateTable('jobs').set(split(r.spec)).where('id', '=', r.id).execute();
      if (rows.length < BATCH) break;
      after = rows[rows.length - 1]?.id ?? after;
    }
  },
};
