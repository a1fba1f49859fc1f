/**
 * Queue timeouts (issue 10 item 4): a queued job that waited past its queue deadline fails with the reason
 * and its escrow returns to the buyer, so demand that can never run neither sits in the queue forever nor
 * keeps money held.
 *
 * The deadline lives in two columns of jobs added by migration 0004 (queue_deadline, and
 * queue_deadline_attempts: the attempt count it was set for), indexed with the state. Job submission does
 * not set them: the pass fills them for queued jobs that have none (in batches of `limit`, indexed on
 * state + NULL), from the time the job entered the queue (created_at, or updated_at / run_after for a
 * requeued job) plus spec.queueTimeoutSeconds or the coordinator default. A job requeued since its deadline
 * was set (attempt_count moved on) gets a fresh deadline instead of failing, so a retry never fails early.
 * Each due job fails in its own transaction (the job row locked on PostgreSQL), with its event and release.
 */
import type { JobRecord, QueueTimeoutInput } from '@gpux/core';
import { type Kysely, sql } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { type JobRow, jobFromRow } from './rows.js';
import type { Database, JobsTable } from './schema.js';
import { releaseEscrowIn } from './settlement.js';

/** The jobs columns of migration 0004, kept out of JobsTable so the job insert (jobs.ts) need not name them (they default to NULL). */
interface QueueDeadlineColumns {
  queue_deadline: number | null;
  queue_deadline_attempts: number | null;
}
type Db = Kysely<Omit<Database, 'jobs'> & { jobs: JobsTable & QueueDeadlineColumns }>;
const dbOf = (k: Kysely<Database>) => k as unknown as Db;

/** Batches of missing deadlines filled per call at most. */
const FILL_ROUNDS = 10;

/** When a queued job entered the queue: its submission, or its requeue (the later of the update and the retry backoff). */
function enteredQueueAt(r: { attempt_count: number; created_at: number; updated_at: number; run_after: number | null }): number {
  if (Number(r.attempt_count) === 0) return Number(r.created_at);
  return Math.max(Number(r.updated_at), r.run_after === null ? 0 : Number(r.run_after));
}

function timeoutSecondsOf(specText: string, fallback: number): number {
  try {
    const t = (JSON.parse(specText) as { queueTimeoutSeconds?: unknown }).queueTimeoutSeconds;
    return typeof t === 'number' && Number.isSafeInteger(t) && t > 0 ? t : fallback;
  } catch {
    return fallback;
  }
}

/** Give queued jobs without a deadline (or with one set before their last requeue) their deadline. Returns how many. */
async function fillDeadlines(ctx: StoreContext, rows: { id: string; spec: string; attempt_count: number; created_at: number; updated_at: number; run_after: number | null }[], fallbackS: number): Promise<number> {
  if (rows.length === 0) return 0;
  await inTx(ctx, async (trx) => {
    for (const part of chunks(rows, 3, ctx.q)) {
      // Bound values are text to PostgreSQL in a CASE: cast to the column's type.
      const deadlineOf = sql<number>`cast(case ${sql.ref('id')} ${sql.join(
        part.map((r) => sql`when ${r.id} then ${String(enteredQueueAt(r) + timeoutSecondsOf(r.spec, fallbackS) * 1000)}`),
        sql` `,
      )} end as bigint)`;
      await dbOf(trx)
        .updateTable('jobs')
        .set({ queue_deadline: deadlineOf, queue_deadline_attempts: sql`attempt_count` })
        .where('id', 'in', part.map((r) => r.id))
        .where('state', '=', 'queued')
        .execute();
    }
  });
  return rows.length;
}

/**
 * Fail one due job, if it is still queued with this deadline: job row, escrow release and events in one
 * transaction. The reason was worked out before it (explain looks at every node: not inside a write lock).
 */
function failOne(ctx: StoreContext, id: string, now: number, reason: string, waitedS: number): Promise<JobRecord | undefined> {
  return inTx(ctx, async (trx) => {
    const db = dbOf(trx);
    const row = await db
      .selectFrom('jobs')
      .selectAll()
      .where('id', '=', id)
      .where('state', '=', 'queued')
      .where('cancel_requested', '=', 0)
      .where('queue_deadline', '<=', now)
      .whereRef('queue_deadline_attempts', '=', 'attempt_count')
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) return undefined;
    const deadline = Number(row.queue_deadline);
    const done = await db
      .updateTable('jobs')
      .set({ state: 'failed', error: reason, run_after: null, updated_at: now, finished_at: now })
      .where('id', '=', id)
      .where('state', '=', 'queued')
      .returningAll()
      .executeTakeFirstOrThrow();
    const failed = jobFromRow(done as unknown as JobRow);
    const released = failed.payment ? await releaseEscrowIn(trx, ctx, failed, failed.payment.asset, now, 'queue timeout') : [];
    await insertEvents(trx, ctx, [
      { at: now, subject: 'job', subjectId: id, type: 'job.queue_timeout', data: { reason, waitedSeconds: waitedS, deadline } },
      { at: now, subject: 'job', subjectId: id, type: 'job.failed', data: { error: reason, queueTimeout: true } },
      ...released,
    ]);
    return failed;
  });
}

/**
 * One call of the verb: fill up to FILL_ROUNDS × `limit` missing deadlines, then fail up to `limit` due jobs (oldest
 * deadline first). A due job requeued since its deadline was set is given a fresh one instead.
 */
export async function failQueueTimeouts(ctx: StoreContext, q: QueueTimeoutInput): Promise<JobRecord[]> {
  const limit = Math.max(1, Math.floor(q.limit));
  const db = dbOf(ctx.db);
  const cols = ['id', 'spec', 'attempt_count', 'created_at', 'updated_at', 'run_after'] as const;
  // A burst of submissions is given its deadlines within a few calls (the fill is one indexed batch each).
  for (let round = 0; round < FILL_ROUNDS; round++) {
    const fresh = await db.selectFrom('jobs').select(cols).where('state', '=', 'queued').where('queue_deadline', 'is', null).limit(limit).execute();
    await fillDeadlines(ctx, fresh, q.defaultTimeoutSeconds);
    if (fresh.length < limit) break;
  }
  const due = await db
    .selectFrom('jobs')
    .selectAll()
    .where('state', '=', 'queued')
    .where('queue_deadline', '<=', q.now)
    .where('cancel_requested', '=', 0)
    .orderBy('queue_deadline')
    .limit(limit)
    .execute();
  await fillDeadlines(
    ctx,
    due.filter((r) => Number(r.queue_deadline_attempts) !== Number(r.attempt_count)),
    q.defaultTimeoutSeconds,
  );
  const out: JobRecord[] = [];
  for (const r of due) {
    if (Number(r.queue_deadline_attempts) !== Number(r.attempt_count)) continue;
    const waitedS = Math.max(0, Math.round((q.now - enteredQueueAt(r)) / 1000));
    const reason = q.reason(jobFromRow(r as unknown as JobRow), waitedS).slice(0, 1000);
    const failed = await failOne(ctx, r.id, q.now, reason, waitedS);
    if (failed) out.push(failed);
  }
  return out;
}
