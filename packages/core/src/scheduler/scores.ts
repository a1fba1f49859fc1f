/**
 * The scores: among the nodes that pass the filters, which one a job should take. Each score is in [0, 1]
 * and the total is their weighted sum (weights configurable; defaults below). Unknown inputs score 0.5, so
 * a new node is neither favoured nor shunned.
 *
 * - price: 1 - ask / maxPrice when both exist; 1 / (1 + ask / 100) with no cap. Inert (0.5) until nodes
 *   have asks, which the market issue adds.
 * - reliability: the node's reputation (trust/reputation.ts: audits and canaries passed or failed, completions,
 *   lost leases, decayed; 0.5 for a new node) times its uptime (decayed outages, node-stats.ts). The plain
 *   success rate no longer scores: it counts every run alike, where a failed audit must outweigh many
 *   completions; it still drives auto-cordon (node-stats.ts).
 * - performance: the node's expected runtime against its GPU class's typical one: its measured runs (actual
 *   over the fleet's mean for the same job shape and class, node-stats.ts) blended with its proof-of-hardware
 *   score (a node proven at 1.3× its class table is expected to take 1 / 1.3 of the class's time), the proof
 *   counting as PROOF_PRIOR_RUNS runs so measured jobs soon dominate. 0.5 when neither is known.
 * - latency: the agent-measured heartbeat round trip, 1 / (1 + rtt / 50 ms), averaged with 1 or 0 for
 *   being in the buyer's preferredRegion when the job names one.
 * - packing: how full the node will be after this job — half its GPUs (of the class taken), a quarter each
 *   its CPU and memory — so partly used nodes fill first, whole nodes stay free for multi-GPU jobs, and a
 *   small job goes to a small node rather than take a slice of the few nodes big enough for the largest
 *   jobs (fragmentation-aware, as Alibaba's FGD and kube's MostAllocated do), less three times the share of the
 *   node's GPUs the placement would strand (left free without the CPU or memory to use them).
 * - spread (issue 14): for jobs without GPUs, 1 up to SPREAD_FREE_ATTEMPTS active attempts on the node, then
 *   1 / (1 + attempts past them / SPREAD_HALF_ATTEMPTS). Each attempt costs its node's agent a start, a result
 *   and its share of every work poll whatever its size, so a burst of tiny CPU jobs, which packing alone would
 *   pile onto one node, spreads over the fleet; a few large CPU jobs still pack (packing decides among nodes
 *   with few attempts, and its differences outweigh this one for large jobs). GPU jobs: 0.5 everywhere (inert).
 */
import type { NodeCapacity, PoolSlot } from './capacity-index.js';
import { priceAt } from './filters.js';
import { DEFAULT_REPUTATION_HALF_LIFE_MS, reputationScore } from '../trust/reputation.js';
import { DEFAULT_NODE_STATS_POLICY, decayStats, type NodeStats } from './node-stats.js';
import type { JobRequirements } from './requirements.js';

export interface ScoreWeights {
  price: number;
  reliability: number;
  performance: number;
  latency: number;
  packing: number;
  spread: number;
}

export const DEFAULT_SCORE_WEIGHTS: ScoreWeights = { price: 1, reliability: 2, performance: 1, latency: 1, packing: 2, spread: 2 };

export type ScoreParts = ScoreWeights;

/** Reliability and performance change only with stats and reputation: cached on the node for this long. */
const SCORE_CACHE_MS = 60_000;

export function priceScore(req: JobRequirements, node: NodeCapacity): number {
  // A market job pays the node's clearing price (an ask-less node: the index), so that is what is cheap or dear.
  if (req.paid && req.maxPrice !== undefined && req.maxPrice > 0) {
    const price = priceAt(req, node);
    return price === null ? 0 : Math.max(0, 1 - price / req.maxPrice);
  }
  const ask = node.askPerGpuHour;
  if (ask === undefined || req.gpuCount === 0) return 0.5;
  if (req.maxPrice !== undefined && req.maxPrice > 0) return Math.max(0, 1 - ask / req.maxPrice);
  return 1 / (1 + ask / 100);
}

