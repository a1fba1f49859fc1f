/**
 * What the attempt-end rules read: a snapshot the store loads under its locks (job row, then the attempt
 * rows, then the treasury balance row, then fee carry rows, then wallets, then node rows), in two rounds.
 * The basis comes first (the job, the ending attempt and how it ended, the gang siblings still active, the
 * escrow, and for a lease-expired end its node); `attemptEndNeeds` then says what else to read (fee
 * carries, the buyer's and the provider's wallets, the node's record, runtime expectation and earlier lease
 * losses), so a job without money or a cancelled attempt costs no extra query.
 */
import type { Asset, AttemptMetrics, AttemptState } from '@gpux/protocol';
import type { AttemptPriceRecord, AttemptSettlementRecord } from '../market/records.js';
import type { JobRecord, TransitionDecider } from '../records.js';
import type { NodeStats, NodeStatsPolicy } from '../scheduler/node-stats.js';

/** An attempt as the rules see it (as read under lock, before it ends). */
export interface AttemptFacts {
  id: string;
  jobId: string;
  nodeId: string;
  state: AttemptState;
  gpuIndices: number[];
  /** The gang leader's attempt id on gang members; null otherwise. */
  gangLeader: string | null;
  startedAt: number | null;
  /** Cancel + grace once the job's cancel was requested: charged and leased no later than this. */
  stopBy: number | null;
  leaseExpiresAt: number | null;
  /**
   * The coordinator's deadline (attempt-end/deadline.ts): no heartbeat leases the attempt past it. Null or
   * absent: none yet (an assignment before its node's first heartbeat, or a row from before migration 0013).
   */
  deadlineAt?: number | null;
  price: AttemptPriceRecord | null;
  settlement: AttemptSettlementRecord;
}

/** How the attempt ended: the node's signed report, or the coordinator found its lease expired. */
export type AttemptEndCause =
  | {
      kind: 'report';
      outcome: 'succeeded' | 'failed' | 'cancelled';
      exitCode: number | null;
      error: string | null;
      outputDigest: string;
      metrics: AttemptMetrics;
      commitment?: string;
      commitmentSignature?: string;
    }
  | { kind: 'lease-expired' }
  /** The node refused an assignment it could not verify (issue 19) before starting it: no fault of the node's. */
  | { kind: 'refused'; reason: string };

/** The attempt's node as the lease rules see it (read for a lease-expired end only). */
export interface NodeFacts {
  /** Removed (its enrollment revoked with removeNodes) or banned: the coordinator ended its leases itself. */
  removed: boolean;
  lastHeartbeatAt: number | null;
}

/** The first round of reads. */
export interface AttemptEndBasis {
  now: number;
  attempt: AttemptFacts;
  cause: AttemptEndCause;
  /** The job as read under lock. */
  job: JobRecord;
  /** The gang's other members still active (assigned or running); read only when the attempt drives its job. */
  siblings: AttemptFacts[];
  /** Balances of escrow:<job> per asset (the job's payment asset and the priced attempts'); absent: 0. */
  escrow: Partial<Record<Asset, number>>;
  /** When the cause is lease-expired: the attempt's node (null: no such row); absent otherwise. */
  node?: NodeFacts | null;
}

export interface CarryKey {
  providerId: string;
  asset: Asset;
}

export interface FeeCarry extends CarryKey {
  carry: number;
}

/** The fleet's running mean runtime of one job shape on one GPU class (`key`: runtimeExpectationKey). */
export interface RuntimeExpectation {
  key: string;
  samples: number;
  meanMs: number;
}

/** The basis plus what `attemptEndNeeds` asked for. */
export interface AttemptEndSnapshot extends AttemptEndBasis {
  /** The fee carry of each (provider, asset) in needs.carries (a missing row: 0). */
  carries: FeeCarry[];
  /** The buyer's wallet balance in the payment asset, when needs.wallet. */
  wallet?: number;
  /** The node's track record when needs.nodeStats (no row yet: emptyNodeStats(now)). */
  nodeStats?: NodeStats;
  /**
   * When needs.expectation: the expectation for this job shape on the node's GPU class (no row yet:
   * samples 0), or null when the class is unknown (the node or its GPU is gone).
   */
  expectation?: RuntimeExpectation | null;
  /** When needs.leaseLosses: times of the node's lease-abandoned penalties in the last 7 days. */
  leaseLosses?: number[];
  /** When needs.providerWallet: the provider's wallet balance in that asset (locked). */
  providerWallet?: number;
}

export interface AttemptEndNeeds {
  /** Fee carries to lock (after the treasury's balance row of each asset), sorted. */
  carries: CarryKey[];
  /** The buyer's wallet balance in this asset (a requeue needs a top-up); null: not needed. */
  wallet: Asset | null;
  nodeStats: boolean;
  /** The node's GPU class and the runtime expectation of the job shape on it. */
  expectation: boolean;
  /** An abandoned lease: the node's lease-abandoned penalties of the last 7 days (read after providerWallet). */
  leaseLosses: boolean;
  /** An abandoned lease of a priced attempt: lock and read this provider's wallet (with the buyer's, in account order). */
  providerWallet: CarryKey | null;
}

export interface AttemptEndPolicy {
  /** The job's next state after the attempt (core lifecycle.ts transitionDecider, or the caller's). */
  decide: TransitionDecider;
  nodeStats: NodeStatsPolicy;
}
