/** Log lines: idempotent by attempt + seq, read by a job-wide cursor. */
import type { StoredLogEntry } from '@gpux/core';
import type { LogEntry, LogStream } from '@gpux/protocol';
import { chunks, inTx, type StoreContext } from './context.js';

export async function appendLogs(ctx: StoreContext, jobId: string, attemptId: string, entries: LogEntry[]): Promise<number> {
  if (entries.length === 0) return 0;
  const rows = entries.map((e) => ({ job_id: jobId, attempt_id: attemptId, seq: e.seq, stream: e.stream, data: e.data, at: e.at }));
  return inTx(ctx, async (trx) => {
    let added = 0;
    for (const batch of chunks(rows, 6, ctx.q)) {
      const res = await trx
        .insertInto('logs')
        .values(batch)
        .onConflict((oc) => oc.columns(['attempt_id', 'seq']).doNothing())
        .executeTakeFirst();
      added += Number(res.numInsertedOrUpdatedRows ?? 0);
    }
    return added;
  }, { durable: false }); // log lines may be lost in a power cut, never job state
}

export async function readLogs(ctx: StoreContext, jobId: string, after: number, limit: number): Promise<StoredLogEntry[]> {
  const rows = await ctx.db
    .selectFrom('logs')
    .selectAll()
    .where('job_id', '=', jobId)
    .where('id', '>', after)
    .orderBy('id')
    .limit(Math.max(0, Math.floor(limit)))
    .execute();
  return rows.map((r) => ({ seq: Number(r.seq), stream: r.stream as LogStream, data: r.data, at: Number(r.at), attemptId: r.attempt_id, cursor: Number(r.id) }));
}