export function latencyScore(req: JobRequirements, node: NodeCapacity): number {
  const rtt = node.rttMs === undefined ? 0.5 : 1 / (1 + node.rttMs / 50);
  if (req.preferredRegion === undefined) return rtt;
  return (rtt + (node.region === req.preferredRegion ? 1 : 0)) / 2;
}

/**
 * Stranded GPUs weigh this many times their share in the packing score (issue 18): on the Alibaba trace, GPUs
 * left free on nodes whose CPU ran out were the engine's main loss against first-fit once the fleet filled.
 */
export const STRANDED_WEIGHT = 3;

export function packingScore(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined): number {
  const cpuLeft = Math.max(0, node.freeCpu - req.cpu);
  const memLeft = Math.max(0, node.freeMemoryMb - req.memoryMb);
  const cpu = 1 - cpuLeft / Math.max(node.cpuCores, 1e-9);
  const mem = node.memoryMb > 0 ? 1 - memLeft / node.memoryMb : 1;
  const fill = slot && req.gpuCount > 0 ? ((slot.size - slot.free + req.gpuCount) / slot.size) * 0.5 + cpu * 0.25 + mem * 0.25 : (cpu + mem) / 2;
  return Math.max(0, fill - STRANDED_WEIGHT * strandedShare(node, req.gpuCount, cpuLeft, memLeft));
}

/** Active attempts a node holds before the spread score falls; past them, this many more halve it. */
export const SPREAD_FREE_ATTEMPTS = 4;
export const SPREAD_HALF_ATTEMPTS = 8;

export function spreadScore(req: JobRequirements, node: NodeCapacity): number {
  if (req.gpuCount > 0) return 0.5;
  return 1 / (1 + Math.max(0, node.activeAttempts - SPREAD_FREE_ATTEMPTS) / SPREAD_HALF_ATTEMPTS);
}

/**
 * The share of the node's GPUs this placement would leave free but short of CPU or memory (less than the
 * node's own cores and memory per GPU, halved): GPUs nobody can use. CPU-only jobs that eat the cores of a
 * GPU node strand its GPUs; this is what keeps them off such nodes while other room exists.
 */
function strandedShare(node: NodeCapacity, gpusTaken: number, cpuLeft: number, memLeft: number): number {
  const total = node.gpuTotal;
  const gpusLeft = node.freeGpuCount - gpusTaken;
  if (total === 0 || gpusLeft <= 0) return 0;
  const cpuShort = 1 - Math.min(1, cpuLeft / gpusLeft / (node.cpuCores / total / 2));
  const memShort = node.memoryMb > 0 ? 1 - Math.min(1, memLeft / gpusLeft / (node.memoryMb / total / 2)) : 0;
  return Math.max(cpuShort, memShort) * (gpusLeft / total);
}

/** Uptime in (0, 1]: 1 / (1 + decayed outages / 2); outages are not in the reputation (no job was lost). */
export function uptimeFactor(s: NodeStats, now: number, halfLifeMs: number): number {
  return 1 / (1 + decayStats(s, now, halfLifeMs).outages / 2);
}

/** Reliability in [0, 1]: reputation times uptime. A new node: 0.5, neither favoured nor shunned. */
export function reliabilityOf(node: NodeCapacity, now: number, halfLifeMs: number, reputationHalfLifeMs: number): number {
  return reputationScore(node.reputation, now, reputationHalfLifeMs) * uptimeFactor(node.stats, now, halfLifeMs);
}

/** The proof's score weighs as much as this many measured runs of the node. */
export const PROOF_PRIOR_RUNS = 2;
/** A proof score counts within these bounds: one timing cannot make a node look 100× faster or slower. */
export const PROOF_SCORE_BOUNDS = { min: 0.25, max: 4 } as const;
/** Measured runs below this decayed weight (and no proof) leave the runtime unknown, as node-stats.ts performanceScore does. */
const MIN_RUNTIME_WEIGHT = 0.5;

