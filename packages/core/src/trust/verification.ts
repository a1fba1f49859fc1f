/**
 * Canary and replication helpers. Canaries: known-answer jobs at about 1% of each node's traffic, drawn
 * per job so a node cannot count its way to one. Replication: two replicas on distinct operators; on a
 * mismatch a referee run (on a third, independent operator) decides, which is correct whenever at least one
 * of the two replicas is honest and the referee is, because an honest run reproduces the true output.
 * An audit mismatch (executor against auditor) is decided the same way, but by a quorum of referees (2 by
 * default) that agree with one side: one referee drawn from a ring colluding with either side cannot convict
 * an honest node. Referees that agree on a third output (both sides wrong) need one vote more, because lazy
 * nodes can agree by accident (two empty outputs are equal).
 */
import type { Random } from '../ports.js';

export const CANARY_RATE = 0.01;

export function canaryDecision(random: Random, rate = CANARY_RATE): { canary: boolean; draw: number } {
  const draw = random.next();
  return { canary: draw < rate, draw };
}

export type ReplicaVerdict =
  | { kind: 'agreed' }
  | { kind: 'referee-needed' }
  /** Indexes (0, 1) of the replicas whose output the referee contradicted. */
  | { kind: 'decided'; wrong: number[] }
  /** The referee matched neither: run another referee (the referee may be the faulty one). */
  | { kind: 'unresolved' };

/** Digests of the two replicas and, when run, the referee's. */
export function replicaVerdict(a: string, b: string, referee?: string): ReplicaVerdict {
  if (a === b) return { kind: 'agreed' };
  if (referee === undefined) return { kind: 'referee-needed' };
  if (referee !== a && referee !== b) return { kind: 'unresolved' };
  return { kind: 'decided', wrong: referee === a ? [1] : [0] };
}

export type MismatchVerdict =
  | { kind: 'agreed' }
  | { kind: 'referee-needed' }
  /** Who lost: each side whose digest differs from the output `quorum` referees agreed on. */
  | { kind: 'decided'; truth: string; wrong: Array<'executor' | 'auditor'> };

/**
 * An audit: executor's and auditor's digests, then referees' (each on another independent operator) until
 * `quorum` agree with one side, or `quorum` + 1 agree on a third output.
 */
export function mismatchVerdict(executor: string, auditor: string, referees: readonly string[], quorum = 2): MismatchVerdict {
  if (executor === auditor) return { kind: 'agreed' };
  const votes = new Map<string, number>();
  for (const r of referees) {
    const n = (votes.get(r) ?? 0) + 1;
    votes.set(r, n);
    if (n >= (r === executor || r === auditor ? quorum : quorum + 1)) {
      const wrong: Array<'executor' | 'auditor'> = [];
      if (executor !== r) wrong.push('executor');
      if (auditor !== r) wrong.push('auditor');
      return { kind: 'decided', truth: r, wrong };
    }
  }
  return { kind: 'referee-needed' };
}
