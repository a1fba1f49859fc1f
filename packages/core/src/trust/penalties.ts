/**
 * TRUST.md's penalty table as a pure function: an event and the amounts involved → a plan of ledger legs
 * (from/to accounts, integer minor units), ban/suspend/dispatch flags, and the reason. The caller applies
 * the plan in one transaction with its evidence. Money is integer; products go through mulDiv.
 *
 *  equivocation          all stake → treasury; banned. The attempt's pay (still held) goes back to the buyer.
 *  wrong result (referee) pay → buyer; min(stake, 20 × job price) from stake: REPORTER_SHARE_BPS (10%) to the
 *                         reporter (the auditor's or disputing buyer's wallet; the treasury's audit budget when
 *                         the coordinator's own audit found it) and the rest to the buyer; banned.
 *  failed canary         as a wrong result; the canary's buyer is the treasury, so the buyer's part goes there.
 *  abandoned lease       first in 7 days free; then 1 × the lost job's price from the provider's wallet to the
 *                         buyer (capped at the wallet's balance; the rest is reported as unpaid); more than 3 in
 *                         7 days suspends; stake is never slashed.
 *  attestation invalid   dispatch blocked; no money moves.
 *  false dispute         the buyer's bond → the node's provider (less the referee run's cost → treasury).
 */
import type { Asset } from '@gpux/protocol';
import { assertAmount, BPS, checkedAdd, mulDiv } from '../market/arith.js';
import { ACCOUNTS, assertBalanced, type Posting } from '../market/ledger.js';
import { STAKE_MULTIPLE } from '../market/settlement.js';

/** The reporter's share of a wrong result's slash, in basis points; the rest goes to the buyer. */
export const REPORTER_SHARE_BPS = 1000;
/** Abandoned leases in the window before the fee applies, and the most before a suspension. */
export const FREE_LEASE_LOSSES = 1;
export const MAX_LEASE_LOSSES = 3;
export const LEASE_LOSS_WINDOW_MS = 7 * 24 * 3_600_000;

export type PenaltyEvent =
  | { kind: 'equivocation'; stake: number; pay: number }
  | { kind: 'wrong-result'; stake: number; jobPrice: number; pay: number; reporter: 'coordinator' | 'auditor' | 'buyer' }
  | { kind: 'canary-failed'; stake: number; jobPrice: number; pay: number }
  | { kind: 'lease-abandoned'; lostJobPrice: number; walletBalance: number; /** Epoch ms of this node's earlier lease losses. */ earlierLosses: readonly number[]; at: number }
  | { kind: 'attestation-invalid' }
  | { kind: 'false-dispute'; bond: number; refereeCost?: number };

/** The accounts a plan moves money between (build the usual ones with `penaltyAccounts`). */
export interface PenaltyAccounts {
  stake: string;
  /** Where the attempt's pay is held until verification (the job's escrow while payment waits for it). */
  pay: string;
  buyer: string;
  provider: string;
  /** The reporter's wallet when an auditor's provider or a buyer reported it; unused otherwise. */
  reporter?: string;
  /** Where a dispute bond is held. */
  bond?: string;
}

export function penaltyAccounts(ids: { nodeId: string; jobId: string; buyerId: string; providerId: string; reporterId?: string; bondAccount?: string }): PenaltyAccounts {
  return {
    stake: ACCOUNTS.stake(ids.nodeId),
    pay: ACCOUNTS.escrow(ids.jobId),
    buyer: ACCOUNTS.wallet(ids.buyerId),
    provider: ACCOUNTS.wallet(ids.providerId),
    ...(ids.reporterId ? { reporter: ACCOUNTS.wallet(ids.reporterId) } : {}),
    ...(ids.bondAccount ? { bond: ids.bondAccount } : {}),
  };
}

export interface PenaltyLeg {
  from: string;
  to: string;
  amount: number;
  what: 'slash' | 'pay-forfeit' | 'lease-fee' | 'bond-forfeit' | 'referee-cost';
}

export interface PenaltyPlan {
  event: PenaltyEvent['kind'];
  legs: PenaltyLeg[];
  /** Total taken from the node's stake (never more than the stake). */
  slashed: number;
  ban: boolean;
  suspend: boolean;
  dispatchBlocked: boolean;
  /** A lease fee the wallet could not cover (owed; never taken from stake). */
  unpaid: number;
  reason: string;
}

const plan = (event: PenaltyEvent['kind'], p: Partial<PenaltyPlan> & { reason: string }): PenaltyPlan => {
  const legs = (p.legs ?? []).filter((l) => l.amount > 0);
  return { event, slashed: 0, ban: false, suspend: false, dispatchBlocked: false, unpaid: 0, ...p, legs };
};

