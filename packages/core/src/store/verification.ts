import type { Page } from './page.js';
import type { EquivocationRecord } from '../records.js';
import type { PenaltyRecord, VerificationRecord } from '../trust/records.js';

/**
 * Verification (issue 11, TRUST.md): equivocation evidence, each job's verification step (audit, referee,
 * window, dispute) and nodes' penalties. The step opens inside the transaction that ends the job's attempt
 * (the store's attempt-end path); check runs are ordinary jobs of kind audit/referee.
 */
export interface VerificationPort {
  /**
   * In one transaction, if the ended attempt's stored commitment differs from `second` (already verified):
   * store both as evidence, write node.equivocated, slash the node's whole stake to the treasury and ban
   * the node (removed, may not register again; its active leases end now). The same pair again: null.
   */
  recordEquivocation(q: { attemptId: string; nodeId: string; commitment: string; signature: string; now: number }): Promise<EquivocationRecord | null>;
  /** The node's equivocations, newest first. */
  listEquivocations(nodeId: string): Promise<EquivocationRecord[]>;
  /** The job's verification step; undefined when the job has none (not ended, cancelled, or verification off). */
  getVerification(jobId: string): Promise<VerificationRecord | undefined>;
  /** The verification steps of these jobs (one query), for lists. */
  getVerifications(jobIds: readonly string[]): Promise<VerificationRecord[]>;
  /**
   * Steps in state window whose window closed at `now` with no dispute: pay released to the providers
   * (pending → wallet, kind pay.release), state released. At most `limit` per call, each in its own
   * transaction. Returns the steps released.
   */
  closeVerificationWindows(now: number, limit: number): Promise<VerificationRecord[]>;
  /**
   * A buyer's dispute, in one transaction: buyer wallet → bond:<job> (kind dispute.bond; INSUFFICIENT_FUNDS
   * when short), a referee run queued on an independent operator, state refereeing, label disputed.
   * JOB_NOT_FOUND when the job is not the buyer's; CONFLICT when the window closed or the step is not open
   * to dispute (already decided, already disputed, still auditing).
   */
  openDispute(q: { jobId: string; buyerId: string; reason: string; bond: number; refereeJobId: string; now: number }): Promise<VerificationRecord>;
  /** The node's penalties (all kinds, equivocation included), newest first. */
  listPenalties(nodeId: string, q: { limit: number; cursor?: string }): Promise<Page<PenaltyRecord>>;
}
