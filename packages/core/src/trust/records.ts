/**
 * Verification and penalty records (issue 11): what the store keeps about a job's verification step and a
 * node's penalties. The policy that moves them is pure (trust/*.ts); the store applies it.
 */
import type { Asset } from '@gpux/protocol';
import type { PenaltyEvent } from './penalties.js';

/**
 * Where a job's verification step is:
 *  auditing    an audit run (re-execution on an independent operator) is queued or running; pay held
 *  refereeing  executor and auditor disagreed (or a dispute was opened); referee runs decide
 *  window      not audited (sampled out, not verifiable, or no audit could run); pay held until windowClosesAt
 *  passed      the audit agreed (or the referees sided with the node); pay released
 *  released    the window closed with no dispute; pay released
 *  failed      a wrong result was confirmed; pay forfeited, the node penalized
 */
export type VerificationState = 'auditing' | 'refereeing' | 'window' | 'passed' | 'released' | 'failed';

/** The honest label a buyer sees (API, CLI, dashboard); TRUST.md says what each may claim. */
export type VerificationLabel =
  | 'audit-pending' // drawn for audit; the independent re-run has not finished
  | 'audited-passed' // an independent re-run on another operator produced the same output digest
  | 'replica-pending' // replicas: 2: the second run on another operator (or a referee on a mismatch) has not finished
  | 'replicated-agreed' // replicas: 2: the second run on another operator agreed (or referees sided with this result)
  | 'sampled-out' // not drawn for audit (with probability p); disputable until the window closes
  | 'not-verifiable' // the job declared deterministic: false: never re-executed, unaudited
  | 'unaudited' // drawn, but no audit could run (no independent node, budget); disputable until the window closes
  | 'disputed' // the buyer disputed within the window; referee runs decide (2 must agree)
  | 'dispute-rejected' // the referee agreed with the node; the buyer's bond went to the provider
  | 'wrong-result'; // a referee confirmed the result wrong: pay back to the buyer, the node slashed and banned

/** A run made to check a job: the audit, a referee, or (spec.verify) a run of the buyer's checker. */
export interface CheckRunRecord {
  jobId: string;
  kind: 'audit' | 'referee' | 'checker';
  /** The check job's state ('queued' … 'succeeded'). */
  state: string;
  nodeId: string | null;
  /** The check run's output digest and exit code once it ended with a result. */
  outputDigest: string | null;
  exitCode: number | null;
  /** A checker run: the two runs whose outputs it compares ('executor' or a check run's job id). */
  pair?: readonly [string, string];
  /**
   * Audit, referee: whether it agreed with the executor's result (same digest and exit code, or the buyer's
   * checker said so); checker: whether its two output sets agree (it exited 0). null: running or unknown.
   * Absent: compare digests.
   */
  agreed?: boolean | null;
}

export interface DisputeRecord {
  buyerId: string;
  reason: string;
  bond: number;
  asset: Asset;
  at: number;
}

export interface VerificationRecord {
  jobId: string;
  /** The attempt whose signed commitment is being verified, and its node and operator. */
  attemptId: string;
  nodeId: string;
  providerId: string | null;
  state: VerificationState;
  label: VerificationLabel;
  /** The audit probability the job was drawn with (1 in the first-audits phase; 0 when not auditable). */
  p: number;
  /** The CSPRNG draw compared with p (audit iff draw < p); null when no draw was needed. */
  draw: number | null;
  /** Why audited or not: 'first-audits' | 'sampled' | 'sampled-out' | 'not-deterministic' | 'replicated' | 'replica-unfunded' | … */
  reason: string;
  /** What the executor committed to. */
  outputDigest: string;
  exitCode: number | null;
  /** Until when the buyer may dispute; pay is released then if nothing is open. */
  windowClosesAt: number;
  checks: CheckRunRecord[];
  dispute: DisputeRecord | null;
  /** How it was decided, in words (null while open). */
  verdict: string | null;
  /** spec.verify: the result was found in agreement by the buyer's checker (not by identical digests). */
  byChecker?: boolean;
  createdAt: number;
  resolvedAt: number | null;
}

/** A penalty applied to a node, with its evidence (GET /v1/nodes/:id/penalties). */
export interface PenaltyRecord {
  id: string;
  nodeId: string;
  kind: PenaltyEvent['kind'];
  jobId: string | null;
  attemptId: string | null;
  /** What proves it: commitments and signatures, check-run digests, lease times. */
  evidence: Record<string, unknown>;
  /** The ledger transfer that moved the money (null when none moved). */
  transferId: string | null;
  slashed: number;
  fee: number;
  banned: boolean;
  suspended: boolean;
  reason: string;
  at: number;
}
