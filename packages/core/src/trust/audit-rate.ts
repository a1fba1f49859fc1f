/**
 * The adaptive audit rate of TRUST.md ("as BOINC does"): every job of a node is audited until it has
 * FIRST_AUDITS passes in a row; after that p = max(p_floor, 1 / consecutive passes), with p_floor per tier.
 * Any failure resets the count. Non-deterministic jobs are never audited by re-execution: they are labelled
 * unaudited instead. Pure: the draw comes from the Random port and is returned so it can be recorded.
 */
import type { Random } from '../ports.js';
import type { TrustTier } from '../scheduler/requirements.js';

/** Passes in a row before a node leaves the audit-everything phase. */
export const FIRST_AUDITS = 10;

/**
 * p_floor per tier. open 10% and attested 5% are TRUST.md's. curated 2%: its operators are identified and
 * vouched for by an admin, so a cheat costs them legal and reputational recourse beyond stake; the floor is
 * kept above 0 because a curated node can still be compromised or misconfigured (2% finds a node that is
 * always wrong within ~50 jobs of leaving the first-10 phase, 95% within ~150).
 */
export const AUDIT_FLOOR: Readonly<Record<TrustTier, number>> = { open: 0.1, attested: 0.05, curated: 0.02 };

export interface AuditHistory {
  /** Audits (and canaries) passed in a row since the node's last failure. */
  consecutivePasses: number;
}

export const emptyAuditHistory = (): AuditHistory => ({ consecutivePasses: 0 });

export interface AuditDecision {
  audit: boolean;
  /** The probability the job was audited with (1 in the first-10 phase, 0 when not auditable). */
  p: number;
  /** The uniform draw in [0, 1) compared with p (audit iff draw < p); null when no draw was needed. */
  draw: number | null;
  /** Why: 'first-audits' | 'sampled' | 'sampled-out' | 'not-deterministic'. */
  reason: 'first-audits' | 'sampled' | 'sampled-out' | 'not-deterministic';
}

export interface AuditRateOptions {
  /** false: the job declared it cannot be bit-exact and has no checker; it is never re-executed. */
  deterministic?: boolean;
  /** Overrides AUDIT_FLOOR (from coordinator config). */
  floors?: Readonly<Record<TrustTier, number>>;
  firstAudits?: number;
}

/** The audit probability for a node with this history: 1 until `firstAudits` passes in a row, then max(floor, 1/passes). */
export function auditProbability(history: AuditHistory, tier: TrustTier, opts: AuditRateOptions = {}): number {
  const first = opts.firstAudits ?? FIRST_AUDITS;
  const floor = (opts.floors ?? AUDIT_FLOOR)[tier];
  if (!(floor > 0 && floor <= 1)) throw new Error(`invariant: audit floor for ${tier} must be in (0, 1], got ${floor}`);
  const n = Math.max(0, Math.floor(history.consecutivePasses));
  if (n < first) return 1;
  return Math.min(1, Math.max(floor, 1 / n));
}

/** Whether to audit this job. The draw is taken after the node's commitment is stored, from the coordinator's CSPRNG. */
export function auditDecision(history: AuditHistory, tier: TrustTier, random: Random, opts: AuditRateOptions = {}): AuditDecision {
  if (opts.deterministic === false) return { audit: false, p: 0, draw: null, reason: 'not-deterministic' };
  const p = auditProbability(history, tier, opts);
  if (p >= 1) return { audit: true, p: 1, draw: null, reason: 'first-audits' };
  const draw = random.next();
  const audit = draw < p;
  return { audit, p, draw, reason: audit ? 'sampled' : 'sampled-out' };
}

/** The history after an audit or canary outcome: a pass extends the run, any failure resets it. */
export function recordAuditOutcome(history: AuditHistory, passed: boolean): AuditHistory {
  return { consecutivePasses: passed ? history.consecutivePasses + 1 : 0 };
}
