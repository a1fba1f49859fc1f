/**
 * The money of forwarded jobs (issue 15; core market/ledger.ts clearing.*), inside the forwards verbs' transactions
 * (store forwards.ts). At home: a forwarded attempt's bill moves from the job's escrow to clearing:<peer>
 * (clearing.charge), or, for an attempt the home had fenced, from the treasury and then the world
 * (clearing.writeoff). At the peer: a forwarded job's hold is drawn on clearing:<home> up to its credit line
 * (clearing.credit), and what its buyer wallet region:<home> keeps afterwards goes back there (clearing.return).
 *
 * Lock order: the clearing row is read before the wallet row (the (asset, account) order postTransferIn locks in);
 * at home the job's escrow (or the treasury) is read first, after the job and attempt rows, like an attempt's end.
 */
import { ACCOUNTS, amountFromDb, type ClearingBalanceRecord, GpuxError, type JobRecord, move, type NewJob, peerBuyerId } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import type { Database } from './schema.js';

/**
 * At home, before the forwarded attempt's end releases the escrow: move the peer's bill from escrow:<job> to
 * clearing:<peer>, so the buyer gets back exactly hold − bill. The escrow holds the whole hold while the forwarded
 * attempt runs (it has no price: nothing settles from it), and the peer's hold is the same hold (the same spec and
 * cap), which its settlements never pass; a larger bill is the peer's error or lie, and only what the escrow holds
 * is charged (the memo says so). Without a market (no payment) there is nothing to charge.
 */
export async function chargeForwardIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  q: { job: JobRecord; attemptId: string; peerId: string; bill: number; now: number },
): Promise<NewEvent[]> {
  const p = q.job.payment;
  if (!p || q.bill === 0) return [];
  const escrow = await balanceIn(trx, ctx, ACCOUNTS.escrow(q.job.id), p.asset, true);
  const amount = Math.min(q.bill, escrow);
  const short = q.bill - amount;
  if (amount > 0) {
    const beyond = short > 0 ? `; the bill was ${formatAmount(q.bill, p.asset)}, ${formatAmount(short, p.asset)} more than the escrow held, which is not charged` : '';
    await postTransferIn(trx, {
      kind: 'clearing.charge',
      postings: move(p.asset, ACCOUNTS.escrow(q.job.id), [{ account: ACCOUNTS.clearing(q.peerId), amount }]),
      at: q.now,
      memo: `bill of region ${q.peerId} for job ${q.job.id} (attempt ${q.attemptId}): ${formatAmount(amount, p.asset)}${beyond}`,
      jobId: q.job.id,
      attemptId: q.attemptId,
    });
  }
  return [billed(q, { charged: amount, writtenOff: 0, notCharged: short })];
}

/**
 * At home, the bill of an attempt the home had already ended (fenced: its lease ran out): the buyer's escrow was
 * settled without it, so the home pays it, from the treasury as far as it holds and then from the world.
 */
export async function writeOffForwardIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  q: { job: JobRecord; attemptId: string; peerId: string; bill: number; now: number },
): Promise<NewEvent[]> {
  const p = q.job.payment;
  if (!p || q.bill === 0) return [];
  const treasury = await balanceIn(trx, ctx, ACCOUNTS.treasury, p.asset, true);
  const fromTreasury = Math.min(q.bill, Math.max(0, treasury));
  await postTransferIn(trx, {
    kind: 'clearing.writeoff',
    postings: [
      { account: ACCOUNTS.clearing(q.peerId), asset: p.asset, amount: q.bill },
      { account: ACCOUNTS.treasury, asset: p.asset, amount: -fromTreasury },
      { account: ACCOUNTS.world, asset: p.asset, amount: -(q.bill - fromTreasury) },
    ],
    at: q.now,
    memo: `bill of region ${q.peerId} for job ${q.job.id} (attempt ${q.attemptId}, fenced here before the peer reported): ${formatAmount(q.bill, p.asset)} written off, ${formatAmount(fromTreasury, p.asset)} from the treasury`,
    jobId: q.job.id,
    attemptId: q.attemptId,
  });
  return [billed(q, { charged: 0, writtenOff: q.bill, notCharged: 0 })];
}

