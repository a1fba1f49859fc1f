/** Log lines (idempotent by attempt + seq, read by a job-wide cursor) and API tokens. */
import { GpuxError, type Role, type StoredLogEntry, type TokenRecord } from '@gpux/core';
import type { LogEntry, LogStream } from '@gpux/protocol';
import { chunks, inTx, type StoreContext } from './context.js';
import { tokenFromRow } from './rows.js';

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

/** SQLite and PostgreSQL spellings of a unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export async function createToken(ctx: StoreContext, t: TokenRecord): Promise<void> {
  try {
    await ctx.db
      .insertInto('tokens')
      .values({ id: t.id, hash: t.hash, role: t.role, account_id: t.accountId, name: t.name, created_at: t.createdAt })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new GpuxError('CONFLICT', `a token with id ${t.id} or the same hash already exists`, { cause: err });
    throw err;
  }
}

export async function findTokenByHash(ctx: StoreContext, hash: string): Promise<TokenRecord | undefined> {
  const row = await ctx.db.selectFrom('tokens').selectAll().where('hash', '=', hash).executeTakeFirst();
  return row && tokenFromRow(row);
}

export async function countTokens(ctx: StoreContext, role?: Role): Promise<number> {
  const row = await ctx.db
    .selectFrom('tokens')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .$if(role !== undefined, (qb) => qb.where('role', '=', role as Role))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
