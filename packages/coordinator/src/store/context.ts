/** Dialect quirk flags, the coordinator's store policies, the shared store context, and the write-transaction helper. */
import { type AttemptDeadlinePolicy, DEFAULT_DEADLINE_POLICY, DEFAULT_NODE_STATS_POLICY, LeaseLostError, type NodeStatsPolicy } from '@gpux/core';
import { type Kysely, sql } from 'kysely';
import type { Database } from './schema.js';
import type { WalSync } from './wal-sync.js';

export interface StoreQuirks {
  dialect: 'sqlite' | 'postgres';
  /**
   * Statement opening a write transaction. SQLite takes the write lock up front (BEGIN IMMEDIATE) so two
   * writers never fail on a read-to-write lock upgrade; busy_timeout then queues them.
   */
  beginWrite: string;
  /** Lock rows read before a write (SELECT … FOR UPDATE). SQLite's write transaction is already exclusive. */
  forUpdate: boolean;
  /** Background settlement and unbonding passes skip rows another transaction holds (FOR UPDATE SKIP LOCKED). */
  skipLocked: boolean;
  /** Bound parameters per statement we stay under when batching inserts. */
  maxParams: number;
  /**
   * Statements that let one transaction commit without waiting for the disk, for writes that may be lost
   * in an OS crash or power cut (lease renewals, log lines) but never for job or money state. SQLite:
   * `synchronous` NORMAL around the transaction (WAL keeps it consistent); PostgreSQL: `synchronous_commit`
   * off inside it. A process crash loses nothing either way.
   */
  relaxedCommit: { before: string | null; inside: string | null; after: string | null };
}

export type StoreQuirksInput = Pick<StoreQuirks, 'dialect'> & Partial<Omit<StoreQuirks, 'dialect'>>;

/**
 * The coordinator's policies that the store applies inside its transactions. They come from the
 * coordinator's config (start.ts), never from the dialect; anything left out takes core's default.
 */
export interface StorePolicies {
  /** Decay half-life and auto-cordon rule of node track records; defaults DEFAULT_NODE_STATS_POLICY. */
  nodeStats?: Partial<NodeStatsPolicy>;
  /** The attempt deadlines' graces (core attempt-end/deadline.ts); defaults DEFAULT_DEADLINE_POLICY. */
  deadlines?: Partial<AttemptDeadlinePolicy>;
  /** The audit budget's share of the treasury's fee income, bps (core trust/audit-budget.ts); default 10000. */
  auditBudgetBps?: number;
}

export function resolveQuirks(q: StoreQuirksInput): StoreQuirks {
  const pg = q.dialect === 'postgres';
  return {
    beginWrite: pg ? 'begin' : 'begin immediate',
    forUpdate: pg,
    skipLocked: pg,
    maxParams: pg ? 60_000 : 30_000,
    relaxedCommit: pg
      ? { before: null, inside: 'set local synchronous_commit = off', after: null }
      : { before: 'pragma synchronous = NORMAL', after: 'pragma synchronous = FULL', inside: null },
    ...q,
  };
}

export interface StoreContext {
  db: Kysely<Database>;
  q: StoreQuirks;
  /** The node-stats policy (StorePolicies.nodeStats over the defaults). */
  policy: NodeStatsPolicy;
  /** StorePolicies.deadlines over the defaults; absent: DEFAULT_DEADLINE_POLICY (deadlinesOf). */
  deadlines?: AttemptDeadlinePolicy;
  /** StorePolicies.auditBudgetBps; absent: DEFAULT_AUDIT_BUDGET_BPS (store/treasury-flows.ts auditBudgetBpsOf). */
  auditBudgetBps?: number;
  /** Set on the leader's view of the store (Store.fenced): every write transaction first checks this lease. */
  fence?: Fence;
  /**
   * PostgreSQL: connections whose every statement commits without waiting for the disk (synchronous_commit off for
   * the session), for single-statement writes that may be lost in a crash (heartbeats: see relaxedStatements).
   */
  relaxedDb?: Kysely<Database>;
  /** SQLite file: commits reach the disk by this shared WAL flush, which durable transactions wait for (wal-sync.ts). */
  walSync?: WalSync;
}

export interface Fence {
  name: string;
  holder: string;
  epoch: number;
}

