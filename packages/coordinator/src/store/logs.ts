/**
 * Log lines: idempotent by attempt + seq, read by a job-wide cursor in pages bounded by rows and bytes.
 * A node's batches go through writeAttemptLogs, which keeps the attempt's budget in its row (0006).
 */
import type { AttemptWriteResult, StoredLogEntry } from '@gpux/core';
import type { LogEntry, LogStream } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import type { Database } from './schema.js';

const ACTIVE = ['assigned', 'running'];

type LogRow = { job_id: string; attempt_id: string; seq: number; stream: string; data: string; at: number; bytes: number };

const toRow = (jobId: string, attemptId: string, e: LogEntry): LogRow => ({
  job_id: jobId,
  attempt_id: attemptId,
  seq: e.seq,
  stream: e.stream,
  data: e.data,
  at: e.at,
  bytes: Buffer.byteLength(e.data),
});

async function insertRows(trx: Kysely<Database>, ctx: StoreContext, rows: LogRow[]): Promise<number> {
  let added = 0;
  for (const batch of chunks(rows, 7, ctx.q)) {
    const res = await trx
      .insertInto('logs')
      .values(batch)
      .onConflict((oc) => oc.columns(['attempt_id', 'seq']).doNothing())
      .executeTakeFirst();
    added += Number(res.numInsertedOrUpdatedRows ?? 0);
  }
  return added;
}

/** Unbudgeted append (the Store's appendLogs; the coordinator's node route uses writeAttemptLogs). */
export async function appendLogs(ctx: StoreContext, jobId: string, attemptId: string, entries: LogEntry[]): Promise<number> {
  if (entries.length === 0) return 0;
  return inTx(ctx, (trx) => appendLogsIn(trx, ctx, jobId, attemptId, entries), { durable: false }); // log lines may be lost in a power cut, never job state
}

/** appendLogs inside the caller's transaction (a forwarded attempt's copied lines, store forwards.ts): repeats are ignored. */
export function appendLogsIn(trx: Kysely<Database>, ctx: StoreContext, jobId: string, attemptId: string, entries: readonly LogEntry[]): Promise<number> {
  return insertRows(trx, ctx, entries.map((e) => toRow(jobId, attemptId, e)));
}

const mib = (n: number) => (n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : n % 1024 === 0 ? `${n / 1024} KiB` : `${n} bytes`);

export function logLimitMarker(maxBytes: number, maxEntries: number, droppedBytes: number, droppedEntries: number): string {
  return `[gpux] log limit of ${mib(maxBytes)} or ${maxEntries} entries per attempt reached; ${droppedBytes} bytes in ${droppedEntries} entries dropped\n`;
}

/**
 * A node's batch under the attempt's budget: the attempt row is locked (PostgreSQL) or the write lock held
 * (SQLite) while its counters are read, the fitting entries inserted and the counters moved on.
 */
