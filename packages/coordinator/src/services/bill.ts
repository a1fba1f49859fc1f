/**
 * A job's bill, read back from the ledger: every posting of the job's transfers except the legs on the job's
 * own holding accounts (its escrow, its dispute bond, and an attempt's held pay once it moves on), signed
 * from the buyer's side (money into the buyer's wallet +, money to providers and the treasury −, money into
 * escrow −), with the totals. held − charged − refunded = still in escrow, always.
 *
 * With verification (issue 11) a settlement pays the provider's share into pending:<attempt>: it is charged
 * (in `toProviders`) but held until the job's verification passes or its window closes (`payHeld`), then
 * released to the provider (`payReleased`) or, for a confirmed wrong result, forfeited back to the buyer
 * (`payForfeited`) with the buyer's share of the node's slashed stake (`compensation`). A dispute's bond is
 * held, then returned or forfeited.
 */
import { ACCOUNTS } from '@gpux/core';
import type { Asset, BillLine, BillResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { visibleJob } from './jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type BillDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

const PENDING = ACCOUNTS.pending('');
/** Stake is held in USDC: a slash's legs are in it whatever the job's asset. */
const STAKE_ASSET: Asset = 'usdc';

type Verification = NonNullable<BillResponse['verification']>;

export async function jobBill(rt: BillDeps, p: Principal, id: string): Promise<BillResponse> {
  const job = await visibleJob(rt, p, id);
  const asset = job.payment?.asset ?? job.spec.asset ?? 'usdc';
  const escrow = ACCOUNTS.escrow(id);
  const bond = ACCOUNTS.bond(id);
  const buyer = ACCOUNTS.wallet(job.buyerId);
  const lines: BillLine[] = [];
  const sum = { held: 0, toProviders: 0, fee: 0, refunded: 0 };
  const v: Verification = { payHeld: 0, payReleased: 0, payForfeited: 0, compensation: 0, bondHeld: 0, bondReturned: 0, bondForfeited: 0 };
  let verified = job.holdPay === true;
  for (const t of await rt.store.jobTransfers(id)) {
    // A peer's bill for a run this region had fenced is the region's loss (issue 15), not a line of the buyer's.
    if (t.kind === 'clearing.writeoff') continue;
    // A wrong result's transfer returns the held pay (pending legs, the job's asset) and slashes stake (USDC).
    let forfeited = 0;
    for (const post of t.postings) if (post.asset === asset && post.account.startsWith(PENDING) && (t.kind === 'pay.forfeit' || t.kind === 'slash')) forfeited -= post.amount;
    for (const post of t.postings) {
      if (post.account.startsWith(PENDING) && post.asset === asset) {
        verified = true;
        v.payHeld += post.amount;
        if (t.kind === 'pay.release') v.payReleased -= post.amount;
      }
      if (post.account === bond) {
        verified = true;
        if (t.kind === 'dispute.bond') v.bondHeld += post.amount;
        else {
          v.bondHeld += post.amount;
          if (t.kind === 'dispute.return') v.bondReturned -= post.amount;
          else v.bondForfeited -= post.amount;
        }
      }
      if (post.account === buyer && (t.kind === 'slash' || t.kind === 'pay.forfeit')) {
        verified = true;
        if (post.asset === STAKE_ASSET) v.compensation += post.amount;
      }
    }
    if (forfeited > 0) {
      v.payForfeited += forfeited;
      if (asset === STAKE_ASSET) v.compensation -= forfeited;
    }
    for (const post of t.postings) {
      if (post.account === escrow || post.account === bond || post.asset !== asset) continue;
      // Held pay is shown where it was charged (the settlement); its release or forfeit shows where it went.
      if (post.account.startsWith(PENDING) && t.kind !== 'settlement') continue;
      // Of a penalty, only what came to the buyer is the buyer's (the stake's and the reporter's legs are not).
      if ((t.kind === 'slash' || t.kind === 'pay.forfeit') && post.account !== buyer) continue;
      const fromBuyer = post.account === buyer ? post.amount : -post.amount;
      lines.push({ at: t.at, kind: t.kind, transferId: t.id, attemptId: t.attemptId, nodeId: t.nodeId, account: post.account, amount: fromBuyer, memo: t.memo });
      if (t.kind === 'escrow.hold' || t.kind === 'escrow.topup') sum.held += -fromBuyer;
      else if (t.kind === 'escrow.release') sum.refunded += fromBuyer;
      // A job run by a peer region (issue 15): its bill, now owed to that peer, is what the buyer paid for it.
      else if (t.kind === 'clearing.charge') sum.toProviders += post.amount;
      else if (t.kind === 'settlement') {
        if (post.account === ACCOUNTS.treasury) sum.fee += post.amount;
        else sum.toProviders += post.amount;
      }
    }
  }
  return {
    jobId: id,
    asset,
    market: job.payment !== null,
    capPerUnitHour: job.payment?.capPerUnitHour ?? 0,
    held: sum.held,
    charged: sum.toProviders + sum.fee,
    toProviders: sum.toProviders,
    fee: sum.fee,
    refunded: sum.refunded,
    inEscrow: await rt.store.getBalance(escrow, asset),
    ...(verified ? { verification: v } : {}),
    lines,
  };
}
