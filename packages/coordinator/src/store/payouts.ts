/**
 * Payouts: the settlement adapter's queue. A request moves the amount out of the wallet into payout:<id>
 * (so it cannot be spent twice while the adapter works); completion sends it to the world, rejection
 * back to the wallet. The row and its transfer always commit together.
 */
import { ACCOUNTS, GpuxError, move, type PayoutRecord, type PayoutState } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { postTransferIn } from './ledger.js';
import type { Database, PayoutsTable } from './schema.js';

function payoutFromRow(r: Selectable<PayoutsTable>): PayoutRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    asset: r.asset as Asset,
    amount: Number(r.amount),
    destination: r.destination,
    adapter: r.adapter,
    state: r.state as PayoutState,
    reference: r.reference,
    reason: r.reason,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

export async function requestPayout(
  ctx: StoreContext,
  p: { id: string; accountId: string; asset: Asset; amount: number; destination: string; adapter: string; now: number },
): Promise<PayoutRecord> {
  if (!Number.isSafeInteger(p.amount) || p.amount <= 0) throw new GpuxError('REQUEST_INVALID', `a payout must be a positive amount, got ${p.amount}`);
  return inTx(ctx, async (trx) => {
    await postTransferIn(trx, {
      kind: 'payout.request',
      postings: move(p.asset, ACCOUNTS.wallet(p.accountId), [{ account: ACCOUNTS.payout(p.id), amount: p.amount }]),
      at: p.now,
      memo: `payout ${p.id} of ${formatAmount(p.amount, p.asset)} to ${p.destination} via ${p.adapter}`,
    });
    const row: Selectable<PayoutsTable> = {
      id: p.id,
      account_id: p.accountId,
      asset: p.asset,
      amount: p.amount,
      destination: p.destination,
      adapter: p.adapter,
      state: 'pending',
      reference: null,
      reason: null,
      created_at: p.now,
      updated_at: p.now,
    };
    const inserted = await trx
      .insertInto('payouts')
      .values(row)
      .onConflict((oc) => oc.column('id').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) throw new GpuxError('CONFLICT', `payout ${p.id} already exists`);
    return payoutFromRow(row);
  });
}

/** The pending payout, locked on PostgreSQL; NOT_FOUND or CONFLICT otherwise. */
async function pendingPayout(trx: Kysely<Database>, ctx: StoreContext, id: string): Promise<Selectable<PayoutsTable>> {
  const row = await trx
    .selectFrom('payouts')
    .selectAll()
    .where('id', '=', id)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!row) throw new GpuxError('NOT_FOUND', `no payout ${id}`);
  if (row.state !== 'pending') throw new GpuxError('CONFLICT', `payout ${id} is already ${row.state}`);
  return row;
}

export function completePayout(ctx: StoreContext, id: string, reference: string, now: number): Promise<PayoutRecord> {
  return inTx(ctx, async (trx) => {
    const row = await pendingPayout(trx, ctx, id);
    const asset = row.asset as Asset;
    await postTransferIn(trx, {
      kind: 'payout.complete',
      postings: move(asset, ACCOUNTS.payout(id), [{ account: ACCOUNTS.world, amount: Number(row.amount) }]),
      at: now,
      memo: `payout ${id} paid to ${row.destination} via ${row.adapter}`,
      reference,
    });
    const done = await trx
      .updateTable('payouts')
      .set({ state: 'completed', reference, updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return payoutFromRow(done);
  });
}

export function rejectPayout(ctx: StoreContext, id: string, reason: string, now: number): Promise<PayoutRecord> {
  return inTx(ctx, async (trx) => {
    const row = await pendingPayout(trx, ctx, id);
    const asset = row.asset as Asset;
    await postTransferIn(trx, {
      kind: 'payout.reject',
      postings: move(asset, ACCOUNTS.payout(id), [{ account: ACCOUNTS.wallet(row.account_id), amount: Number(row.amount) }]),
      at: now,
      memo: `payout ${id} rejected: ${reason}`,
    });
    const done = await trx
      .updateTable('payouts')
      .set({ state: 'rejected', reason, updated_at: now })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return payoutFromRow(done);
  });
}

export async function getPayout(ctx: StoreContext, id: string): Promise<PayoutRecord | undefined> {
  const row = await ctx.db.selectFrom('payouts').selectAll().where('id', '=', id).executeTakeFirst();
  return row && payoutFromRow(row);
}

/** Newest first (created_at, then id). */
export async function listPayouts(ctx: StoreContext, q: { accountId?: string; state?: PayoutState; limit: number }): Promise<PayoutRecord[]> {
  let qb = ctx.db.selectFrom('payouts').selectAll();
  if (q.accountId !== undefined) qb = qb.where('account_id', '=', q.accountId);
  if (q.state !== undefined) qb = qb.where('state', '=', q.state);
  const rows = await qb
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.max(1, Math.floor(q.limit)))
    .execute();
  return rows.map(payoutFromRow);
}
