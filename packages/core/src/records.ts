/** Domain records the Store reads and writes. Times are epoch ms; money (later) integer minor units. */
import type {
  AttemptMetrics,
  GangPeer,
  AttemptState,
  JobSpec,
  JobState,
  JobView,
  LogEntry,
  NodeAdminState,
  NodeAdvertisement,
  NodeStatus,
  OutputFile,
} from '@gpux/protocol';
import type { AttemptPriceRecord, AttemptSettlementRecord, JobPaymentRecord } from './market/records.js';
import type { NodeStats } from './scheduler/node-stats.js';

export type Role = 'buyer' | 'operator';

export interface TokenRecord {
  id: string;
  hash: string; // sha256 hex of the secret token
  role: Role;
  accountId: string;
  name: string;
  createdAt: number;
  /** The token is refused from this instant on (issue 10 item 14); null/absent: never. */
  expiresAt?: number | null;
  /** Set once when revoked; a revoked token is refused at once. */
  revokedAt?: number | null;
}

/** A node enrollment token (hash only): it registers nodes for `accountId` and can do nothing else. */
export interface EnrollmentRecord {
  id: string;
  hash: string;
  accountId: string;
  name: string;
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  /** At most this many distinct nodes may register with it; null: only the per-provider cap. */
  maxNodes: number | null;
}

/**
 * Who a job is for (issue 11): a buyer's own job, or a run the coordinator made to check another job's
 * result: an audit (re-execution on an independent operator), a referee (decides a mismatch or a dispute),
 * or a canary (a known-answer job). A node cannot tell them apart: same images, shapes and timing. A checker
 * is a run of the buyer's own checker (spec.verify) comparing two runs' outputs: its image is the buyer's.
 */
export type JobKind = 'buyer' | 'audit' | 'referee' | 'canary' | 'checker';

/** The run-for-checking fields of a job (absent on a buyer's job). */
export interface JobCheckFields {
  /** Absent: 'buyer'. */
  kind?: JobKind;
  /** For audit, referee and canary runs: the job whose result this run checks. */
  checkOf?: string | null;
  /** Operators (provider accounts) this job must not be placed with: an audit avoids the executor's. */
  avoidProviderIds?: string[];
  /**
   * Pay held until verification (issue 11, TRUST.md layer 4): the provider's share of every settlement of
   * this job accrues to pending:<attemptId>, released by the verification step (audit passed, or the dispute
   * window closed) or forfeited on a confirmed wrong result. Fixed at submission from the coordinator's config.
   */
  holdPay?: boolean;
  /** The verification terms fixed at submission with holdPay (coordinator config): absent, the defaults (trust/verification-step.ts). */
  verifyTerms?: VerifyTerms;
}

/** A job's verification terms: how long the buyer may dispute, and the open tier's audit floor. */
export interface VerifyTerms {
  disputeWindowMs: number;
  auditFloorBps: number;
}

export interface JobRecord extends JobView, JobCheckFields {
  idempotencyKey: string | null;
  /** Nodes on which an attempt of this job was lost or failed for infrastructure reasons. */
  avoidNodeIds: string[];
  /** What the job may cost; null when it was submitted without a market. */
  payment: JobPaymentRecord | null;
}

export interface AttemptRecord {
  id: string;
  jobId: string;
  nodeId: string;
  state: AttemptState;
  gpuIndices: number[];
  exitCode: number | null;
  error: string | null;
  outputDigest: string | null;
  metrics: AttemptMetrics | null;
  leaseExpiresAt: number | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** Present on members of a gang job only. */
  gang?: PlacementGang;
  /** What the attempt pays, fixed at placement; null without a market. */
  price: AttemptPriceRecord | null;
  settlement: AttemptSettlementRecord;
  /** The node's signed result commitment (canonical JSON) and signature, when it ended with a report. */
  commitment?: string | null;
  commitmentSignature?: string | null;
}

/** A gang job's member: its rank, the world size and every member's node (rank 0's attempt leads the job). */
export interface PlacementGang {
  leaderAttemptId: string;
  rank: number;
  worldSize: number;
  peers: GangPeer[];
}

