/**
 * Choosing who re-executes a job (an auditor or a referee): an independent node drawn with the
 * coordinator's CSPRNG after the commitment, so the executor cannot predict it. Independent means not the
 * executor, not a node of the same operator (provider account), and not a node of any operator the policy
 * knows colludes with it. Collusion the policy does not know of is not excluded: such a ring is caught only
 * when the draw falls outside it (the trust benchmark reports how often).
 */
import type { Random } from '../ports.js';

export interface AuditCandidate {
  nodeId: string;
  /** The provider account that owns the node. */
  operatorId: string;
}

export interface AuditorExclusions {
  /** Nodes whose work is being checked (the executor; for a referee, also the auditor). */
  nodes: readonly AuditCandidate[];
  /** Operators known to act together with any of those nodes' operators. */
  colludingOperators?: ReadonlySet<string>;
}

/** How many random probes before falling back to a scan; a fleet is mostly eligible, so a probe rarely misses. */
const PROBES = 16;

export function isIndependent(c: AuditCandidate, ex: AuditorExclusions): boolean {
  for (const n of ex.nodes) if (c.nodeId === n.nodeId || c.operatorId === n.operatorId) return false;
  return !ex.colludingOperators?.has(c.operatorId);
}

/**
 * A uniformly drawn independent candidate, or null when there is none (then the job cannot be audited
 * now: the caller keeps the payment pending and retries, or labels it). Expected O(1) on a large fleet.
 */
export function chooseAuditor(candidates: readonly AuditCandidate[], ex: AuditorExclusions, random: Random): AuditCandidate | null {
  const n = candidates.length;
  if (n === 0) return null;
  for (let i = 0; i < PROBES; i++) {
    const c = candidates[Math.min(n - 1, Math.floor(random.next() * n))] as AuditCandidate;
    if (isIndependent(c, ex)) return c;
  }
  const ok = candidates.filter((c) => isIndependent(c, ex));
  if (ok.length === 0) return null;
  return ok[Math.min(ok.length - 1, Math.floor(random.next() * ok.length))] as AuditCandidate;
}
