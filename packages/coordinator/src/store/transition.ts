/**
 * The job and gang rows of an attempt's end (core attempt-end/plan.ts decides; this file reads and writes):
 * the gang siblings still active (locked after the job row, by id, like every attempt row), a sibling the
 * plan stops (cancelled, with its final settled totals; its agent hears it on the next heartbeat), and the
 * job row as the plan's transition leaves it.
 */
import type { JobRowUpdate, SiblingStop } from '@gpux/core';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { AttemptRow, JobRow } from './rows.js';
import type { Database } from './schema.js';

const ACTIVE = ['assigned', 'running'];

/** The other active members of attempt `a`'s gang, locked, by id. */
export function activeSiblingsIn(trx: Kysely<Database>, ctx: StoreContext, a: { id: string; jobId: string; gangLeader: string }): Promise<AttemptRow[]> {
  return trx
    .selectFrom('attempts')
    .selectAll()
    .where('job_id', '=', a.jobId)
    .where('gang_leader', '=', a.gangLeader)
    .where('state', 'in', ACTIVE)
    .where('id', '!=', a.id)
    .orderBy('id')
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .execute();
}

export async function stopSiblingIn(trx: Kysely<Database>, stop: SiblingStop, now: number): Promise<void> {
  const settled = stop.settlement ? { settled_charged: stop.settlement.charged, settled_fee: stop.settlement.fee, settled_ms: stop.settlement.settledMs } : {};
  await trx
    .updateTable('attempts')
    .set({ state: 'cancelled', error: stop.error, lease_expires_at: null, finished_at: now, ...settled })
    .where('id', '=', stop.attemptId)
    .where('state', 'in', ACTIVE)
    .execute();
}

export function writeJobMoveIn(trx: Kysely<Database>, jobId: string, row: JobRowUpdate): Promise<JobRow> {
  return trx
    .updateTable('jobs')
    .set({
      state: row.state,
      run_after: row.runAfter,
      error: row.error,
      exit_code: row.exitCode,
      avoid_node_ids: JSON.stringify(row.avoidNodeIds),
      current_attempt_id: row.currentAttemptId,
      updated_at: row.updatedAt,
      finished_at: row.finishedAt,
    })
    .where('id', '=', jobId)
    .returningAll()
    .executeTakeFirstOrThrow();
}
