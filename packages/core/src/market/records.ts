/** Records of the money side of the Store: transfers and postings, payouts, stake, asks, index prices. */
import type { Asset } from '@gpux/protocol';
import type { NewTransfer, Posting, TransferKind } from './ledger.js';

export interface PostingRecord extends Posting {
  /** The account's balance right after this posting. */
  balanceAfter: number;
}

export interface TransferRecord {
  id: string;
  /** Global order of transfers (cursor for listings). */
  seq: number;
  kind: TransferKind;
  at: number;
  memo: string;
  jobId: string | null;
  attemptId: string | null;
  nodeId: string | null;
  reference: string | null;
  postings: PostingRecord[];
}

/** One posting to a wallet, as its statement shows it. */
export interface WalletEntryRecord {
  transferId: string;
  seq: number;
  at: number;
  kind: TransferKind;
  asset: Asset;
  amount: number;
  balanceAfter: number;
  jobId: string | null;
  nodeId: string | null;
  memo: string;
}

/** What a job may cost, fixed at submission (absent when the coordinator runs without a market). */
export interface JobPaymentRecord {
  asset: Asset;
  capPerUnitHour: number;
  units: number;
  /** cap × units × nodes × timeout: what a whole attempt (all nodes) may cost; the escrow holds this. */
  held: number;
}

/** What one attempt pays, fixed at placement (clearing.ts), and what it has settled so far. */
export interface AttemptPriceRecord {
  asset: Asset;
  pricePerUnitHour: number;
  units: number;
  feeBps: number;
  /** The node's provider, paid for the attempt. */
  providerId: string;
  /** Stake of the node this attempt holds while active. */
  stakeLock: number;
  marketClass: string;
}

export interface AttemptSettlementRecord {
  charged: number;
  /**
   * Of which to the treasury. The fee carries its rounding remainder per (provider, asset) across attempts
   * (settlement.ts feeWithCarry), so this is within a minor unit per chunk of floor(charged × fee), and a
   * provider's fees over all its attempts are exactly floor(Σ charged × fee).
   */
  fee: number;
  /** Runtime (ms since start) settled so far. */
  settledMs: number;
}

export type PayoutState = 'pending' | 'completed' | 'rejected';

export interface PayoutRecord {
  id: string;
  accountId: string;
  asset: Asset;
  amount: number;
  destination: string;
  adapter: string;
  state: PayoutState;
  reference: string | null;
  reason: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface UnbondingRecord {
  id: string;
  nodeId: string;
  providerId: string;
  amount: number;
  releaseAt: number;
}

export interface StakeRecord {
  nodeId: string;
  providerId: string | null;
  /** Stake is held in USDC. */
  asset: Asset;
  staked: number;
  /** Sum of stakeLock over the node's active attempts. */
  locked: number;
  unbonding: UnbondingRecord[];
}

export interface AskRecord {
  providerId: string;
  marketClass: string;
  pricePerGpuHour: number;
  updatedAt: number;
}

export interface PricePointRecord {
  marketClass: string;
  epoch: number;
  at: number;
  price: number;
  utilizationBps: number;
  supplyUnits: number;
  demandUnits: number;
}

/** Per asset: every account class summed, and whether the invariants hold. */
export interface LedgerTotals {
  asset: Asset;
  /** −balance(world): net money brought in. */
  minted: number;
  /** Sum over every account but the world (equals minted when the ledger balances). */
  inside: number;
  treasury: number;
  wallets: number;
  escrow: number;
  stake: number;
  pendingPayouts: number;
  /** Provider pay held until verification (pending:<attempt>, issue 11); counted in `inside`. */
  pendingPay?: number;
  /** Buyers' dispute bonds (bond:<job>); counted in `inside`. */
  bonds?: number;
  /** Accounts other than the world below zero (must be 0). */
  negativeAccounts: number;
}

export type { NewTransfer };