export interface NodeRecord {
  id: string;
  publicKey: string;
  advertisement: NodeAdvertisement;
  status: NodeStatus;
  adminState: NodeAdminState;
  /** Why the coordinator cordoned the node (auto-cordon); present only when set. */
  adminReason?: string | null;
  simulated: boolean;
  /** The account that owns the node: paid for its attempts, owner of its stake. */
  providerId: string | null;
  /** The enrollment it last registered with (absent on nodes registered before enrollments existed). */
  enrollmentId?: string | null;
  /** Set when its enrollment was revoked with removeNodes: its signed requests are refused. */
  removedAt?: number | null;
  registeredAt: number;
  lastHeartbeatAt: number;
  /** Proof of hardware (issue 12): absent on a node never challenged. */
  proof?: NodeProofRecord;
  /** Trust tier (TRUST.md): open unless an operator vouched (curated) or attestation evidence verified (attested). */
  tier?: 'open' | 'attested' | 'curated';
}

/** A node's proof-of-hardware state, as stored (protocol NodeProofView on the wire). */
export interface NodeProofRecord {
  state: 'unproven' | 'challenging' | 'proven' | 'failed' | 'skipped';
  provenClass: string | null;
  /** Measured speed relative to the class table (1 = as expected). */
  score: number | null;
  provenAt: number | null;
  /** Why dispatch is blocked (a failed or timed-out challenge). */
  reason: string | null;
  nextCheckAt: number | null;
}

export interface EventRecord {
  seq: number;
  at: number;
  subject: 'job' | 'node';
  subjectId: string;
  type: string;
  data: Record<string, unknown>;
}

export interface NewJob extends JobCheckFields {
  id: string;
  buyerId: string;
  spec: JobSpec;
  idempotencyKey: string | null;
  now: number;
  /** Set when the market runs: the store holds payment.held from the buyer's wallet in the same transaction. */
  payment?: JobPaymentRecord;
  /** Most queued jobs the buyer may have, counting this one: beyond it the store throws LIMIT_EXCEEDED. Absent: no limit. */
  maxQueued?: number;
}

/** One decision of the scheduling pass. */
export interface Placement {
  jobId: string;
  attemptId: string;
  nodeId: string;
  gpuIndices: number[];
  leaseExpiresAt: number;
  /** Members of a gang job: all are written together or none. */
  gang?: PlacementGang;
  /** Set when the market runs: the store checks the node's free stake covers price.stakeLock, else skips the placement. */
  price?: AttemptPriceRecord;
  /** A check run's placement (issue 11): the node was drawn uniformly among `candidates` eligible ones with `draw` (recorded in an event). */
  check?: { kind: 'audit' | 'referee' | 'checker'; candidates: number; draw: number };
}

/** A node's track record as stored (see scheduler/node-stats.ts), with its admin state for the index. */
export interface NodeStatsRecord {
  nodeId: string;
  stats: NodeStats;
  adminState: NodeAdminState;
  adminReason: string | null;
  updatedAt: number;
}

export interface AttemptEnd {
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'lost';
  exitCode: number | null;
  error: string | null;
}

export interface FinishAttemptInput {
  attemptId: string;
  nodeId: string;
  outcome: 'succeeded' | 'failed' | 'cancelled';
  exitCode: number | null;
  error: string | null;
  outputDigest: string;
  outputs: OutputFile[];
  metrics: AttemptMetrics;
  now: number;
  /** The node's signed result commitment (canonical JSON, commitment.ts) and its signature; absent when the coordinator ends the attempt. */
  commitment?: string;
  commitmentSignature?: string;
  /**
   * A uniform draw in [0, 1) from the coordinator's CSPRNG, taken after the commitment arrived: the
   * verification step compares it with the audit probability (recorded with the step). Absent: no audit draw.
   */
  auditDraw?: number;
}

/** Evidence of equivocation: two different validly signed commitments of one node for one attempt. */
export interface EquivocationRecord {
  id: string;
  nodeId: string;
  attemptId: string;
  jobId: string;
  first: { commitment: string; signature: string };
  second: { commitment: string; signature: string };
  /** Stake moved to the treasury (minor units of USDC) and its ledger transfer. */
  slashed: number;
  transferId: string | null;
  at: number;
}

/** How a job moves after one of its attempts ended (see core/lifecycle.ts). */
export interface JobTransition {
  state: JobState;
  runAfter: number | null;
  error: string | null;
  exitCode: number | null;
  /** Add the attempt's node to the job's avoid list. */
  avoidNode: boolean;
}

export type TransitionDecider = (job: JobRecord, end: AttemptEnd, now: number) => JobTransition;

export interface StoredLogEntry extends LogEntry {
  attemptId: string;
  cursor: number;
}
