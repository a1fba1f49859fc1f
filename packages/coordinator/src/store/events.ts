/**
 * The append-only event history: written inside the transaction of every state change. Node-reported
 * events (image pulls) go in under their attempt's budget and are paged apart from the job's own events.
 */
import type { AttemptWriteResult, EventRecord, JobHistoryPage } from '@gpux/core';
import type { Kysely } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import { eventFromRow } from './rows.js';
import type { Database } from './schema.js';

export interface NewEvent {
  at: number;
  subject: 'job' | 'node';
  subjectId: string;
  type: string;
  data: Record<string, unknown>;
}

export async function insertEvents(trx: Kysely<Database>, ctx: StoreContext, events: readonly NewEvent[]): Promise<void> {
  if (events.length === 0) return;
  const rows = events.map((e) => ({ at: e.at, subject: e.subject, subject_id: e.subjectId, type: e.type, data: JSON.stringify(e.data) }));
  for (const batch of chunks(rows, 5, ctx.q)) await trx.insertInto('events').values(batch).execute();
}

/** Events an attempt reported (image pulls), in order; best-effort history, so not a durable commit. */
export async function appendJobEvents(
  ctx: StoreContext,
  jobId: string,
  attemptId: string,
  events: readonly { type: string; at: number; data: Record<string, unknown> }[],
): Promise<number> {
  if (events.length === 0) return 0;
  const rows: NewEvent[] = events.map((e) => ({ at: e.at, subject: 'job', subjectId: jobId, type: e.type, data: { ...e.data, attemptId } }));
  await inTx(ctx, (trx) => insertEvents(trx, ctx, rows), { durable: false });
  return rows.length;
}

/** Oldest first. */
export async function listEvents(ctx: StoreContext, subject: 'job' | 'node', subjectId: string, limit: number): Promise<EventRecord[]> {
  const rows = await ctx.db
    .selectFrom('events')
    .selectAll()
    .where('subject', '=', subject)
    .where('subject_id', '=', subjectId)
    .orderBy('seq')
    .limit(limit)
    .execute();
  return rows.map(eventFromRow);
}

/**
 * Node-reported events under the attempt's event budget, in one transaction with the attempt row locked:
 * those past maxEvents are dropped, and the first overflow writes one `attempt.events_dropped` event.
 */
export async function writeAttemptEvents(
  ctx: StoreContext,
  q: { attemptId: string; events: readonly { type: string; at: number; data: Record<string, unknown> }[]; maxEvents: number; now: number },
): Promise<AttemptWriteResult> {
  return inTx(
    ctx,
    async (trx) => {
      const a = await trx
        .selectFrom('attempts')
        .select(['job_id', 'state', 'event_count', 'events_dropped'])
        .where('id', '=', q.attemptId)
        .$if(ctx.q.forUpdate, (qb) => qb.forNoKeyUpdate())
        .executeTakeFirst();
      if (!a) return { status: 'missing', accepted: 0, dropped: 0, truncated: false };
      const truncatedBefore = Number(a.events_dropped) > 0;
      if (a.state !== 'assigned' && a.state !== 'running') return { status: 'gone', accepted: 0, dropped: 0, truncated: truncatedBefore };
      const count = Number(a.event_count);
      const fit = truncatedBefore ? 0 : Math.max(0, Math.min(q.events.length, q.maxEvents - count));
      const dropped = q.events.length - fit;
      const rows: NewEvent[] = q.events.slice(0, fit).map((e) => ({ at: e.at, subject: 'job', subjectId: a.job_id, type: e.type, data: { ...e.data, attemptId: q.attemptId } }));
      if (dropped > 0 && !truncatedBefore) {
        rows.push({ at: q.now, subject: 'job', subjectId: a.job_id, type: 'attempt.events_dropped', data: { attemptId: q.attemptId, limit: q.maxEvents } });
      }
      await insertEvents(trx, ctx, rows);
      await trx
        .updateTable('attempts')
        .set({ event_count: count + fit, events_dropped: Number(a.events_dropped) + dropped })
        .where('id', '=', q.attemptId)
        .execute();
      return { status: 'ok', accepted: fit, dropped, truncated: truncatedBefore || dropped > 0 };
    },
    { durable: false },
  );
}

/**
 * One page of a job's history: the newest `limit` of its own events below `before`, and the newest `limit`
 * node-reported ones in the range those cover (all the way down when the job's own events are exhausted).
 */
export async function listJobHistory(ctx: StoreContext, jobId: string, q: { before?: number; limit: number; nodeTypes: readonly string[] }): Promise<JobHistoryPage> {
  const limit = Math.max(1, Math.floor(q.limit));
  const nodeTypes = q.nodeTypes.length > 0 ? [...q.nodeTypes] : ['\u0000none'];
  const range = () =>
    ctx.db
      .selectFrom('events')
      .where('subject', '=', 'job')
      .where('subject_id', '=', jobId)
      .$if(q.before !== undefined, (qb) => qb.where('seq', '<', q.before ?? 0));
  const own = await range().selectAll().where('type', 'not in', nodeTypes).orderBy('seq', 'desc').limit(limit + 1).execute();
  const more = own.length > limit;
  const shown = own.slice(0, limit);
  const lower = more ? Number(shown.at(-1)?.seq ?? 0) : 0;
  const reported = await range().selectAll().where('type', 'in', nodeTypes).where('seq', '>=', lower).orderBy('seq', 'desc').limit(limit + 1).execute();
  let nodeElided = 0;
  if (reported.length > limit) {
    const c = await range().select((eb) => eb.fn.countAll().as('n')).where('type', 'in', nodeTypes).where('seq', '>=', lower).executeTakeFirst();
    nodeElided = Number(c?.n ?? 0) - limit;
  }
  const events = [...shown, ...reported.slice(0, limit)].map(eventFromRow).sort((x, y) => x.seq - y.seq);
  return { events, moreBefore: more ? lower : null, nodeElided };
}
