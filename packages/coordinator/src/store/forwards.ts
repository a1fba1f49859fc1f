/**
 * Forwarded jobs (issue 15; core store/forwards.ts is the contract). At home a forward is an ordinary attempt on the
 * pseudo node peer:<id> (no nodes row, no price), written by the assignment's own code, plus a `forwards` row; its
 * start, logs and end go through the attempt verbs' own paths (startAttemptIn, appendLogsIn, endAttemptIn), so the
 * job moves, retries and releases its escrow as for any attempt. At the peer a forwarded job is a submission
 * (submitJobIn) whose hold is drawn on the home's credit line first. The money is forwards-money.ts'.
 *
 * Lock order, as every attempt verb: the job row, then the attempt, then its forwards row, then money rows.
 */
import {
  type AttemptRecord,
  type FinishForwardInput,
  type ForwardCounts,
  type ForwardProgress,
  type ForwardRecord,
  type ForwardState,
  GpuxError,
  type JobRecord,
  type NewJob,
  peerBuyerId,
  peerNodeId,
  type TransitionDecider,
} from '@gpux/core';
import { type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { type Kysely, type Selectable, sql } from 'kysely';
import { lockAttempt, startAttemptIn } from './attempts.js';
import { endAttemptIn } from './attempt-end-run.js';
import { inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { chargeForwardIn, drawPeerCreditIn, writeOffForwardIn } from './forwards-money.js';
import { groupTx } from './group-commit.js';
import { selectJobRow, submitJobIn } from './jobs.js';
import { appendLogsIn } from './logs.js';
import { assignIn } from './queue.js';
import { type AttemptRow, jobFromRow } from './rows.js';
import type { Database, ForwardsTable } from './schema.js';

export { clearingBalances, returnPeerCredit } from './forwards-money.js';

const ACTIVE = ['assigned', 'running'];
/** A stored contact error is cut to this many characters (it may quote the peer's answer). */
const ERROR_MAX = 1024;

type ForwardRow = Selectable<ForwardsTable>;
const num = (v: number | null): number | null => (v === null ? null : Number(v));

function forwardFromRow(r: ForwardRow): ForwardRecord {
  return {
    attemptId: r.attempt_id,
    jobId: r.job_id,
    peerId: r.peer_id,
    remoteJobId: r.remote_job_id,
    state: r.state as ForwardState,
    logCursor: Number(r.log_cursor),
    charged: num(r.charged),
    reason: r.reason,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    lastContactAt: num(r.last_contact_at),
    lastError: r.last_error,
  };
}

function selectForwardRow(trx: Kysely<Database>, ctx: StoreContext, attemptId: string, lock: boolean): Promise<ForwardRow | undefined> {
  return trx
    .selectFrom('forwards')
    .selectAll()
    .where('attempt_id', '=', attemptId)
    .$if(lock && ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/** The forwarded attempt and its forwards row, locked in the lock order; ATTEMPT_NOT_FOUND when either is missing. */
async function lockForward(trx: Kysely<Database>, ctx: StoreContext, attemptId: string): Promise<{ a: AttemptRow; fw: ForwardRow }> {
  const a = await lockAttempt(trx, ctx, attemptId);
  const fw = a && (await selectForwardRow(trx, ctx, attemptId, true));
  if (!a || !fw) throw new GpuxError('ATTEMPT_NOT_FOUND', `attempt ${attemptId} is not a forwarded attempt`);
  return { a, fw };
}

async function jobOf(trx: Kysely<Database>, ctx: StoreContext, jobId: string): Promise<JobRecord> {
  const row = await selectJobRow(trx, ctx, jobId, true);
  if (!row) throw new Error(`invariant: forwarded job ${jobId} has no row`);
  return jobFromRow(row);
}

export function forwardJob(
  ctx: StoreContext,
  q: { jobId: string; attemptId: string; peerId: string; reason: string; now: number; leaseExpiresAt: number },
): Promise<{ attempt: AttemptRecord; job: JobRecord } | undefined> {
  return inTx(ctx, async (trx) => {
    const row = await selectJobRow(trx, ctx, q.jobId, true);
    if (row?.state !== 'queued' || Number(row.cancel_requested) === 1) return undefined;
    // The assignment's own write (conditional on queued): attempt count, current attempt, job.assigned.
    const [attempt] = await assignIn(trx, ctx, [{ jobId: q.jobId, attemptId: q.attemptId, nodeId: peerNodeId(q.peerId), gpuIndices: [], leaseExpiresAt: q.leaseExpiresAt }], q.now);
    if (!attempt) return undefined;
    await trx
      .insertInto('forwards')
      .values({ attempt_id: q.attemptId, job_id: q.jobId, peer_id: q.peerId, remote_job_id: null, state: 'sending', log_cursor: 0, charged: null, reason: q.reason, created_at: q.now, updated_at: q.now, last_contact_at: null, last_error: null })
      .execute();
    await insertEvents(trx, ctx, [{ at: q.now, subject: 'job', subjectId: q.jobId, type: 'job.forwarded', data: { attemptId: q.attemptId, peerId: q.peerId, reason: q.reason } }]);
    return { attempt, job: await jobOf(trx, ctx, q.jobId) };
  });
}

/**
 * A contact's lease, as a heartbeat grants it (store nodes.ts): never past the attempt's stop_by (the buyer cancelled)
 * nor, once it runs, past its deadline (a lease already beyond is kept). No start grace: the peer may queue the job.
 */
function renewLeaseIn(trx: Kysely<Database>, attemptId: string, leaseExpiresAt: number) {
  return trx
    .updateTable('attempts')
    .set({
      lease_expires_at: sql<number>`case
        when stop_by is not null and stop_by < ${leaseExpiresAt} then stop_by
        when deadline_at is not null and deadline_at < ${leaseExpiresAt} then (case when lease_expires_at > deadline_at then lease_expires_at else deadline_at end)
        else ${leaseExpiresAt} end`,
    })
    .where('id', '=', attemptId)
    .execute();
}

export function recordForwardProgress(ctx: StoreContext, q: ForwardProgress): Promise<'ok' | 'fenced'> {
  return inTx(ctx, async (trx) => {
    const { a, fw } = await lockForward(trx, ctx, q.attemptId);
    const contact = q.error !== undefined ? { last_error: q.error.slice(0, ERROR_MAX) } : { last_contact_at: q.now, last_error: null };
    // The first id the peer gave stays: the same home attempt is the same job there (its idempotency key).
    const remote = fw.remote_job_id === null && q.remoteJobId !== undefined ? { remote_job_id: q.remoteJobId } : {};
    const update = (set: Partial<Omit<ForwardRow, 'attempt_id'>>) =>
      trx
        .updateTable('forwards')
        .set({ ...contact, ...remote, ...set, updated_at: q.now })
        .where('attempt_id', '=', q.attemptId)
        .execute();
    if (!ACTIVE.includes(a.state) || fw.state === 'ended' || fw.state === 'fenced') {
      await update({ state: fw.state === 'ended' ? 'ended' : 'fenced' });
      return 'fenced';
    }
    if (q.error !== undefined) {
      await update({});
      return 'ok';
    }
    let state = fw.state as ForwardState;
    if (state === 'sending' && (fw.remote_job_id !== null || q.remoteJobId !== undefined)) state = 'sent';
    if (q.running) {
      if (a.state === 'assigned') await startAttemptIn(trx, ctx, a, q.now);
      state = 'running';
    }
    if (q.logs && q.logs.length > 0) await appendLogsIn(trx, ctx, a.job_id, a.id, q.logs);
    if (q.leaseExpiresAt !== undefined) await renewLeaseIn(trx, a.id, q.leaseExpiresAt);
    const cursor = q.logCursor !== undefined ? { log_cursor: Math.max(Number(fw.log_cursor), q.logCursor) } : {};
    await update({ state, ...cursor });
    return 'ok';
  });
}

export function finishForward(ctx: StoreContext, q: FinishForwardInput, decide: TransitionDecider): Promise<{ status: 'ended' | 'fenced' | 'duplicate'; job: JobRecord }> {
  if (!Number.isSafeInteger(q.charged) || q.charged < 0) throw new GpuxError('REQUEST_INVALID', `a forwarded job's bill must be a whole number of minor units ≥ 0, not ${q.charged}`);
  return inTx(ctx, async (trx) => {
    const { a, fw } = await lockForward(trx, ctx, q.attemptId);
    const job = await jobOf(trx, ctx, a.job_id);
    if (fw.state === 'ended') return { status: 'duplicate' as const, job };
    const money = { job, attemptId: a.id, peerId: fw.peer_id, bill: q.charged, now: q.now };
    let out: { status: 'ended' | 'fenced'; job: JobRecord };
    if (ACTIVE.includes(a.state)) {
      // The charge first: the end below releases what the escrow still holds (a finished job) or tops it up (a retry).
      const events = await chargeForwardIn(trx, ctx, money);
      await insertEvents(trx, ctx, events);
      // The peer node's output digest, but no signed commitment (its nodes committed to the peer, for the peer's
      // job and attempt ids): nothing here to verify or audit. The runtime is what the home saw of it, from the
      // peer's start to this report.
      const metrics = { durationMs: a.started_at === null ? 0 : Math.max(0, q.now - Number(a.started_at)) };
      const cause = { kind: 'report' as const, outcome: q.outcome, exitCode: q.exitCode, error: q.error, outputDigest: q.outputDigest ?? '', metrics };
      const ended = await endAttemptIn(trx, ctx, { row: a, cause, decide, now: q.now, ...(q.outputs ? { outputs: q.outputs } : {}) });
      out = { status: 'ended', job: ended.job };
    } else {
      await insertEvents(trx, ctx, await writeOffForwardIn(trx, ctx, money));
      out = { status: 'fenced', job };
    }
    await trx
      .updateTable('forwards')
      .set({ state: 'ended', charged: q.charged, updated_at: q.now, last_contact_at: q.now, last_error: null })
      .where('attempt_id', '=', q.attemptId)
      .execute();
    return out;
  });
}

export async function getForward(ctx: StoreContext, attemptId: string): Promise<ForwardRecord | undefined> {
  const row = await selectForwardRow(ctx.db, ctx, attemptId, false);
  return row && forwardFromRow(row);
}

/** Never contacted first (they wait for their first send), then the oldest contact. */
export async function listOpenForwards(ctx: StoreContext, limit: number): Promise<ForwardRecord[]> {
  const rows = await ctx.db
    .selectFrom('forwards')
    .selectAll()
    .where('state', '!=', 'ended')
    .orderBy('last_contact_at', (ob) => ob.asc().nullsFirst())
    .orderBy('created_at')
    .orderBy('attempt_id')
    .limit(Math.max(0, Math.floor(limit)))
    .execute();
  return rows.map(forwardFromRow);
}

export async function listJobForwards(ctx: StoreContext, jobId: string): Promise<ForwardRecord[]> {
  const rows = await ctx.db.selectFrom('forwards').selectAll().where('job_id', '=', jobId).orderBy('created_at').orderBy('attempt_id').execute();
  return rows.map(forwardFromRow);
}

export function acceptForwardedJob(ctx: StoreContext, job: NewJob, q: { peerId: string; creditLimit: number }): Promise<{ job: JobRecord; created: boolean }> {
  if (job.buyerId !== peerBuyerId(q.peerId)) throw new Error(`invariant: a job forwarded by ${q.peerId} runs as ${peerBuyerId(q.peerId)}, not ${job.buyerId}`);
  if (job.idempotencyKey === null) throw new Error(`invariant: a forwarded job's idempotency key is its home attempt id`);
  // A submission like any (group commit, idempotent per buyer and key), its credit drawn right before its hold.
  return groupTx(ctx, 'submit', (trx) => submitJobIn(trx, ctx, job, (t) => drawPeerCreditIn(t, ctx, job, q)));
}

/** Per peer: forwards rows sent (open: not ended), jobs received as buyer region:<peer> (open: not finished). */
export async function forwardCounts(ctx: StoreContext): Promise<ForwardCounts[]> {
  const sent = await ctx.db
    .selectFrom('forwards')
    .select((eb) => ['peer_id', eb.fn.countAll<number>().as('n'), eb.fn.sum<number>(eb.case().when('state', '!=', 'ended').then(1).else(0).end()).as('open')])
    .groupBy('peer_id')
    .execute();
  const buyer = peerBuyerId('');
  // One range of the jobs' (buyer_id, idempotency_key) index (';' is the character after ':').
  const received = await ctx.db
    .selectFrom('jobs')
    .select((eb) => ['buyer_id', eb.fn.countAll<number>().as('n'), eb.fn.sum<number>(eb.case().when('state', 'not in', [...TERMINAL_JOB_STATES] as JobState[]).then(1).else(0).end()).as('open')])
    .where('buyer_id', '>=', buyer)
    .where('buyer_id', '<', `${buyer.slice(0, -1)};`)
    .groupBy('buyer_id')
    .execute();
  const byPeer = new Map<string, ForwardCounts>();
  const of = (peerId: string) => byPeer.get(peerId) ?? byPeer.set(peerId, { peerId, sent: 0, received: 0, open: 0 }).get(peerId) as ForwardCounts;
  for (const r of sent) {
    const c = of(r.peer_id);
    c.sent = Number(r.n);
    c.open += Number(r.open);
  }
  for (const r of received) {
    const c = of(r.buyer_id.slice(buyer.length));
    c.received = Number(r.n);
    c.open += Number(r.open);
  }
  return [...byPeer.values()].sort((x, y) => (x.peerId < y.peerId ? -1 : x.peerId > y.peerId ? 1 : 0));
}
