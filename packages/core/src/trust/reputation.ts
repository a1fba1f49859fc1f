/**
 * A node's reputation: a decayed, weighted ratio of good to bad outcomes, in [0, 1].
 *
 *   good = Σ w_e · 2^(−age_e / halfLife) over passed audits, passed canaries and completions
 *   bad  = Σ w_e · 2^(−age_e / halfLife) over failed audits, failed canaries and lost leases
 *   score = (PRIOR + good) / (2 · PRIOR + good + bad)
 *
 * Weights (REPUTATION_WEIGHTS): a verified pass counts 1 and a plain completion 0.2 (unverified work is weak
 * evidence); a failed audit or canary counts 20 (one proven cheat outweighs many passes, as the stake
 * multiple does) and a lost lease 1. PRIOR = 1 each side puts a new node at 0.5, neither trusted nor
 * distrusted. Kept as two decayed sums and the time they were last decayed to, so an update is O(1) and
 * the state can be stored in a row. Pure: time is a parameter. Ready for the scheduler's scores.
 */

export type ReputationEventKind = 'audit-passed' | 'audit-failed' | 'canary-passed' | 'canary-failed' | 'completed' | 'lease-lost';

export const REPUTATION_WEIGHTS: Readonly<Record<ReputationEventKind, { good: number; bad: number }>> = {
  'audit-passed': { good: 1, bad: 0 },
  'canary-passed': { good: 1, bad: 0 },
  completed: { good: 0.2, bad: 0 },
  'audit-failed': { good: 0, bad: 20 },
  'canary-failed': { good: 0, bad: 20 },
  'lease-lost': { good: 0, bad: 1 },
};

export const REPUTATION_PRIOR = 1;
/** Default half-life: 14 days, long enough that a week of good work does not wash out a proven cheat quickly. */
export const DEFAULT_REPUTATION_HALF_LIFE_MS = 14 * 24 * 3_600_000;

export interface ReputationState {
  good: number;
  bad: number;
  /** Epoch ms the sums are decayed to. */
  asOf: number;
}

export const emptyReputation = (at: number): ReputationState => ({ good: 0, bad: 0, asOf: at });

/** The sums decayed to `now` (never forward in time: an event older than asOf is decayed from asOf). */
export function decayReputation(s: ReputationState, now: number, halfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS): ReputationState {
  if (now <= s.asOf) return s;
  if (!(halfLifeMs > 0)) throw new Error(`invariant: reputation half-life ${halfLifeMs} must be > 0`);
  const f = 2 ** (-(now - s.asOf) / halfLifeMs);
  return { good: s.good * f, bad: s.bad * f, asOf: now };
}

export function applyReputationEvent(s: ReputationState, kind: ReputationEventKind, at: number, halfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS): ReputationState {
  const d = decayReputation(s, at, halfLifeMs);
  const w = REPUTATION_WEIGHTS[kind];
  // An event older than the state's time is decayed by its age, so out-of-order events weigh what they should.
  const f = at < d.asOf ? 2 ** (-(d.asOf - at) / halfLifeMs) : 1;
  return { good: d.good + w.good * f, bad: d.bad + w.bad * f, asOf: d.asOf };
}

/** The score in [0, 1] at `now`: 0.5 for a new node, toward 1 with verified work, toward 0 with failures. */
export function reputationScore(s: ReputationState, now: number, halfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS): number {
  const d = decayReputation(s, now, halfLifeMs);
  return (REPUTATION_PRIOR + d.good) / (2 * REPUTATION_PRIOR + d.good + d.bad);
}