/**
 * The node's expected runtime as a fraction of its GPU class's typical runtime (1 = typical, 0.8 = 20% faster),
 * or null when nothing is known: the decayed mean of its measured ratios (weight: decayed runs), blended with
 * 1 / its proof score (weight PROOF_PRIOR_RUNS) when it is proven.
 */
export function expectedRuntimeRatio(stats: Pick<NodeStats, 'runtimeRatio' | 'runtimeWeight'>, provenScore: number | null): number | null {
  const measured = stats.runtimeRatio !== null && Number.isFinite(stats.runtimeRatio) && stats.runtimeRatio > 0 ? stats.runtimeRatio : null;
  const w = measured === null ? 0 : Math.max(0, stats.runtimeWeight);
  if (provenScore === null || !Number.isFinite(provenScore) || provenScore <= 0) return measured !== null && w >= MIN_RUNTIME_WEIGHT ? measured : null;
  const prior = 1 / Math.min(PROOF_SCORE_BOUNDS.max, Math.max(PROOF_SCORE_BOUNDS.min, provenScore));
  return measured === null ? prior : (measured * w + prior * PROOF_PRIOR_RUNS) / (w + PROOF_PRIOR_RUNS);
}

/** Performance in [0, 1]: 1 / (1 + expected runtime ratio); 0.5 for a typical or unknown node, higher when faster. */
export function performanceOf(node: Pick<NodeCapacity, 'stats' | 'provenScore'>): number {
  const r = expectedRuntimeRatio(node.stats, node.provenScore);
  return r === null ? 0.5 : 1 / (1 + r);
}

/** A job's expected runtime on this node, from its class's typical runtime (the fleet mean for the job shape). */
export function expectedRuntimeMs(classTypicalMs: number, node: Pick<NodeCapacity, 'stats' | 'provenScore'>): number {
  return classTypicalMs * (expectedRuntimeRatio(node.stats, node.provenScore) ?? 1);
}

/** Recompute the node's cached reliability and performance scores when stale. */
function refresh(node: NodeCapacity, now: number, halfLifeMs: number, reputationHalfLifeMs: number): void {
  if (now - node.scoresAt > SCORE_CACHE_MS || now < node.scoresAt) {
    node.reliabilityScore = reliabilityOf(node, now, halfLifeMs, reputationHalfLifeMs);
    node.performanceScore = performanceOf(node);
    node.scoresAt = now;
  }
}

export function scoreParts(
  req: JobRequirements,
  node: NodeCapacity,
  slot: PoolSlot | undefined,
  now: number,
  halfLifeMs = DEFAULT_NODE_STATS_POLICY.halfLifeMs,
  reputationHalfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS,
): ScoreParts {
  refresh(node, now, halfLifeMs, reputationHalfLifeMs);
  return {
    price: priceScore(req, node),
    reliability: node.reliabilityScore,
    performance: node.performanceScore,
    latency: latencyScore(req, node),
    packing: packingScore(req, node, slot),
    spread: spreadScore(req, node),
  };
}

export function scoreNode(
  req: JobRequirements,
  node: NodeCapacity,
  slot: PoolSlot | undefined,
  now: number,
  w: ScoreWeights,
  halfLifeMs = DEFAULT_NODE_STATS_POLICY.halfLifeMs,
  reputationHalfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS,
): number {
  refresh(node, now, halfLifeMs, reputationHalfLifeMs);
  return (
    w.price * priceScore(req, node) +
    w.reliability * node.reliabilityScore +
    w.performance * node.performanceScore +
    w.latency * latencyScore(req, node) +
    w.packing * packingScore(req, node, slot) +
    w.spread * spreadScore(req, node)
  );
}
