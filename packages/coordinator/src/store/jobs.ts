/** Job verbs: submit (idempotent, holding the job's escrow), read, list, cancel (releasing it), count. */
import { GpuxError, type JobRecord, jobPriority, type NewJob, type Page, PRIORITY_RANK } from '@gpux/core';
import { JOB_STATES, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { insertEvents } from './events.js';
import { type JobRow, jobFromRow, paymentColumns } from './rows.js';
import type { Database } from './schema.js';
import { holdEscrowIn, releaseEscrowIn } from './settlement.js';

export const CANCELLED_BY_BUYER = 'cancelled by the buyer';

/** Read one job row; on PostgreSQL locks it for the rest of the transaction when `lock` is set. */
export function selectJobRow(trx: Kysely<Database>, ctx: StoreContext, id: string, lock: boolean): Promise<JobRow | undefined> {
  return trx
    .selectFrom('jobs')
    .selectAll()
    .where('id', '=', id)
    .$if(lock && ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

function findByKey(trx: Kysely<Database>, buyerId: string, key: string): Promise<JobRow | undefined> {
  return trx.selectFrom('jobs').selectAll().where('buyer_id', '=', buyerId).where('idempotency_key', '=', key).executeTakeFirst();
}

export function submitJob(ctx: StoreContext, job: NewJob): Promise<{ job: JobRecord; created: boolean }> {
  return inTx(ctx, async (trx) => {
    const key = job.idempotencyKey;
    if (key !== null) {
      const existing = await findByKey(trx, job.buyerId, key);
      if (existing) return { job: jobFromRow(existing), created: false };
    }
    const row: JobRow = {
      id: job.id,
      buyer_id: job.buyerId,
      name: job.spec.name,
      state: 'queued',
      spec: JSON.stringify(job.spec),
      idempotency_key: key,
      attempt_count: 0,
      current_attempt_id: null,
      run_after: null,
      exit_code: null,
      error: null,
      cancel_requested: 0,
      avoid_node_ids: '[]',
      priority: PRIORITY_RANK[jobPriority(job.spec)],
      ...paymentColumns(job.payment),
      created_at: job.now,
      updated_at: job.now,
      started_at: null,
      finished_at: null,
    };
    // A concurrent submit with the same key (PostgreSQL) makes this insert a no-op; then read the winner.
    const inserted = await trx
      .insertInto('jobs')
      .values(row)
      .$if(key !== null, (qb) => qb.onConflict((oc) => oc.columns(['buyer_id', 'idempotency_key']).where('idempotency_key', 'is not', null).doNothing()))
      .returning('id')
      .executeTakeFirst();
    if (!inserted && key !== null) {
      const winner = await findByKey(trx, job.buyerId, key);
      if (winner) return { job: jobFromRow(winner), created: false };
    }
    if (!inserted) throw new GpuxError('CONFLICT', `job ${job.id} could not be inserted`);
    // Only a new job holds: a short wallet throws INSUFFICIENT_FUNDS and the insert above rolls back with it.
    await holdEscrowIn(trx, job);
    await insertEvents(trx, ctx, [
      { at: job.now, subject: 'job', subjectId: job.id, type: 'job.submitted', data: { buyerId: job.buyerId, name: job.spec.name, idempotencyKey: key } },
    ]);
    return { job: jobFromRow(row), created: true };
  });
}

export async function getJob(ctx: StoreContext, id: string): Promise<JobRecord | undefined> {
  const row = await selectJobRow(ctx.db, ctx, id, false);
  return row && jobFromRow(row);
}

export async function getJobs(ctx: StoreContext, ids: readonly string[]): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  for (const part of chunks([...new Set(ids)], 1, ctx.q)) {
    const rows = await ctx.db.selectFrom('jobs').selectAll().where('id', 'in', part).execute();
    out.push(...rows.map(jobFromRow));
  }
  return out;
}

/** Newest first, keyset-paginated on (created_at, id). An empty `states` list means no state filter. */
export async function listJobs(
  ctx: StoreContext,
  q: { buyerId?: string; states?: JobState[]; limit: number; cursor?: string },
): Promise<Page<JobRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('jobs').selectAll();
  if (q.buyerId !== undefined) qb = qb.where('buyer_id', '=', q.buyerId);
  if (q.states && q.states.length > 0) qb = qb.where('state', 'in', q.states);
  if (q.cursor) {
    const [at, id] = decodeCursor(q.cursor, ['number', 'string'] as const);
    qb = qb.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('id', '<', id)])]));
  }
  const rows = await qb
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit).map(jobFromRow);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.createdAt, last.id]) : null };
}

export function requestCancel(ctx: StoreContext, jobId: string, now: number): Promise<{ job: JobRecord; stopAttemptIds: string[] }> {
  return inTx(ctx, async (trx) => {
    const row = await selectJobRow(trx, ctx, jobId, true);
    if (!row) throw new GpuxError('JOB_NOT_FOUND', `job ${jobId} not found`);
    if (TERMINAL_JOB_STATES.includes(row.state as JobState)) throw new GpuxError('JOB_FINISHED', `job ${jobId} already ${row.state}`);
    if (row.state === 'queued') {
      const done = await trx
        .updateTable('jobs')
        .set({ state: 'cancelled', cancel_requested: 1, error: CANCELLED_BY_BUYER, run_after: null, updated_at: now, finished_at: now })
        .where('id', '=', jobId)
        .returningAll()
        .executeTakeFirstOrThrow();
      const job = jobFromRow(done);
      const released = job.payment ? await releaseEscrowIn(trx, ctx, job, job.payment.asset, now, 'cancelled while queued') : [];
      await insertEvents(trx, ctx, [
        { at: now, subject: 'job', subjectId: jobId, type: 'job.cancelled', data: { reason: CANCELLED_BY_BUYER, whileQueued: true } },
        ...released,
      ]);
      return { job, stopAttemptIds: [] };
    }
    const active = await trx
      .selectFrom('attempts')
      .select('id')
      .where('job_id', '=', jobId)
      .where('state', 'in', ['assigned', 'running'])
      .orderBy('created_at')
      .execute();
    const stopAttemptIds = active.map((a) => a.id);
    if (row.cancel_requested === 1) return { job: jobFromRow(row), stopAttemptIds }; // asked before: nothing new to write
    const updated = await trx
      .updateTable('jobs')
      .set({ cancel_requested: 1, updated_at: now })
      .where('id', '=', jobId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await insertEvents(trx, ctx, [{ at: now, subject: 'job', subjectId: jobId, type: 'job.cancel_requested', data: { attemptIds: stopAttemptIds } }]);
    return { job: jobFromRow(updated), stopAttemptIds };
  });
}

export async function countJobsByState(ctx: StoreContext): Promise<Record<JobState, number>> {
  const rows = await ctx.db
    .selectFrom('jobs')
    .select((eb) => ['state', eb.fn.countAll<number>().as('n')])
    .groupBy('state')
    .execute();
  const out = Object.fromEntries(JOB_STATES.map((s) => [s, 0])) as Record<JobState, number>;
  for (const r of rows) if (r.state in out) out[r.state as JobState] = Number(r.n);
  return out;
}
