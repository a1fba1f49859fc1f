/** Dialect quirk flags, the shared store context, and the write-transaction helper. */
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';

export interface StoreQuirks {
  dialect: 'sqlite' | 'postgres';
  /**
   * Statement opening a write transaction. SQLite takes the write lock up front (BEGIN IMMEDIATE) so two
   * writers never fail on a read-to-write lock upgrade; busy_timeout then queues them.
   */
  beginWrite: string;
  /** Lock rows read before a write (SELECT … FOR UPDATE). SQLite's write transaction is already exclusive. */
  forUpdate: boolean;
  /** Expiry batches skip rows another coordinator holds (FOR UPDATE SKIP LOCKED). */
  skipLocked: boolean;
  /** Bound parameters per statement we stay under when batching inserts. */
  maxParams: number;
}

export type StoreQuirksInput = Pick<StoreQuirks, 'dialect'> & Partial<Omit<StoreQuirks, 'dialect'>>;

export function resolveQuirks(q: StoreQuirksInput): StoreQuirks {
  const pg = q.dialect === 'postgres';
  return {
    beginWrite: pg ? 'begin' : 'begin immediate',
    forUpdate: pg,
    skipLocked: pg,
    maxParams: pg ? 60_000 : 30_000,
    ...q,
  };
}

export interface StoreContext {
  db: Kysely<Database>;
  q: StoreQuirks;
}

/**
 * Run `fn` in one write transaction on one connection. Keep `fn` short: it may await only the database.
 * A failed commit is rolled back too (SQLite leaves the transaction open when COMMIT is busy).
 */
export function inTx<T>(ctx: StoreContext, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  return ctx.db.connection().execute(async (conn) => {
    await sql.raw(ctx.q.beginWrite).execute(conn);
    try {
      const result = await fn(conn);
      await sql.raw('commit').execute(conn);
      return result;
    } catch (err) {
      await sql
        .raw('rollback')
        .execute(conn)
        .catch(() => undefined);
      throw err;
    }
  });
}

/** Split rows into insert batches that stay under the dialect's bound-parameter limit. */
export function chunks<T>(rows: readonly T[], columns: number, q: StoreQuirks): T[][] {
  const size = Math.max(1, Math.min(1000, Math.floor(q.maxParams / Math.max(1, columns))));
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}