export async function writeAttemptLogs(
  ctx: StoreContext,
  q: { attemptId: string; entries: LogEntry[]; maxBytes: number; maxEntries: number; markerSeq: number; now: number },
): Promise<AttemptWriteResult> {
  return inTx(
    ctx,
    async (trx) => {
      const a = await trx
        .selectFrom('attempts')
        .select(['job_id', 'state', 'log_bytes', 'log_entries', 'log_dropped_bytes', 'log_dropped_entries'])
        .where('id', '=', q.attemptId)
        .$if(ctx.q.forUpdate, (qb) => qb.forNoKeyUpdate())
        .executeTakeFirst();
      if (!a) return { status: 'missing', accepted: 0, dropped: 0, truncated: false };
      if (!ACTIVE.includes(a.state)) return { status: 'gone', accepted: 0, dropped: 0, truncated: Number(a.log_dropped_entries) > 0 };
      const seqs = [...new Set(q.entries.map((e) => e.seq))];
      const stored = new Set<number>();
      for (const batch of chunks(seqs, 1, ctx.q)) {
        const rows = await trx.selectFrom('logs').select('seq').where('attempt_id', '=', q.attemptId).where('seq', 'in', batch).execute();
        for (const r of rows) stored.add(Number(r.seq));
      }
      let bytes = Number(a.log_bytes);
      let count = Number(a.log_entries);
      const truncatedBefore = Number(a.log_dropped_entries) > 0;
      const rows: LogRow[] = [];
      let dropped = 0;
      let droppedBytes = 0;
      for (const e of q.entries) {
        if (stored.has(e.seq)) continue; // a retried batch: already counted
        stored.add(e.seq);
        const row = toRow(a.job_id, q.attemptId, e);
        // Once one entry does not fit, every later one is dropped too: the log ends at the marker, no gaps.
        if (!truncatedBefore && dropped === 0 && bytes + row.bytes <= q.maxBytes && count + 1 <= q.maxEntries) {
          rows.push(row);
          bytes += row.bytes;
          count++;
        } else {
          dropped++;
          droppedBytes += row.bytes;
        }
      }
      const accepted = await insertRows(trx, ctx, rows);
      const totalDroppedBytes = Number(a.log_dropped_bytes) + droppedBytes;
      const totalDropped = Number(a.log_dropped_entries) + dropped;
      if (rows.length > 0 || dropped > 0) {
        await trx
          .updateTable('attempts')
          .set({ log_bytes: bytes, log_entries: count, log_dropped_bytes: totalDroppedBytes, log_dropped_entries: totalDropped })
          .where('id', '=', q.attemptId)
          .execute();
      }
      if (dropped > 0) {
        const data = logLimitMarker(q.maxBytes, q.maxEntries, totalDroppedBytes, totalDropped);
        if (truncatedBefore) {
          await trx.updateTable('logs').set({ data, bytes: Buffer.byteLength(data) }).where('attempt_id', '=', q.attemptId).where('seq', '=', q.markerSeq).execute();
        } else {
          await insertRows(trx, ctx, [toRow(a.job_id, q.attemptId, { seq: q.markerSeq, stream: 'system', data, at: q.now })]);
        }
      }
      return { status: 'ok', accepted, dropped, truncated: truncatedBefore || dropped > 0 };
    },
    { durable: false },
  );
}

const entryFromRow = (r: { seq: number | string; stream: string; data: string; at: number | string; attempt_id: string; id: number | string }): StoredLogEntry => ({
  seq: Number(r.seq),
  stream: r.stream as LogStream,
  data: r.data,
  at: Number(r.at),
  attemptId: r.attempt_id,
  cursor: Number(r.id),
});

/**
 * Entries with cursor > after. With maxBytes, the page is cut by the stored sizes first (a small query), so
 * large entries are never read past the cap; it always holds at least one entry when there is one.
 */
export async function readLogs(ctx: StoreContext, jobId: string, after: number, limit: number, maxBytes?: number): Promise<StoredLogEntry[]> {
  const n = Math.max(0, Math.floor(limit));
  const base = () => ctx.db.selectFrom('logs').where('job_id', '=', jobId).where('id', '>', after);
  if (maxBytes === undefined) {
    const rows = await base().selectAll().orderBy('id').limit(n).execute();
    return rows.map(entryFromRow);
  }
  const sizes = await base().select(['id', 'bytes']).orderBy('id').limit(n).execute();
  let last: number | undefined;
  let total = 0;
  for (const s of sizes) {
    if (last !== undefined && total + Number(s.bytes) > maxBytes) break;
    total += Number(s.bytes);
    last = Number(s.id);
  }
  if (last === undefined) return [];
  const rows = await base().selectAll().where('id', '<=', last).orderBy('id').limit(n).execute();
  // A row committed between the two reads (PostgreSQL ids are not commit-ordered) must not break the cap.
  const out: StoredLogEntry[] = [];
  let bytes = 0;
  for (const r of rows) {
    const b = Number(r.bytes);
    if (out.length > 0 && bytes + b > maxBytes) break;
    bytes += b;
    out.push(entryFromRow(r));
  }
  return out;
}
