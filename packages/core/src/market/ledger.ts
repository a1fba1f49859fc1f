/**
 * The double-entry ledger's vocabulary. Every movement of money is one transfer: postings (account, asset,
 * signed amount) that sum to zero per asset. Accounts are strings by convention below; `world` is the
 * outside (what was minted or deposited comes from it, paid-out money goes back to it) and is the only
 * account allowed below zero, so per asset the sum of every other account equals what is in the network.
 */
import type { Asset } from '@gpux/protocol';
import { assertAmount, checkedAdd } from './arith.js';

export const ACCOUNTS = {
  world: 'world',
  treasury: 'treasury',
  wallet: (accountId: string) => `wallet:${accountId}`,
  escrow: (jobId: string) => `escrow:${jobId}`,
  stake: (nodeId: string) => `stake:${nodeId}`,
  unbonding: (nodeId: string) => `unbonding:${nodeId}`,
  payout: (payoutId: string) => `payout:${payoutId}`,
  /** The provider's share of an attempt's settlements while its job's verification is open (issue 11). */
  pending: (attemptId: string) => `pending:${attemptId}`,
  /** A buyer's dispute bond on a job, held until the referee decides. */
  bond: (jobId: string) => `bond:${jobId}`,
  /** Inter-region clearing with one peer (issue 15): positive, this region owes the peer; negative, the peer owes it. */
  clearing: (peerId: string) => `clearing:${peerId}`,
} as const;

/** The buyer account a peer region's forwarded jobs run under here (its wallet: wallet:region:<peer id>). */
export const peerBuyerId = (peerId: string) => `region:${peerId}`;
/** The pseudo node a job forwarded to a peer runs on at home: its attempt's node id (no nodes row). */
export const peerNodeId = (peerId: string) => `peer:${peerId}`;
export const isPeerNodeId = (nodeId: string) => nodeId.startsWith('peer:');

export const TRANSFER_KINDS = [
  'mint', // test funds on a dev network (operator or self, when allowed)
  'deposit', // money that arrived outside, recorded by the operator with its reference
  'escrow.hold', // wallet → escrow at submission
  'escrow.topup', // wallet → escrow before a retry, so the hold covers a whole new attempt
  'escrow.release', // escrow → wallet: what a finished or cancelled job did not spend
  'settlement', // escrow → provider wallet + treasury, per chunk of runtime
  'stake.deposit', // provider wallet → node stake
  'stake.unbond', // node stake → unbonding (released after the delay)
  'stake.release', // unbonding → provider wallet
  'slash', // node stake → buyer / reporter / treasury, by the trust rules
  'payout.request', // wallet → payout (pending at the settlement adapter)
  'payout.complete', // payout → world (the adapter paid it out)
  'payout.reject', // payout → wallet
  'pay.release', // pending:<attempt> → provider wallet, when the job's verification passed or its window closed
  'pay.forfeit', // pending:<attempt> → buyer (or treasury for the coordinator's own runs), on a confirmed wrong result
  'penalty.fee', // provider wallet → buyer: an abandoned lease past the free one in 7 days
  'dispute.bond', // buyer wallet → bond:<job>
  'dispute.return', // bond:<job> → buyer wallet: the dispute was right
  'dispute.forfeit', // bond:<job> → provider wallet (+ treasury for the referee run): the dispute was false
  'clearing.credit', // clearing:<home peer> → wallet:region:<home peer>, at the peer: a forwarded job's hold on the home's credit line
  'clearing.return', // wallet:region:<home peer> → clearing:<home peer>, at the peer: what a forwarded job did not spend
  'clearing.charge', // escrow:<job> → clearing:<peer>, at home: a forwarded job's final bill, now owed to the peer
  'clearing.writeoff', // treasury (then world) → clearing:<peer>, at home: the bill of a run the home had fenced (the buyer pays at most once)
] as const;
export type TransferKind = (typeof TRANSFER_KINDS)[number];

export interface Posting {
  account: string;
  asset: Asset;
  /** Signed minor units: positive credits the account, negative debits it. */
  amount: number;
}

export interface NewTransfer {
  kind: TransferKind;
  postings: Posting[];
  at: number;
  memo: string;
  jobId?: string | null;
  attemptId?: string | null;
  nodeId?: string | null;
  /** The settlement adapter's or operator's external reference (deposit tx, payout receipt). */
  reference?: string | null;
}

/** A movement of `amount` from one account to others (amounts > 0; zero legs are dropped). */
export function move(asset: Asset, from: string, to: readonly { account: string; amount: number }[]): Posting[] {
  const legs = to.filter((t) => t.amount !== 0);
  for (const t of legs) assertAmount(t.amount, `amount to ${t.account}`);
  const total = legs.reduce((s, t) => checkedAdd(s, t.amount), 0);
  if (total === 0) return [];
  return [{ account: from, asset, amount: -total }, ...legs.map((t) => ({ account: t.account, asset, amount: t.amount }))];
}

/** Throws unless the postings balance to zero per asset and every amount is a safe integer. */
export function assertBalanced(postings: readonly Posting[]): void {
  const sums = new Map<string, number>();
  for (const p of postings) {
    assertAmount(p.amount, `posting to ${p.account}`, true);
    sums.set(p.asset, checkedAdd(sums.get(p.asset) ?? 0, p.amount));
  }
  for (const [asset, sum] of sums) if (sum !== 0) throw new Error(`invariant: postings in ${asset} sum to ${sum}, not 0`);
}

/** Accounts that may go below zero: the world, and the clearing accounts (a peer may owe this region). */
export const mayGoNegative = (account: string) => account === ACCOUNTS.world || account.startsWith('clearing:');
