/**
 * A job's money once `decide` chose its next state after an attempt: a finished job's escrow goes back to
 * the buyer; a requeued job's escrow is topped up to payment.held from the buyer's wallet, and when the
 * wallet cannot cover it the job fails instead (and its escrow is released). Jobs without payment move
 * no money.
 */
import { type Asset, formatAmount } from '@gpux/protocol';
import { ACCOUNTS, move, type NewTransfer } from '../market/ledger.js';
import type { JobPaymentRecord } from '../market/records.js';
import type { JobTransition } from '../records.js';
import type { PlannedEvent } from './settle.js';

/** The store's INSUFFICIENT_FUNDS wording (store ledger.ts), for errors written into a job. */
export function insufficientFundsMessage(account: string, asset: Asset, available: number, needed: number): string {
  return `insufficient funds in ${account}: needs ${formatAmount(needed, asset)}, has ${formatAmount(available, asset)} available (short ${formatAmount(needed - available, asset)})`;
}

/** How much a requeue must add to the escrow to hold a whole new attempt again (0: nothing). */
export function topUpNeed(payment: JobPaymentRecord, escrowLeft: number): number {
  return Math.max(0, payment.held - escrowLeft);
}

/** Release what the job's escrow still holds (`left`) to the buyer: the transfer and its event, or nothing when empty. */
export function escrowRelease(
  job: { id: string; buyerId: string },
  asset: Asset,
  left: number,
  now: number,
  why: string,
): { transfer: NewTransfer; event: PlannedEvent } | null {
  if (left <= 0) return null;
  return {
    transfer: {
      kind: 'escrow.release',
      postings: move(asset, ACCOUNTS.escrow(job.id), [{ account: ACCOUNTS.wallet(job.buyerId), amount: left }]),
      at: now,
      memo: `release of job ${job.id} (${why}): ${formatAmount(left, asset)} back to the buyer`,
      jobId: job.id,
    },
    event: { at: now, subject: 'job', subjectId: job.id, type: 'job.escrow_released', data: { amount: left } },
  };
}

export interface JobMoneyInput {
  job: { id: string; buyerId: string; payment: JobPaymentRecord };
  transition: JobTransition;
  /** What the escrow holds after this attempt end's settlements. */
  escrowLeft: number;
  /** The buyer's wallet in the payment asset; required when a requeue needs a top-up (jobMoneyNeedsWallet). */
  wallet?: number;
  now: number;
}

export interface JobMoneyPlan {
  /** The transition to apply: `decide`'s, or a failure when the wallet could not cover a requeue. */
  transition: JobTransition;
  transfers: NewTransfer[];
  /** Written after the job's own event. */
  events: PlannedEvent[];
  /** What the escrow holds afterwards. */
  escrowLeft: number;
}

export function jobMoneyNeedsWallet(i: Pick<JobMoneyInput, 'job' | 'transition' | 'escrowLeft'>): boolean {
  return i.transition.state === 'queued' && topUpNeed(i.job.payment, i.escrowLeft) > 0;
}

export function planJobMoney(i: JobMoneyInput): JobMoneyPlan {
  const { job, now } = i;
  const { asset, held } = job.payment;
  let t = i.transition;
  if (t.state === 'queued') {
    const need = topUpNeed(job.payment, i.escrowLeft);
    if (need === 0) return { transition: t, transfers: [], events: [], escrowLeft: i.escrowLeft };
    if (i.wallet === undefined) throw new Error(`invariant: the retry of job ${job.id} needs the buyer's wallet balance`);
    const wallet = ACCOUNTS.wallet(job.buyerId);
    if (i.wallet >= need) {
      const topUp: NewTransfer = {
        kind: 'escrow.topup',
        postings: move(asset, wallet, [{ account: ACCOUNTS.escrow(job.id), amount: need }]),
        at: now,
        memo: `top-up of job ${job.id} for a retry: ${formatAmount(need, asset)} back to the hold of ${formatAmount(held, asset)}`,
        jobId: job.id,
      };
      return { transition: t, transfers: [topUp], events: [], escrowLeft: i.escrowLeft + need };
    }
    const error = `could not top up escrow for a retry: ${insufficientFundsMessage(wallet, asset, i.wallet, need)}`;
    t = { state: 'failed', runAfter: null, error, exitCode: t.exitCode, avoidNode: t.avoidNode };
  }
  const release = escrowRelease(job, asset, i.escrowLeft, now, `job ${t.state}`);
  if (!release) return { transition: t, transfers: [], events: [], escrowLeft: i.escrowLeft };
  return { transition: t, transfers: [release.transfer], events: [release.event], escrowLeft: 0 };
}
