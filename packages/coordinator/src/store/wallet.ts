/**
 * Ledger reads and the generic transfer verb: balances, wallet statements, transfer listings (with their
 * postings, one extra query per page), what a buyer's unfinished jobs hold in escrow, and the per-asset
 * totals the invariant check reads. Writes go through postTransferIn (ledger.ts) only.
 */
import { ACCOUNTS, amountFromDb, type HeldPayRecord, type LedgerTotals, type NewTransfer, type Page, type PostingRecord, type TransferKind, type TransferRecord, type WalletEntryRecord } from '@gpux/core';
import { type Asset, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { type Kysely, type RawBuilder, type Selectable, sql } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { balanceIn, postTransferIn } from './ledger.js';
import type { Database, LedgerTransfersTable } from './schema.js';
import { replicaJobId } from './verification-jobs.js';

export function postTransfer(ctx: StoreContext, t: NewTransfer): Promise<TransferRecord> {
  return inTx(ctx, (trx) => postTransferIn(trx, t));
}

export function getBalance(ctx: StoreContext, account: string, asset: Asset): Promise<number> {
  return balanceIn(ctx.db, ctx, account, asset);
}

/** Postings to the wallet, newest first, keyset-paginated on the posting id. */
export async function walletHistory(
  ctx: StoreContext,
  accountId: string,
  q: { asset?: Asset; limit: number; cursor?: string },
): Promise<Page<WalletEntryRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db
    .selectFrom('ledger_postings as p')
    .innerJoin('ledger_transfers as t', 't.seq', 'p.transfer_seq')
    .select(['p.id', 'p.asset', 'p.amount', 'p.balance_after', 't.id as transfer_id', 't.seq', 't.at', 't.kind', 't.job_id', 't.node_id', 't.memo'])
    .where('p.account', '=', ACCOUNTS.wallet(accountId));
  if (q.asset !== undefined) qb = qb.where('p.asset', '=', q.asset);
  if (q.cursor) {
    const [after] = decodeCursor(q.cursor, ['number'] as const);
    qb = qb.where('p.id', '<', after);
  }
  const rows = await qb
    .orderBy('p.id', 'desc')
    .limit(limit + 1)
    .execute();
  const page = rows.slice(0, limit);
  const items = page.map(
    (r): WalletEntryRecord => ({
      transferId: r.transfer_id,
      seq: Number(r.seq),
      at: Number(r.at),
      kind: r.kind as TransferKind,
      asset: r.asset as Asset,
      amount: Number(r.amount),
      balanceAfter: Number(r.balance_after),
      jobId: r.job_id,
      nodeId: r.node_id,
      memo: r.memo,
    }),
  );
  const last = page[page.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([Number(last.id)]) : null };
}

/** The replica run's id suffix (verification-jobs.ts replicaJobId). */
const REPLICA_SUFFIX = replicaJobId('');

export async function escrowOfBuyer(ctx: StoreContext, buyerId: string): Promise<Partial<Record<Asset, number>>> {
  const rows = await ctx.db
    .selectFrom('jobs')
    // An unfinished job's own escrow, and the replica run's hold (replicas: 2) taken with it at submission.
    .innerJoin('ledger_balances as b', (join) =>
      join.on((eb) =>
        eb.or([
          eb('b.account', '=', sql<string>`${ACCOUNTS.escrow('')} || ${eb.ref('jobs.id')}`),
          eb('b.account', '=', sql<string>`${ACCOUNTS.escrow('')} || ${eb.ref('jobs.id')} || ${REPLICA_SUFFIX}`),
        ]),
      ),
    )
    .select((eb) => ['b.asset', eb.fn.sum<number | string>('b.balance').as('held')])
    .where('jobs.buyer_id', '=', buyerId)
    .where('jobs.state', 'not in', [...TERMINAL_JOB_STATES])
    .groupBy('b.asset')
    .execute();
  const out: Partial<Record<Asset, number>> = {};
  for (const r of rows) {
    const held = amountFromDb(r.held, `escrow of ${buyerId} in ${r.asset}`);
    if (held > 0) out[r.asset as Asset] = held;
  }
  return out;
}

/** Attach their postings (one query per batch of transfers, in posting order) to transfer rows. */
async function withPostings(ctx: StoreContext, db: Kysely<Database>, rows: Selectable<LedgerTransfersTable>[]): Promise<TransferRecord[]> {
  const bySeq = new Map<number, PostingRecord[]>();
  for (const r of rows) bySeq.set(Number(r.seq), []);
  for (const part of chunks([...bySeq.keys()], 1, ctx.q)) {
    const postings = await db.selectFrom('ledger_postings').selectAll().where('transfer_seq', 'in', part).orderBy('id').execute();
    for (const p of postings) {
      bySeq.get(Number(p.transfer_seq))?.push({ account: p.account, asset: p.asset as Asset, amount: Number(p.amount), balanceAfter: Number(p.balance_after) });
    }
  }
  return rows.map((r) => ({
    id: r.id,
    seq: Number(r.seq),
    kind: r.kind as TransferKind,
    at: Number(r.at),
    memo: r.memo,
    jobId: r.job_id,
    attemptId: r.attempt_id,
    nodeId: r.node_id,
    reference: r.reference,
    postings: bySeq.get(Number(r.seq)) ?? [],
  }));
}