function billed(q: { job: JobRecord; attemptId: string; peerId: string; bill: number; now: number }, how: { charged: number; writtenOff: number; notCharged: number }): NewEvent {
  return { at: q.now, subject: 'job', subjectId: q.job.id, type: 'job.forward_billed', data: { attemptId: q.attemptId, peerId: q.peerId, bill: q.bill, ...how } };
}

/**
 * At the peer, before a forwarded job's hold: what the buyer wallet region:<home> lacks of the job's holds (the
 * replica run's too, replicas: 2) is drawn from clearing:<home>, refused past the credit line.
 */
export async function drawPeerCreditIn(trx: Kysely<Database>, ctx: StoreContext, job: NewJob, q: { peerId: string; creditLimit: number }): Promise<void> {
  const p = job.payment;
  if (!p || p.held <= 0) return;
  const holds = job.spec.replicas === 2 ? 2 * p.held : p.held;
  const clearing = ACCOUNTS.clearing(q.peerId);
  const wallet = ACCOUNTS.wallet(peerBuyerId(q.peerId));
  const balance = await balanceIn(trx, ctx, clearing, p.asset, true);
  const need = Math.max(0, holds - (await balanceIn(trx, ctx, wallet, p.asset, true)));
  if (need === 0) return;
  if (balance - need < -q.creditLimit) {
    const f = (n: number) => formatAmount(n, p.asset);
    throw new GpuxError(
      'INSUFFICIENT_FUNDS',
      `region ${q.peerId}'s credit line here is ${f(q.creditLimit)}: it owes ${f(Math.max(0, -balance))} already and this job needs ${f(need)} more — wait for its jobs here to end and be settled, or raise GPUX_PEER_CREDIT`,
    );
  }
  await postTransferIn(trx, {
    kind: 'clearing.credit',
    postings: move(p.asset, clearing, [{ account: wallet, amount: need }]),
    at: job.now,
    memo: `credit to region ${q.peerId} for its forwarded job ${job.id}: ${formatAmount(need, p.asset)}`,
    jobId: job.id,
  });
}

/** At the peer: what wallet:region:<home> holds goes back to clearing:<home>. Returns the amount moved. */
export function returnPeerCredit(ctx: StoreContext, peerId: string, asset: Asset, now: number): Promise<number> {
  return inTx(ctx, async (trx) => {
    const clearing = ACCOUNTS.clearing(peerId);
    const wallet = ACCOUNTS.wallet(peerBuyerId(peerId));
    await balanceIn(trx, ctx, clearing, asset, true);
    const left = await balanceIn(trx, ctx, wallet, asset, true);
    if (left <= 0) return 0;
    await postTransferIn(trx, {
      kind: 'clearing.return',
      postings: move(asset, wallet, [{ account: clearing, amount: left }]),
      at: now,
      memo: `return to the credit line of region ${peerId}: ${formatAmount(left, asset)} its forwarded jobs did not spend`,
    });
    return left;
  });
}

/** Every clearing account's balance: one range of ledger_balances' primary key (';' is the character after ':'). */
export async function clearingBalances(ctx: StoreContext): Promise<ClearingBalanceRecord[]> {
  const prefix = ACCOUNTS.clearing('');
  const rows = await ctx.db
    .selectFrom('ledger_balances')
    .select(['account', 'asset', 'balance'])
    .where('account', '>=', prefix)
    .where('account', '<', `${prefix.slice(0, -1)};`)
    .orderBy('account')
    .orderBy('asset')
    .execute();
  return rows.map((r) => ({ peerId: r.account.slice(prefix.length), asset: r.asset as Asset, balance: amountFromDb(r.balance, `balance of ${r.account}`) }));
}
