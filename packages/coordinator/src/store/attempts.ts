/**
 * Attempt verbs: read, start, finish (idempotent, with outputs), and the lease side (expire, extend). What
 * an attempt's end does (settle, stop the gang, move the job, its money, the node's record) is the core's
 * attempt-end plan, loaded and applied by attempt-end-run.ts in the verb's transaction. A lost attempt is
 * not settled further; one of a cancelled job whose lease ran to its stop_by ends as cancelled (core
 * attempt-end/ending.ts).
 */
import {
  type AttemptRecord,
  type FinishAttemptInput,
  GpuxError,
  type JobRecord,
  type LostAttempt,
  leaseHasExpired,
  leaseReachedDeadline,
  runDeadline,
  type TransitionDecider,
} from '@gpux/core';
import type { AttemptState, OutputFile } from '@gpux/protocol';
import { type Kysely, sql } from 'kysely';
import { attemptFactsFromRow } from './attempt-end-rows.js';
import { endAttemptIn } from './attempt-end-run.js';
import { deadlinesOf, inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { groupTx } from './group-commit.js';
import { selectJobRow } from './jobs.js';
import { type AttemptRow, attemptFromRow, type JobRow, jobFromRow, outputFromRow } from './rows.js';
import type { Database } from './schema.js';

const ACTIVE: AttemptState[] = ['assigned', 'running'];

function selectAttemptRow(trx: Kysely<Database>, ctx: StoreContext, id: string, lock: boolean): Promise<AttemptRow | undefined> {
  return trx
    .selectFrom('attempts')
    .selectAll()
    .where('id', '=', id)
    .$if(lock && ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/**
 * Lock order, everywhere: the job row, then its attempt rows. A gang member's end locks the job and then
 * stops its siblings; a sibling ending at the same instant must wait on the job first, or the two deadlock
 * on PostgreSQL. So the attempt's job id is read unlocked, the job locked, then the attempt.
 */
export async function lockAttempt(trx: Kysely<Database>, ctx: StoreContext, id: string): Promise<AttemptRow | undefined> {
  return (await lockAttemptAndJob(trx, ctx, id))?.row;
}

/**
 * lockAttempt, and on PostgreSQL the job row it locked first (that lock keeps it as read): the caller passes it
 * on rather than reading it again.
 */
async function lockAttemptAndJob(trx: Kysely<Database>, ctx: StoreContext, id: string): Promise<{ row: AttemptRow; jobRow?: JobRow } | undefined> {
  if (!ctx.q.forUpdate) {
    const row = await selectAttemptRow(trx, ctx, id, false);
    return row && { row };
  }
  // The job id is read unlocked inside the statement that locks the job: one round trip.
  const jobRow = await trx
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', (eb) => eb.selectFrom('attempts').select('job_id').where('id', '=', id))
    .forUpdate()
    .executeTakeFirst();
  const row = await selectAttemptRow(trx, ctx, id, true);
  return row && { row, ...(jobRow && jobRow.id === row.job_id ? { jobRow } : {}) };
}

/** The attempt's job: `locked` when the caller already holds its row (lockAttemptAndJob), else read (locked when `lock`). */
async function jobOf(trx: Kysely<Database>, ctx: StoreContext, a: AttemptRow, lock: boolean, locked?: JobRow): Promise<JobRecord> {
  const row = locked ?? (await selectJobRow(trx, ctx, a.job_id, lock));
  if (!row) throw new Error(`invariant: attempt ${a.id} has no job ${a.job_id}`);
  return jobFromRow(row);
}

export async function getAttempt(ctx: StoreContext, id: string): Promise<AttemptRecord | undefined> {
  const row = await selectAttemptRow(ctx.db, ctx, id, false);
  return row && attemptFromRow(row);
}

export async function listAttempts(ctx: StoreContext, jobId: string): Promise<AttemptRecord[]> {
  const rows = await ctx.db.selectFrom('attempts').selectAll().where('job_id', '=', jobId).orderBy('created_at').orderBy('id').execute();
  return rows.map(attemptFromRow);
}

export async function listActiveAttempts(ctx: StoreContext, nodeId?: string): Promise<AttemptRecord[]> {
  const rows = await ctx.db
    .selectFrom('attempts')
    .selectAll()
    .where('state', 'in', ACTIVE)
    .$if(nodeId !== undefined, (qb) => qb.where('node_id', '=', nodeId as string))
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map(attemptFromRow);
}

export function startAttempt(ctx: StoreContext, attemptId: string, nodeId: string, now: number): Promise<{ attempt: AttemptRecord; job: JobRecord }> {
  // Starts arriving together share one durable commit (group-commit.ts).
  return groupTx(ctx, 'start', async (trx) => {
    const locked = await lockAttemptAndJob(trx, ctx, attemptId);
    const a = locked?.row;
    if (!a || a.node_id !== nodeId) throw new GpuxError('ATTEMPT_NOT_FOUND', `attempt ${attemptId} not found for node ${nodeId}`);
    if (a.state === 'running') return { attempt: attemptFromRow(a), job: await jobOf(trx, ctx, a, false, locked?.jobRow) };
    if (a.state !== 'assigned') throw new GpuxError('CONFLICT', `attempt ${attemptId} is ${a.state}, no longer active`);
    return startAttemptIn(trx, ctx, a, now, locked?.jobRow);
  });
}

/**
 * An assigned attempt, locked by the caller (lockAttempt), starts: it runs, and its job too if it follows it.
 * `jobRow`: the job's row when the caller already holds it locked.
 */
export async function startAttemptIn(trx: Kysely<Database>, ctx: StoreContext, a: AttemptRow, now: number, jobRow?: JobRow): Promise<{ attempt: AttemptRecord; job: JobRecord }> {
  const leader = a.gang_leader ?? a.id;
  // Without the job's row in hand, its move (below) is tried first as a conditional update returning the row:
  // one read less when the job follows this attempt. startedAt keeps the first start across retries.
  const moved = jobRow
    ? undefined
    : await trx
        .updateTable('jobs')
        .set({ state: 'running', started_at: sql<number>`coalesce(started_at, ${now})`, updated_at: now })
        .where('id', '=', a.job_id)
        .where('state', '=', 'assigned')
        .where('current_attempt_id', '=', leader)
        .returningAll()
        .executeTakeFirst();
  let job = moved ? jobFromRow(moved) : await jobOf(trx, ctx, a, true, jobRow);
  // From now on the job's timeout counts: no heartbeat leases the attempt past this (store nodes.ts heartbeat).
  const started = await trx
    .updateTable('attempts')
    .set({ state: 'running', started_at: now, deadline_at: runDeadline(now, job.spec.timeoutSeconds, deadlinesOf(ctx)) })
    .where('id', '=', a.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  if (!moved && job.state === 'assigned' && job.currentAttemptId === leader) {
    const row = await trx
      .updateTable('jobs')
      .set({ state: 'running', started_at: job.startedAt ?? now, updated_at: now })
      .where('id', '=', job.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    job = jobFromRow(row);
  }
  await insertEvents(trx, ctx, [{ at: now, subject: 'job', subjectId: job.id, type: 'attempt.started', data: { attemptId: a.id, nodeId: a.node_id } }]);
  return { attempt: attemptFromRow(started), job };
}

function checkOutputs(outputs: OutputFile[]): void {
  const seen = new Set<string>();
  for (const f of outputs) {
    if (seen.has(f.path)) throw new GpuxError('REQUEST_INVALID', `output path ${f.path} appears twice`, { problems: [{ path: 'outputs', message: `duplicate path ${f.path}` }] });
    seen.add(f.path);
  }
}

export function finishAttempt(
  ctx: StoreContext,
  input: FinishAttemptInput,
  decide: TransitionDecider,
): Promise<{ attempt: AttemptRecord; job: JobRecord; duplicate: boolean }> {
  checkOutputs(input.outputs);
  // SQLite: ends arriving together share one durable commit (group-commit.ts says why not on PostgreSQL).
  const tx = <T>(fn: (trx: Kysely<Database>) => Promise<T>) => (ctx.q.dialect === 'sqlite' ? groupTx(ctx, 'result', fn) : inTx(ctx, fn));
  return tx(async (trx) => {
    const locked = await lockAttemptAndJob(trx, ctx, input.attemptId);
    const a = locked?.row;
    if (!a || a.node_id !== input.nodeId) throw new GpuxError('ATTEMPT_NOT_FOUND', `attempt ${input.attemptId} not found for node ${input.nodeId}`);
    const jobRow = locked?.jobRow;
    if (!ACTIVE.includes(a.state as AttemptState)) {
      // Ended with a signed commitment: only the very same commitment repeats it; another one is a conflict
      // (and, validly signed, equivocation: services/agent.ts records it after this refusal).
      if (a.commitment && input.commitment !== undefined) {
        if (a.commitment === input.commitment && a.state === input.outcome) return { attempt: attemptFromRow(a), job: await jobOf(trx, ctx, a, false, jobRow), duplicate: true };
        throw new GpuxError('CONFLICT', `attempt ${input.attemptId} already ended as ${a.state} with another signed commitment; a different result cannot replace it`);
      }
      // A cancelled attempt the coordinator ended (cancel grace, gang stop) has no digest: any late 'cancelled' repeats it.
      if (a.state === input.outcome && (a.output_digest === input.outputDigest || a.state === 'cancelled')) {
        return { attempt: attemptFromRow(a), job: await jobOf(trx, ctx, a, false, jobRow), duplicate: true };
      }
      const why = a.state === 'lost' ? ' (its lease expired first)' : '';
      throw new GpuxError('CONFLICT', `attempt ${input.attemptId} already ended as ${a.state}${why}; a different result cannot replace it`);
    }
    const cause = {
      kind: 'report' as const,
      outcome: input.outcome,
      exitCode: input.exitCode,
      error: input.error,
      outputDigest: input.outputDigest,
      metrics: input.metrics,
      ...(input.commitment !== undefined ? { commitment: input.commitment } : {}),
      ...(input.commitmentSignature !== undefined ? { commitmentSignature: input.commitmentSignature } : {}),
    };
    const ended = await endAttemptIn(trx, ctx, {
      row: a,
      ...(jobRow ? { jobRow } : {}),
      cause,
      decide,
      now: input.now,
      outputs: input.outputs,
      ...(input.auditDraw !== undefined ? { auditDraw: input.auditDraw } : {}),
    });
    return { attempt: ended.attempt, job: ended.job, duplicate: false };
  });
}

/** Store.refuseAttempt: only this node's attempt, only while assigned; checked under the attempt's lock. */
export function refuseAttempt(
  ctx: StoreContext,
  input: { attemptId: string; nodeId: string; reason: string; now: number },
  decide: TransitionDecider,
): Promise<{ ended: false } | { ended: true; job: JobRecord }> {
  return inTx(ctx, async (trx) => {
    const locked = await lockAttemptAndJob(trx, ctx, input.attemptId);
    const a = locked?.row;
    if (!a || a.node_id !== input.nodeId || a.state !== 'assigned') return { ended: false as const };
    const jobRow = locked?.jobRow;
    const ended = await endAttemptIn(trx, ctx, { row: a, ...(jobRow ? { jobRow } : {}), cause: { kind: 'refused', reason: input.reason }, decide, now: input.now });
    return { ended: true as const, job: ended.job };
  });
}

export async function getOutputs(ctx: StoreContext, attemptId: string): Promise<OutputFile[]> {
  const rows = await ctx.db.selectFrom('outputs').selectAll().where('attempt_id', '=', attemptId).orderBy('path').execute();
  return rows.map(outputFromRow);
}

export { CANCEL_GRACE_EXPIRED, LEASE_EXPIRED } from '@gpux/core';

/**
 * Candidates are read unlocked; each is then ended in a transaction of its own that takes the job, its
 * attempt and then the node's track record, the lock order every other path follows, so expiry never
 * deadlocks with results arriving for the same jobs or node. The expiry is checked again under the lock:
 * a result, or another coordinator's expiry pass, may have ended the attempt meanwhile.
 */
export async function expireLeases(ctx: StoreContext, now: number, decide: TransitionDecider, limit: number): Promise<LostAttempt[]> {
  const candidates = await ctx.db
    .selectFrom('attempts')
    .select(['id', 'job_id'])
    .where('state', 'in', ACTIVE)
    .where('lease_expires_at', '<', now)
    .orderBy('lease_expires_at')
    .limit(Math.max(0, Math.floor(limit)))
    .execute();
  const lost: LostAttempt[] = [];
  for (const c of candidates) {
    const one = await inTx(ctx, async (trx): Promise<LostAttempt | undefined> => {
      const jobRow = ctx.q.forUpdate ? await selectJobRow(trx, ctx, c.job_id, true) : undefined;
      const a = await selectAttemptRow(trx, ctx, c.id, true);
      if (!a) return undefined;
      const facts = attemptFactsFromRow(a);
      if (!leaseHasExpired(facts, now)) return undefined;
      const locked = jobRow && jobRow.id === a.job_id ? { jobRow } : {};
      const ended = await endAttemptIn(trx, ctx, { row: a, ...locked, cause: { kind: 'lease-expired' }, decide, now });
      const outcome = ended.plan.end.outcome as LostAttempt['outcome'];
      const deadline = outcome === 'lost' && leaseReachedDeadline(facts);
      return { attemptId: a.id, jobId: a.job_id, nodeId: a.node_id, jobState: ended.job.state, outcome, ...(deadline ? { cause: 'deadline' as const } : {}) };
    });
    if (one) lost.push(one);
  }
  return lost;
}

/**
 * A restart grants every active lease at least `minExpiresAt`, past its deadline too (heartbeats then
 * never shorten it): a node that finished while the coordinator was away can still report. A cancelled
 * job's attempt is still never leased past its stop_by (that end costs the node nothing).
 */
export async function extendActiveLeases(ctx: StoreContext, minExpiresAt: number): Promise<number> {
  const res = await ctx.db
    .updateTable('attempts')
    .set({ lease_expires_at: sql<number>`case when stop_by is not null and stop_by < ${minExpiresAt} then stop_by else ${minExpiresAt} end` })
    .where('state', 'in', ACTIVE)
    .where((eb) => eb.or([eb('lease_expires_at', 'is', null), eb('lease_expires_at', '<', minExpiresAt)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}