/** Newest first, keyset-paginated on seq; `account` keeps the transfers that post to it. */
export async function listTransfers(ctx: StoreContext, q: { limit: number; cursor?: string; jobId?: string; account?: string }): Promise<Page<TransferRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('ledger_transfers').selectAll();
  if (q.jobId !== undefined) qb = qb.where('job_id', '=', q.jobId);
  if (q.account !== undefined) {
    const account = q.account;
    qb = qb.where('seq', 'in', (eb) => eb.selectFrom('ledger_postings').select('transfer_seq').where('account', '=', account));
  }
  if (q.cursor) {
    const [after] = decodeCursor(q.cursor, ['number'] as const);
    qb = qb.where('seq', '<', after);
  }
  const rows = await qb
    .orderBy('seq', 'desc')
    .limit(limit + 1)
    .execute();
  const items = await withPostings(ctx, ctx.db, rows.slice(0, limit));
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.seq]) : null };
}

export async function jobTransfers(ctx: StoreContext, jobId: string): Promise<TransferRecord[]> {
  const rows = await ctx.db.selectFrom('ledger_transfers').selectAll().where('job_id', '=', jobId).orderBy('seq').execute();
  return withPostings(ctx, ctx.db, rows);
}

/** Per asset, every account class summed in one grouped query. */
export async function ledgerTotals(ctx: StoreContext): Promise<LedgerTotals[]> {
  const when = (cond: RawBuilder<unknown>) => sql<number | string>`sum(case when ${cond} then balance else 0 end)`;
  const prefixed = (...prefixes: string[]) =>
    sql.join(
      prefixes.map((p) => sql`account like ${`${p}%`}`),
      sql` or `,
    );
  const world = ACCOUNTS.world;
  const rows = await ctx.db
    .selectFrom('ledger_balances')
    .select([
      'asset',
      when(sql`account = ${world}`).as('world'),
      when(sql`account <> ${world}`).as('inside'),
      when(sql`account = ${ACCOUNTS.treasury}`).as('treasury'),
      when(prefixed(ACCOUNTS.wallet(''))).as('wallets'),
      when(prefixed(ACCOUNTS.escrow(''))).as('escrow'),
      when(prefixed(ACCOUNTS.stake(''), ACCOUNTS.unbonding(''))).as('stake'),
      when(prefixed(ACCOUNTS.payout(''))).as('payouts'),
      when(prefixed(ACCOUNTS.pending(''))).as('pending_pay'),
      when(prefixed(ACCOUNTS.bond(''))).as('bonds'),
      // A clearing account may be negative (a peer region owes this one, issue 15): not a broken invariant.
      sql<number | string>`sum(case when account <> ${world} and account not like ${`${ACCOUNTS.clearing('')}%`} and balance < 0 then 1 else 0 end)`.as('negative'),
    ])
    .groupBy('asset')
    .orderBy('asset')
    .execute();
  // Sums read exactly (PostgreSQL's sum(bigint) is a numeric string) or throw: never a wrong number. The
  // ledger keeps every balance and −world within 2^53 (ledger.ts), so a throw here is a broken invariant.
  // `0 -` rather than unary minus: an untouched world reads 0, not -0.
  return rows.map((r) => {
    const n = (v: number | string, what: string) => amountFromDb(v, `ledger total ${what} of ${r.asset}`);
    return {
      asset: r.asset as Asset,
      minted: 0 - n(r.world, 'world'),
      inside: n(r.inside, 'inside'),
      treasury: n(r.treasury, 'treasury'),
      wallets: n(r.wallets, 'wallets'),
      escrow: n(r.escrow, 'escrow'),
      stake: n(r.stake, 'stake'),
      pendingPayouts: n(r.payouts, 'payouts'),
      pendingPay: n(r.pending_pay, 'pending pay'),
      bonds: n(r.bonds, 'bonds'),
      negativeAccounts: n(r.negative, 'negative accounts'),
    };
  });
}

/**
 * The terms of migration 0014's partial index ledger_balances_held_pay, repeated literally (SQLite uses a
 * partial index only then): the pending:<attempt> balances above zero, i.e. the pay held now.
 */
const HELD_PAY = sql.raw<boolean>("b.balance > 0 and b.account like 'pending:%'");
const PENDING_PREFIX_LENGTH = ACCOUNTS.pending('').length;

/**
 * Pay held for `providerId` until verification, per asset: one query over the pay held now (the partial
 * index), joined to its attempts (by primary key) and to the open verification step of each job (one row
 * per job, so no balance is counted twice), for the soonest window close.
 */
export async function pendingPayOf(ctx: StoreContext, providerId: string): Promise<HeldPayRecord[]> {
  const rows = await ctx.db
    .selectFrom('ledger_balances as b')
    .innerJoin('attempts as a', (join) => join.on((eb) => eb('a.id', '=', sql<string>`substr(${eb.ref('b.account')}, ${PENDING_PREFIX_LENGTH + 1})`)))
    .leftJoin('verifications as v', (join) => join.onRef('v.job_id', '=', 'a.job_id').on('v.state', 'in', ['auditing', 'refereeing', 'window']))
    .select((eb) => [
      'b.asset',
      eb.fn.sum<number | string>('b.balance').as('held'),
      sql<number | string>`count(distinct ${eb.ref('a.job_id')})`.as('jobs'),
      eb.fn.min<number | string | null>('v.window_closes_at').as('next_close'),
    ])
    .where(HELD_PAY)
    .where('a.price_provider_id', '=', providerId)
    .groupBy('b.asset')
    .orderBy('b.asset')
    .execute();
  return rows.map((r) => ({
    asset: r.asset as Asset,
    amount: amountFromDb(r.held, `pay held for ${providerId} in ${r.asset}`),
    jobs: Number(r.jobs),
    nextWindowClosesAt: r.next_close === null || r.next_close === undefined ? null : Number(r.next_close),
  }));
}
