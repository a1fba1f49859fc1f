/**
 * Applying a JobTransition (chosen by the core's `decide`) to a job row inside the caller's transaction.
 * currentAttemptId: kept on terminal states (it names the attempt whose result the job carries), cleared
 * when the job is requeued. finishedAt is set on terminal states. avoidNode appends the attempt's node.
 *
 * Gang members (attempts with gang_leader): the job's currentAttemptId is the leader's. A member that
 * succeeds moves the job only if it is the last active member; any other end moves the job at once and
 * ends the still-active members as cancelled (their agents hear it on the next heartbeat).
 *
 * Money (jobs with payment): members ended here are settled for the time they ran (their stop is not their
 * fault), then settlement.ts's jobMoneyAfterDecision releases a finished job's escrow or tops a requeued
 * job's escrow up, and may turn the requeue into a failure when the buyer's wallet cannot cover it; the
 * job row is written with the transition that step returns. The ending attempt itself is settled by the
 * caller before this runs.
 */
import type { AttemptEnd, JobRecord, JobTransition, TransitionDecider } from '@gpux/core';
import { type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { selectJobRow } from './jobs.js';
import { jobFromRow } from './rows.js';
import type { Database } from './schema.js';
import { jobMoneyAfterDecision, settleAttemptIn } from './settlement.js';

const isTerminal = (s: JobState) => TERMINAL_JOB_STATES.includes(s);

/** Reads the job fresh (locked on PostgreSQL), runs `decide`, writes the result. Returns the job and its events. */
export async function moveJobAfterAttempt(
  trx: Kysely<Database>,
  ctx: StoreContext,
  attempt: { id: string; jobId: string; nodeId: string; gangLeader?: string | null },
  end: AttemptEnd,
  decide: TransitionDecider,
  now: number,
): Promise<{ job: JobRecord; events: NewEvent[] }> {
  const row = await selectJobRow(trx, ctx, attempt.jobId, true);
  if (!row) throw new Error(`invariant: attempt ${attempt.id} has no job ${attempt.jobId}`);
  const job = jobFromRow(row);
  const current = attempt.gangLeader ?? attempt.id;
  // The job already moved on (another attempt is current, or it ended): record the attempt only.
  if (isTerminal(job.state) || job.currentAttemptId !== current) return { job, events: [] };
  const gangEvents: NewEvent[] = [];
  if (attempt.gangLeader) {
    const active = trx
      .selectFrom('attempts')
      .select('id')
      .where('job_id', '=', job.id)
      .where('gang_leader', '=', attempt.gangLeader)
      .where('state', 'in', ['assigned', 'running'])
      .where('id', '!=', attempt.id);
    if (end.outcome === 'succeeded') {
      if ((await active.execute()).length > 0) return { job, events: [] };
    } else {
      const error = `gang member ${attempt.id} ended (${end.outcome}); the gang stops`;
      const stopped = await trx
        .updateTable('attempts')
        .set({ state: 'cancelled', error, lease_expires_at: null, finished_at: now })
        .where('job_id', '=', job.id)
        .where('gang_leader', '=', attempt.gangLeader)
        .where('state', 'in', ['assigned', 'running'])
        .returningAll()
        .execute();
      if (stopped.length > 0) {
        gangEvents.push({ at: now, subject: 'job', subjectId: job.id, type: 'gang.stopped', data: { cause: attempt.id, attemptIds: stopped.map((r) => r.id).sort() } });
      }
      stopped.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      for (const r of stopped) gangEvents.push(...(await settleAttemptIn(trx, ctx, r, job.spec.timeoutSeconds, now)).events);
    }
  }
  let t: JobTransition = decide(job, end, now);
  if (t.state !== 'queued' && !isTerminal(t.state)) {
    throw new Error(`invariant: decide() returned ${t.state}; after an attempt a job is queued or finished`);
  }
  let moneyEvents: NewEvent[] = [];
  if (job.payment) ({ t, events: moneyEvents } = await jobMoneyAfterDecision(trx, ctx, { ...job, payment: job.payment }, t, now));
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
      current_attempt_id: terminal ? current : null,
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
  return { job: jobFromRow(updated), events: [...gangEvents, { at: now, subject: 'job', subjectId: job.id, type, data }, ...moneyEvents] };
}
