/**
 * Node track records for the reliability and performance scores, and the auto-cordon rule. Pure: the store
 * applies `applyOutcome` inside the transaction that ends an attempt, the index reads the result.
 *
 * - successes / failures / outages are exponentially decayed counts (half-life `halfLifeMs`): a count c
 *   recorded at t is worth c · 2^(-(now - t) / halfLife) at now. Old failures are forgiven; a node's recent
 *   record dominates. Only infrastructure failures count against a node (lost lease, executor error with no
 *   exit code); a job's own non-zero exit and cancellations are neutral.
 * - runtimeRatio is the decayed mean of actual / expected runtime, where "expected" is the fleet's decayed
 *   mean runtime of the same job shape (image, command, GPUs) on the same GPU class: 1 is typical for the
 *   class, 0.8 is 20% faster. Unknown until the shape has `minExpectationSamples` runs on the class.
 * - recentFailures: times of infrastructure failures inside `cordonWindowMs`; reaching `cordonAfterFailures`
 *   cordons the node (event node.auto_cordoned, reason shown on the node) until an operator uncordons it.
 */

export interface NodeStats {
  successes: number;
  failures: number;
  outages: number;
  /** The time the decayed counts above are valued at. */
  decayedAt: number;
  runtimeRatio: number | null;
  runtimeWeight: number;
  recentFailures: number[];
}

export interface NodeStatsPolicy {
  halfLifeMs: number;
  cordonAfterFailures: number;
  cordonWindowMs: number;
  minExpectationSamples: number;
}

export const DEFAULT_NODE_STATS_POLICY: NodeStatsPolicy = {
  halfLifeMs: 3 * 24 * 3600_000,
  cordonAfterFailures: 5,
  cordonWindowMs: 3600_000,
  minExpectationSamples: 3,
};

export const emptyNodeStats = (now = 0): NodeStats => ({
  successes: 0,
  failures: 0,
  outages: 0,
  decayedAt: now,
  runtimeRatio: null,
  runtimeWeight: 0,
  recentFailures: [],
});

export function decayFactor(fromMs: number, toMs: number, halfLifeMs: number): number {
  return toMs <= fromMs ? 1 : 2 ** (-(toMs - fromMs) / halfLifeMs);
}

/** The counts valued at `now`. */
export function decayStats(s: NodeStats, now: number, halfLifeMs: number): NodeStats {
  const f = decayFactor(s.decayedAt, now, halfLifeMs);
  if (f === 1) return s;
  return { ...s, successes: s.successes * f, failures: s.failures * f, outages: s.outages * f, runtimeWeight: s.runtimeWeight * f, decayedAt: now };
}

/** success: ran to the end (any exit code: the program's own failure is not the node's); failure: infra; outage: node went offline. */
export type NodeOutcome = { kind: 'success'; runtimeRatio?: number } | { kind: 'failure' } | { kind: 'outage' } | { kind: 'neutral' };

export interface OutcomeResult {
  stats: NodeStats;
  /** Set when this outcome crosses the auto-cordon threshold. */
  cordonReason: string | null;
}

export function applyOutcome(prev: NodeStats, outcome: NodeOutcome, now: number, policy: NodeStatsPolicy): OutcomeResult {
  const s = { ...decayStats(prev, now, policy.halfLifeMs) };
  s.recentFailures = prev.recentFailures.filter((t) => t > now - policy.cordonWindowMs);
  let cordonReason: string | null = null;
  if (outcome.kind === 'success') {
    s.successes += 1;
    const r = outcome.runtimeRatio;
    if (r !== undefined && Number.isFinite(r) && r > 0) {
      const w = s.runtimeWeight;
      s.runtimeRatio = s.runtimeRatio === null || w === 0 ? r : (s.runtimeRatio * w + r) / (w + 1);
      s.runtimeWeight = w + 1;
    }
  } else if (outcome.kind === 'failure') {
    s.failures += 1;
    s.recentFailures.push(now);
    if (s.recentFailures.length >= policy.cordonAfterFailures) {
      const mins = Math.round(policy.cordonWindowMs / 60_000);
      cordonReason = `auto-cordoned: ${s.recentFailures.length} attempts lost or failed by the node (not by the job) within ${mins} min; uncordon once fixed`;
    }
    // Keep only what the rule needs.
    if (s.recentFailures.length > policy.cordonAfterFailures) s.recentFailures = s.recentFailures.slice(-policy.cordonAfterFailures);
  } else if (outcome.kind === 'outage') {
    s.outages += 1;
  }
  return { stats: s, cordonReason };
}

/**
 * Reliability in [0, 1]: the success rate with a prior of 3 successes in 4 (a new node starts at 0.75, not
 * at 0 or 1), times an uptime factor 1 / (1 + decayed outages / 2).
 */
export function reliabilityScore(s: NodeStats, now: number, halfLifeMs: number): number {
  const d = decayStats(s, now, halfLifeMs);
  const rate = (d.successes + 3) / (d.successes + d.failures + 4);
  return rate / (1 + d.outages / 2);
}

/** Performance in [0, 1]: 0.5 for a typical or unknown node, higher when faster than its class, lower when slower. */
export function performanceScore(s: NodeStats): number {
  if (s.runtimeRatio === null || s.runtimeWeight < 0.5) return 0.5;
  return 1 / (1 + s.runtimeRatio);
}

/** 52-bit FNV-1a of a string, as base-36: a stable, short key without node:crypto. */
export function shortHash(text: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x01000193;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193) >>> 0;
    h2 = Math.imul(h2 ^ c, 0x5bd1e995) >>> 0;
  }
  return (h1 * 0x100000 + (h2 & 0xfffff)).toString(36);
}

/** The job shape runtimes are compared within: image, command, args and GPU count. */
export function runtimeShapeKey(spec: { image: string; command: readonly string[]; args: readonly string[]; resources: { gpu: { count: number } } }): string {
  return shortHash(JSON.stringify([spec.image, spec.command, spec.args, spec.resources.gpu.count]));
}
