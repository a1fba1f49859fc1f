/**
 * Applying a JobTransition (chosen by the core's `decide`) to a job row inside the caller's transaction.
 * currentAttemptId: kept on terminal states (it names the attempt whose result the job carries), cleared
 * when the job is requeued. finishedAt is set on terminal states. avoidNode appends the attempt's node.
 */
import type { AttemptEnd, JobRecord, TransitionDecider } from '@gpux/core';
import { type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { selectJobRow } from './jobs.js';
import { jobFromRow } from './rows.js';
import type { Database } from './schema.js';

const isTerminal = (s: JobState) => TERMINAL_JOB_STATES.includes(s);

/** Reads the job fresh (locked on PostgreSQL), runs `decide`, writes the result. Returns the job and its events. */
export async function moveJobAfterAttempt(
  trx: Kysely<Database>,
  ctx: StoreContext,
  attempt: { id: string; jobId: string; nodeId: string },
  end: AttemptEnd,
  decide: TransitionDecider,
  now: number,
): Promise<{ job: JobRecord; events: NewEvent[] }> {
  const row = await selectJobRow(trx, ctx, attempt.jobId, true);
  if (!row) throw new Error(`invariant: attempt ${attempt.id} has no job ${attempt.jobId}`);
  const job = jobFromRow(row);
  // The job already moved on (another attempt is current, or it ended): record the attempt only.
  if (isTerminal(job.state) || job.currentAttemptId !== attempt.id) return { job, events: [] };
  const t = decide(job, end, now);
  if (t.state !== 'queued' && !isTerminal(t.state)) {
    throw new Error(`invariant: decide() returned ${t.state}; after an attempt a job is queued or finished`);
  }
  const terminal = isTerminal(t.state);
  const avoid = t.avoidNode && !job.avoidNodeIds.includes(attempt.nodeId) ? [...job.avoidNodeIds, attempt.nodeId] : job.avoidNodeIds;
  const updated = await trx
    .updateTable('jobs')
    .set({
      state: t.state,
      run_after: terminal ? null : t.runAfter,
      error: t.error,
      exit_code: t.exitCode,
      avoid_node_ids: JSON.stringify(avoid),
      current_attempt_id: terminal ? attempt.id : null,
      updated_at: now,
      finished_at: terminal ? now : null,
    })
    .where('id', '=', job.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const type = t.state === 'queued' ? 'job.requeued' : `job.${t.state}`;
  const data: Record<string, unknown> = { attemptId: attempt.id, nodeId: attempt.nodeId, error: t.error, exitCode: t.exitCode };
  if (t.state === 'queued') data.runAfter = t.runAfter;
  if (t.avoidNode) data.avoidNode = attempt.nodeId;
  return { job: jobFromRow(updated), events: [{ at: now, subject: 'job', subjectId: job.id, type, data }] };
}
