/** The append-only event history: written inside the transaction of every state change. */
import type { EventRecord } from '@gpux/core';
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