/**
 * First in a fenced write transaction: the lease must still be this grant. On PostgreSQL the row is read FOR SHARE,
 * so a takeover (which updates the row) waits until this transaction ends, and every later write of the old leader
 * fails here: no write of a deposed leader commits after its successor has taken over.
 */
async function checkFence(trx: Kysely<Database>, q: StoreQuirks, fence: Fence): Promise<void> {
  const query = trx.selectFrom('coordinator_leases').select(['holder', 'epoch']).where('name', '=', fence.name);
  const row = await (q.forUpdate ? query.forShare() : query).executeTakeFirst();
  if (!row || row.holder !== fence.holder || Number(row.epoch) !== fence.epoch) throw new LeaseLostError(fence.name, fence.epoch);
}

/** The node-stats policy in force: the given fields over core's defaults (an undefined field keeps its default). */
export function resolvePolicy(p: StorePolicies = {}): NodeStatsPolicy {
  const given = Object.entries(p.nodeStats ?? {}).filter(([, v]) => v !== undefined);
  return { ...DEFAULT_NODE_STATS_POLICY, ...Object.fromEntries(given) };
}

/** The deadline policy in force: the given fields over core's defaults. */
export function resolveDeadlines(p: StorePolicies = {}): AttemptDeadlinePolicy {
  const given = Object.entries(p.deadlines ?? {}).filter(([, v]) => v !== undefined);
  return { ...DEFAULT_DEADLINE_POLICY, ...Object.fromEntries(given) };
}

/** The deadline graces in force (a context built without them: core's defaults). */
export function deadlinesOf(ctx: StoreContext): AttemptDeadlinePolicy {
  return ctx.deadlines ?? DEFAULT_DEADLINE_POLICY;
}

/**
 * Run `fn` in one write transaction on one connection. Keep `fn` short: it may await only the database.
 * A failed commit is rolled back too (SQLite leaves the transaction open when COMMIT is busy).
 * `durable: false` commits without waiting for the disk (see StoreQuirks.relaxedCommit).
 * A durable transaction on a SQLite file resolves once the WAL flush covering its commit is done; the flush runs
 * after the connection is free, so the next transaction need not wait for the disk.
 */
export async function inTx<T>(ctx: StoreContext, fn: (trx: Kysely<Database>) => Promise<T>, opts: { durable?: boolean } = {}): Promise<T> {
  const durable = opts.durable !== false;
  const result = await inTxOnConnection(ctx, fn, durable);
  if (durable && ctx.walSync) await ctx.walSync.synced();
  return result;
}

function inTxOnConnection<T>(ctx: StoreContext, fn: (trx: Kysely<Database>) => Promise<T>, durable: boolean): Promise<T> {
  const relaxed = durable ? undefined : ctx.q.relaxedCommit;
  return ctx.db.connection().execute(async (conn) => {
    const run = (statement: string | null | undefined) => (statement ? sql.raw(statement).execute(conn) : undefined);
    await run(relaxed?.before);
    try {
      await sql.raw(ctx.q.beginWrite).execute(conn);
      try {
        await run(relaxed?.inside);
        if (ctx.fence) await checkFence(conn, ctx.q, ctx.fence);
        const result = await fn(conn);
        await sql.raw('commit').execute(conn);
        if (durable) ctx.walSync?.committed();
        return result;
      } catch (err) {
        await sql
          .raw('rollback')
          .execute(conn)
          .catch(() => undefined);
        throw err;
      }
    } finally {
      await run(relaxed?.after);
    }
  });
}

/**
 * Run `fn`'s statements, each atomic on its own, committing without waiting for the disk: on PostgreSQL on the relaxed
 * connections and outside a transaction (no BEGIN, SET and COMMIT round trips), elsewhere in one relaxed transaction.
 * Only for writes a crash may lose and that need no atomicity across statements.
 */
export function relaxedStatements<T>(ctx: StoreContext, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  return ctx.relaxedDb && !ctx.fence ? fn(ctx.relaxedDb) : inTx(ctx, fn, { durable: false });
}

/** Split rows into insert batches that stay under the dialect's bound-parameter limit. */
export function chunks<T>(rows: readonly T[], columns: number, q: StoreQuirks): T[][] {
  const size = Math.max(1, Math.min(1000, Math.floor(q.maxParams / Math.max(1, columns))));
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += size) out.push(rows.slice(i, i + size));
  return out;
}
