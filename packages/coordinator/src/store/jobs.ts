/** Job verbs: submit (idempotent, holding the job's escrow), read, list, cancel (releasing it), count. */
import { CANCEL_GRACE_MS, GpuxError, type JobRecord, type NewJob, type Page, } from '@gpux/core';
import { JOB_STATES, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { type Kysely, sql } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { insertEvents } from './events.js';
import { groupTx } from './group-commit.js';
import { type JobRow, jobFromRow, newJobRow } from './rows.js';
import type { Database } from './schema.js';
import { holdEscrowIn, releaseEscrowIn } from './settlement.js';
import { holdReplicaIn } from './verification-jobs.js';
import { insertJobInputBlobsIn } from './job-blobs.js';

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

/**
 * Queued jobs per buyer (issue 10 item 7): at `max` already queued, a new one is refused before anything is
 * written or held. On PostgreSQL a transaction-scoped advisory lock per buyer makes concurrent submits count
 * one after another; SQLite's write transaction is already exclusive. The count is one range of the
 * jobs_fair_claim index (state, buyer_id, …), at most `max` entries.
 */
async function checkQueuedLimit(trx: Kysely<Database>, ctx: StoreContext, buyerId: string, max: number, newJobId: string): Promise<void> {
  if (ctx.q.forUpdate) await sql`select pg_advisory_xact_lock(7007, hashtext(${buyerId}))`.execute(trx);
  const row = await trx
    .selectFrom('jobs')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('state', '=', 'queued')
    .where('buyer_id', '=', buyerId)
    .where('id', '!=', newJobId)
    .executeTakeFirstOrThrow();
  const queued = Number(row.n);
  if (queued >= max) {
    throw new GpuxError('LIMIT_EXCEEDED', `${queued} of your jobs are queued; the most one buyer may have queued is ${max} — wait for some to start, or cancel queued jobs`, {
      problems: [{ path: '(queue)', message: `queued jobs per buyer: at most ${max} (GPUX_MAX_QUEUED_PER_BUYER)` }],
    });
  }
}

export function submitJob(ctx: StoreContext, job: NewJob): Promise<{ job: JobRecord; created: boolean }> {
  // A burst of submits shares one durable commit (group-commit.ts): one flush and one wallet row lock per group.
  return groupTx(ctx, 'submit', (trx) => submitJobIn(trx, ctx, job));
}

/**
 * A submission inside the caller's transaction. `beforeHold` runs for a new job only, right before its escrow
 * hold (a forwarded job draws what its buyer's wallet lacks from the clearing account there, store forwards.ts);
 * what it throws rolls the job back with everything else.
 */
export async function submitJobIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  job: NewJob,
  beforeHold?: (trx: Kysely<Database>) => Promise<void>,
): Promise<{ job: JobRecord; created: boolean }> {
  const key = job.idempotencyKey;
  const row = newJobRow(job);
  // Inserted first: a job with the same key (an earlier submit, or a concurrent one on PostgreSQL) makes this a
  // no-op, and that job is the answer; a new job then counts against the queue limit, whose refusal rolls it back.
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
  if (job.maxQueued !== undefined) await checkQueuedLimit(trx, ctx, job.buyerId, job.maxQueued, job.id);
  // Blob inputs must be the buyer's (issue 13): a refusal rolls the insert back.
  await insertJobInputBlobsIn(trx, job);
  if (beforeHold) await beforeHold(trx);
  // Only a new job holds: a short wallet throws INSUFFICIENT_FUNDS and the insert above rolls back with it.
  await holdEscrowIn(trx, job);
  await holdReplicaIn(trx, job);
  await insertEvents(trx, ctx, [
    { at: job.now, subject: 'job', subjectId: job.id, type: 'job.submitted', data: { buyerId: job.buyerId, name: job.spec.name, idempotencyKey: key } },
  ]);
  return { job: jobFromRow(row), created: true };
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
/** A page of the job list stops near this many bytes of stored spec (a job with inline inputs is ~1 MiB). */
export const LIST_PAGE_SPEC_BYTES = 8 * 1024 * 1024;

/**
 * Newest first. The page is cut at `limit` rows or about LIST_PAGE_SPEC_BYTES of stored spec, whichever
 * comes first (always at least one job): the ids and spec sizes are read first, then only the rows taken,
 * so a buyer's 500 jobs of 1 MiB inputs each never load into memory at once.
 */
export async function listJobs(
  ctx: StoreContext,
  q: { buyerId?: string; states?: JobState[]; limit: number; cursor?: string },
): Promise<Page<JobRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db
    .selectFrom('jobs')
    .select((eb) => ['id', 'created_at', eb(eb.fn('length', ['spec']), '+', eb.fn.coalesce(eb.fn('length', ['spec_payload']), eb.lit(0))).as('bytes')]);
  if (q.buyerId !== undefined) qb = qb.where('buyer_id', '=', q.buyerId);
  if (q.states && q.states.length > 0) qb = qb.where('state', 'in', q.states);
  if (q.cursor) {
    const [at, id] = decodeCursor(q.cursor, ['number', 'string'] as const);
    qb = qb.where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('id', '<', id)])]));
  }
  const heads = await qb
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  let taken = 0;
  let bytes = 0;
  while (taken < Math.min(limit, heads.length) && (taken === 0 || bytes + Number(heads[taken]?.bytes ?? 0) <= LIST_PAGE_SPEC_BYTES)) {
    bytes += Number(heads[taken]?.bytes ?? 0);
    taken++;
  }
  const ids = heads.slice(0, taken).map((h) => h.id);
  const byId = new Map<string, JobRecord>();
  for (const part of chunks(ids, 1, ctx.q)) {
    for (const row of await ctx.db.selectFrom('jobs').selectAll().where('id', 'in', part).execute()) byId.set(row.id, jobFromRow(row));
  }
  const items = ids.map((id) => byId.get(id)).filter((j): j is JobRecord => j !== undefined);
  const last = items[items.length - 1];
  return { items, nextCursor: heads.length > taken && last ? encodeCursor([last.createdAt, last.id]) : null };
}

/**
 * A running job's cancel gives its active attempts stop_by = now + graceMs: settlement charges them only up
 * to it, heartbeats lease them no further, and the expiry pass ends them as cancelled after it.
 */
export function requestCancel(
  ctx: StoreContext,
  jobId: string,
  now: number,
  graceMs: number = CANCEL_GRACE_MS,
): Promise<{ job: JobRecord; stopAttemptIds: string[] }> {
  if (!Number.isSafeInteger(graceMs) || graceMs < 0) throw new Error(`invariant: cancel grace ${graceMs} ms`);
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
    const stopBy = now + graceMs;
    if (stopAttemptIds.length > 0) {
      await trx
        .updateTable('attempts')
        .set({ stop_by: stopBy, lease_expires_at: sql<number>`case when lease_expires_at > ${stopBy} then ${stopBy} else lease_expires_at end` })
        .where('id', 'in', stopAttemptIds)
        .execute();
    }
    const updated = await trx
      .updateTable('jobs')
      .set({ cancel_requested: 1, updated_at: now })
      .where('id', '=', jobId)
      .returningAll()
      .executeTakeFirstOrThrow();
    await insertEvents(trx, ctx, [{ at: now, subject: 'job', subjectId: jobId, type: 'job.cancel_requested', data: { attemptIds: stopAttemptIds, stopBy } }]);
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
