/**
 * Forwarded jobs (issue 15). At home, a job sent to a peer region runs as an ordinary attempt on the pseudo node
 * `peer:<peer id>` (no nodes row, no price: chunk settlement skips it), so leases, fencing, retries, events and the
 * buyer's view work as for any attempt; a `forwards` row per such attempt records the peer's job id, the log cursor
 * and the peer's bill. At the peer, the job runs under the buyer `region:<home peer id>`, its hold drawn on the
 * clearing account for the home (a credit line), and what it did not spend goes back there when it ends.
 *
 * Money (core market/ledger.ts, clearing.*): at home a forwarded attempt's end moves the peer's final bill from the
 * job's escrow to `clearing:<peer>`; a bill for an attempt the home had already fenced (its lease ran out) is the
 * home's own loss (`clearing.writeoff` from the treasury, then the world), never the buyer's a second time.
 */
import type { Asset, LogEntry, OutputFile } from '@gpux/protocol';
import type { AttemptRecord, JobRecord, NewJob, TransitionDecider } from '../records.js';

/** sending: the home attempt exists, the peer has not confirmed; sent: it has (remote job id known); running: the peer started it; ended: the bill is booked; fenced: the home attempt ended first (lease), the peer's bill not booked yet. */
export type ForwardState = 'sending' | 'sent' | 'running' | 'ended' | 'fenced';

export interface ForwardRecord {
  attemptId: string;
  jobId: string;
  peerId: string;
  remoteJobId: string | null;
  state: ForwardState;
  /** The peer's log cursor: entries up to it are copied into the home attempt's logs. */
  logCursor: number;
  /** The peer's final bill once booked (minor units of the job's asset); null before. */
  charged: number | null;
  /** Why the home forwarded it (the routing verdict's sentence). */
  reason: string;
  createdAt: number;
  updatedAt: number;
  /** Last answer from the peer about it. */
  lastContactAt: number | null;
  /** The last failure to reach the peer about it; null after a success. */
  lastError: string | null;
}

export interface ForwardProgress {
  attemptId: string;
  now: number;
  /** The peer's job id, from its first answer. */
  remoteJobId?: string;
  /** The peer says it is running: the home attempt moves assigned → running (job too). */
  running?: boolean;
  /** A successful contact renews the home attempt's lease to this. */
  leaseExpiresAt?: number;
  /** Entries copied from the peer (appended to the home attempt's logs, repeats ignored) and the cursor after them. */
  logs?: LogEntry[];
  logCursor?: number;
  /** A failed contact: recorded, nothing else changes (the lease runs on). */
  error?: string;
}

export interface FinishForwardInput {
  attemptId: string;
  outcome: 'succeeded' | 'failed' | 'cancelled';
  exitCode: number | null;
  error: string | null;
  /** The peer's final bill (its settlements from the job's hold), minor units of the job's asset; 0 without a market. */
  charged: number;
  /**
   * The peer's output files as the home attempt keeps them (the buyer's result): inline ones with their content,
   * `blob: true` ones already in this region's blob store, held by the job's buyer. Ignored for a fenced attempt.
   */
  outputs?: readonly OutputFile[];
  /** The peer node's output root digest over them (null or absent: none reported). */
  outputDigest?: string | null;
  now: number;
}

export interface ClearingBalanceRecord {
  peerId: string;
  asset: Asset;
  balance: number;
}

export interface ForwardCounts {
  peerId: string;
  /** Jobs this region forwarded to the peer (forwards rows). */
  sent: number;
  /** Jobs the peer forwarded here (jobs of buyer region:<peer id>). */
  received: number;
  /** Of both, those not ended. */
  open: number;
}

export interface ForwardsPort {
  // ---- at home ----
  /**
   * A queued job → assigned, with a new attempt on node `peer:<peerId>` (no GPUs, no price), its lease to
   * `leaseExpiresAt`, a forwards row in state sending and the event job.forwarded { peerId, reason } — one
   * transaction. Undefined (nothing written) when the job is no longer queued (the scheduler or another replica
   * took it first).
   */
  forwardJob(q: { jobId: string; attemptId: string; peerId: string; reason: string; now: number; leaseExpiresAt: number }): Promise<{ attempt: AttemptRecord; job: JobRecord } | undefined>;
  /**
   * What one contact with the peer brought: the remote job id, start, lease renewal, logs. 'fenced' (nothing
   * changed but the forwards row's contact fields) when the home attempt is no longer active: its state is set
   * to fenced, and the caller should cancel the peer's job and book its bill with finishForward.
   */
  recordForwardProgress(q: ForwardProgress): Promise<'ok' | 'fenced'>;
  /**
   * The peer's job ended: in one transaction, end the home attempt as reported, with its outputs (its job moves on
   * by `decide`: succeeded, or failed/retried) and move `charged` from the job's escrow to clearing:<peer> (clearing.charge),
   * forwards row → ended. When the home attempt had already ended (fenced): book `charged` as a writeoff
   * (treasury, then world → clearing:<peer>), row → ended, status fenced. Again for an ended row: duplicate,
   * nothing written.
   */
  finishForward(q: FinishForwardInput, decide: TransitionDecider): Promise<{ status: 'ended' | 'fenced' | 'duplicate'; job: JobRecord }>;
  getForward(attemptId: string): Promise<ForwardRecord | undefined>;
  /** Rows not ended (sending, sent, running, fenced), oldest contact first, at most `limit`. */
  listOpenForwards(limit: number): Promise<ForwardRecord[]>;
  /** Every forward of one home job, oldest first. */
  listJobForwards(jobId: string): Promise<ForwardRecord[]>;

  // ---- at the peer ----
  /**
   * A peer's forwarded job: `job.buyerId` is region:<peerId>, `job.idempotencyKey` the home attempt id (the same
   * key again returns the first job, created false, nothing written). Before the hold, what the buyer wallet
   * lacks of `job.payment.held` is drawn from clearing:<peerId> (clearing.credit); INSUFFICIENT_FUNDS, naming the
   * credit line, when that would take the clearing balance below −creditLimit. One transaction with the job.
   */
  acceptForwardedJob(job: NewJob, q: { peerId: string; creditLimit: number }): Promise<{ job: JobRecord; created: boolean }>;
  /**
   * After a forwarded job here ended: what its buyer wallet region:<peerId> holds goes back to clearing:<peerId>
   * (clearing.return). Idempotent (an empty wallet moves nothing). Returns the amount moved.
   */
  returnPeerCredit(peerId: string, asset: Asset, now: number): Promise<number>;

  // ---- both ----
  /** Every clearing account's balance (peer id, asset), including zero ones that ever moved. */
  clearingBalances(): Promise<ClearingBalanceRecord[]>;
  /** Forwarded jobs sent to and received from each peer that has any. */
  forwardCounts(): Promise<ForwardCounts[]>;
}
