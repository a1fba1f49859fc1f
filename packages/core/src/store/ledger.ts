import type { Asset } from '@gpux/protocol';
import type { NewTransfer } from '../market/ledger.js';
import type { TreasuryFlow } from '../trust/audit-budget.js';
import type { LedgerTotals, PayoutRecord, PayoutState, StakeRecord, TransferRecord, WalletEntryRecord } from '../market/records.js';
import type { Page } from './page.js';

/** Provider pay held until verification (pending:<attempt> of the provider's attempts), in one asset. */
export interface HeldPayRecord {
  asset: Asset;
  /** Sum of the positive pending:<attempt> balances of attempts whose price names the provider. */
  amount: number;
  /** Jobs those attempts belong to. */
  jobs: number;
  /**
   * The soonest dispute window among those jobs' open verification steps (epoch ms): by then that job's
   * pay is released unless a dispute or a failed check holds it. Null: no step open yet (jobs still running).
   */
  nextWindowClosesAt: number | null;
}

/** Money: the ledger, payouts and stake (core market/ledger.ts). */
export interface LedgerPort {
  // Job money moves inside the job verbs above, in their transactions: submitJob holds job.payment.held
  // from the buyer's wallet (INSUFFICIENT_FUNDS, nothing written, when short); requestCancel of a queued job
  // releases the escrow; assign checks and locks stake and records each attempt's price; every attempt end
  // settles the attempt's runtime (not a lost attempt's unsettled part), then a finished job's escrow is
  // released to the buyer and a requeued job's escrow is topped up to payment.held (the job fails instead
  // when the wallet cannot cover it).

  /**
   * Post one balanced transfer. Throws INSUFFICIENT_FUNDS (message: the account, what it has, what it
   * needs, the shortfall) when an account other than the world would go below zero; nothing is written.
   */
  postTransfer(t: NewTransfer): Promise<TransferRecord>;
  getBalance(account: string, asset: Asset): Promise<number>;
  /** Postings to wallet:<accountId>, newest first. */
  walletHistory(accountId: string, q: { asset?: Asset; limit: number; cursor?: string }): Promise<Page<WalletEntryRecord>>;
  /** What the buyer's unfinished jobs hold in escrow, per asset (assets with nothing held are absent). */
  escrowOfBuyer(buyerId: string): Promise<Partial<Record<Asset, number>>>;
  /** Transfers newest first, optionally those of one job or touching one account. */
  listTransfers(q: { limit: number; cursor?: string; jobId?: string; account?: string }): Promise<Page<TransferRecord>>;
  /** The job's transfers, oldest first (its bill). */
  jobTransfers(jobId: string): Promise<TransferRecord[]>;
  ledgerTotals(): Promise<LedgerTotals[]>;
  /** Pay held until verification for `providerId`, per asset with something held (issue 11; one bounded query). */
  pendingPayOf(providerId: string): Promise<HeldPayRecord[]>;
  /**
   * The treasury's lifetime money in and out per (asset, transfer kind), kept in the transaction of every
   * transfer that touches the treasury: what core trust/audit-budget.ts reads.
   */
  treasuryFlows(): Promise<TreasuryFlow[]>;
  /**
   * Settle running priced attempts whose last settlement is at least `minIntervalMs` of runtime old, up to
   * `now` (one chunk each). At most `limit` attempts per call. Returns how many were settled.
   */
  settleRunning(now: number, minIntervalMs: number, limit: number): Promise<number>;
  /** wallet → payout:<id> (INSUFFICIENT_FUNDS when short), state pending. */
  requestPayout(p: { id: string; accountId: string; asset: Asset; amount: number; destination: string; adapter: string; now: number }): Promise<PayoutRecord>;
  /** pending → completed: payout → world. NOT_FOUND; CONFLICT when not pending. */
  completePayout(id: string, reference: string, now: number): Promise<PayoutRecord>;
  /** pending → rejected: the amount returns to the wallet. */
  rejectPayout(id: string, reason: string, now: number): Promise<PayoutRecord>;
  getPayout(id: string): Promise<PayoutRecord | undefined>;
  /** Newest first. */
  listPayouts(q: { accountId?: string; state?: PayoutState; limit: number }): Promise<PayoutRecord[]>;
  getStake(nodeId: string): Promise<StakeRecord>;
  /** staked and locked of every node with stake or locks (to rebuild the capacity index). */
  listStakes(): Promise<{ nodeId: string; staked: number; locked: number }[]>;
  /** wallet:<provider> → stake:<node>. NODE_NOT_FOUND; FORBIDDEN unless the node's provider is providerId. */
  addStake(q: { nodeId: string; providerId: string; amount: number; now: number }): Promise<StakeRecord>;
  /**
   * stake:<node> → unbonding:<node>, released to the provider's wallet at releaseAt. Only free stake (staked
   * − locked) unbonds: INSUFFICIENT_FUNDS otherwise. FORBIDDEN unless the node's provider is providerId.
   */
  unbondStake(q: { id: string; nodeId: string; providerId: string; amount: number; releaseAt: number; now: number }): Promise<StakeRecord>;
  /** Unbondings due at `now` → their provider's wallet (kind stake.release). Returns how many. */
  releaseUnbonded(now: number, limit: number): Promise<number>;
  /**
   * Move stake from the node to others by the trust rules (kind slash): at most the node's staked balance
   * in all (the legs are cut in order when it is short). Returns the transfer.
   */
  slash(q: { nodeId: string; to: { account: string; amount: number }[]; reason: string; jobId?: string; now: number }): Promise<TransferRecord>;
}