function wrongResult(ev: { stake: number; jobPrice: number; pay: number }, buyer: string, reporter: string, acc: PenaltyAccounts, what: string): PenaltyPlan {
  assertAmount(ev.stake, 'stake');
  assertAmount(ev.jobPrice, 'job price');
  assertAmount(ev.pay, 'pay');
  const slashed = Math.min(ev.stake, mulDiv(ev.jobPrice, STAKE_MULTIPLE, 1));
  const toReporter = mulDiv(slashed, REPORTER_SHARE_BPS, BPS);
  return plan('wrong-result', {
    legs: [
      { from: acc.pay, to: acc.buyer, amount: ev.pay, what: 'pay-forfeit' },
      { from: acc.stake, to: reporter, amount: toReporter, what: 'slash' },
      { from: acc.stake, to: buyer, amount: slashed - toReporter, what: 'slash' },
    ],
    slashed,
    ban: true,
    reason: `${what}: pay ${ev.pay} forfeited, ${slashed} slashed (min(stake ${ev.stake}, ${STAKE_MULTIPLE} × price ${ev.jobPrice})), ${toReporter} to the reporter; banned`,
  });
}

export function penaltyPlan(ev: PenaltyEvent, acc: PenaltyAccounts): PenaltyPlan {
  switch (ev.kind) {
    case 'equivocation':
      assertAmount(ev.stake, 'stake');
      assertAmount(ev.pay, 'pay');
      return plan('equivocation', {
        legs: [
          { from: acc.pay, to: acc.buyer, amount: ev.pay, what: 'pay-forfeit' },
          { from: acc.stake, to: ACCOUNTS.treasury, amount: ev.stake, what: 'slash' },
        ],
        slashed: ev.stake,
        ban: true,
        reason: `equivocation: two different signed commitments for one attempt; all stake (${ev.stake}) slashed, banned`,
      });
    case 'wrong-result': {
      const reporter = ev.reporter === 'coordinator' ? ACCOUNTS.treasury : acc.reporter;
      if (!reporter) throw new Error(`invariant: a wrong result reported by the ${ev.reporter} needs the reporter's account`);
      return wrongResult(ev, acc.buyer, reporter, acc, 'wrong result confirmed by a referee run');
    }
    case 'canary-failed':
      return { ...wrongResult(ev, ACCOUNTS.treasury, ACCOUNTS.treasury, { ...acc, buyer: ACCOUNTS.treasury }, 'failed canary (known answer)'), event: 'canary-failed' };
    case 'lease-abandoned': {
      assertAmount(ev.lostJobPrice, 'lost job price');
      assertAmount(ev.walletBalance, 'wallet balance');
      const recent = ev.earlierLosses.filter((t) => t <= ev.at && ev.at - t < LEASE_LOSS_WINDOW_MS).length;
      const count = recent + 1;
      const fee = count > FREE_LEASE_LOSSES ? ev.lostJobPrice : 0;
      const paid = Math.min(fee, ev.walletBalance);
      const suspend = count > MAX_LEASE_LOSSES;
      return plan('lease-abandoned', {
        legs: [{ from: acc.provider, to: acc.buyer, amount: paid, what: 'lease-fee' }],
        suspend,
        unpaid: fee - paid,
        reason: `abandoned lease ${count} in 7 days: ${fee === 0 ? 'the first is free' : `fee ${fee} (1 × the lost job's price)${fee > paid ? `, ${fee - paid} unpaid` : ''}`}${suspend ? `; more than ${MAX_LEASE_LOSSES} in 7 days, suspended` : ''}; stake not slashed`,
      });
    }
    case 'attestation-invalid':
      return plan('attestation-invalid', { dispatchBlocked: true, reason: 'attestation evidence invalid or stale: dispatch blocked until fresh evidence verifies; no slash' });
    case 'false-dispute': {
      assertAmount(ev.bond, 'bond');
      const cost = Math.min(ev.bond, ev.refereeCost ?? 0);
      assertAmount(cost, 'referee cost');
      if (!acc.bond) throw new Error('invariant: a false dispute needs the bond account');
      return plan('false-dispute', {
        legs: [
          { from: acc.bond, to: ACCOUNTS.treasury, amount: cost, what: 'referee-cost' },
          { from: acc.bond, to: acc.provider, amount: ev.bond - cost, what: 'bond-forfeit' },
        ],
        reason: `false dispute: the referee run agreed with the node; the buyer's bond (${ev.bond}) goes to the node's provider${cost ? ` less the referee run (${cost})` : ''}`,
      });
    }
  }
}

/** The plan's legs as balanced postings in one asset (throws if they would not balance). */
export function penaltyPostings(p: PenaltyPlan, asset: Asset): Posting[] {
  const net = new Map<string, number>();
  for (const l of p.legs) {
    net.set(l.from, checkedAdd(net.get(l.from) ?? 0, -l.amount));
    net.set(l.to, checkedAdd(net.get(l.to) ?? 0, l.amount));
  }
  const postings = [...net].filter(([, a]) => a !== 0).map(([account, amount]) => ({ account, asset, amount }));
  assertBalanced(postings);
  return postings;
}
