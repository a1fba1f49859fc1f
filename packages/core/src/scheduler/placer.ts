/**
 * PlacementEngine: the real scheduler. For a window of queued jobs: order them fairly (fairness.ts), then
 * for each job search a bounded sample of feasible nodes in the index (search.ts: for GPU jobs, `perGroup` of each
 * GPU class and free-GPU level that can take it), score them (scores.ts) and take the best; reserve its capacity
 * so the next job sees it gone. Gang jobs (spec.nodes = N) take N distinct nodes all or nothing; replicas take
 * nodes of distinct operators.
 *
 * Nodes a job already failed on are a soft filter: they are used only when no other node fits, so a
 * one-node network still retries (repeat offenders are auto-cordoned instead, node-stats.ts). A job shape
 * that found no node is not searched again in the same pass: capacity only shrinks within a pass.
 *
 * "No fit" is decided exactly (issue 18): when the bounded search finds no node the job may use, the exact
 * search (exact-search.ts) walks the index's fit cells, so a job waits only when no node in the index fits it.
 *
 * Scarcity (issue 18, scarcity.ts): in a pass, jobs with a choice of GPU pools are steered off the pools the
 * window's model-constrained jobs need, off pools drained further than the fleet, off the last free GPUs and last
 * emptiest nodes of a pool and off the pool's rarely large room, and within one
 * round of the fair order the jobs fewest GPUs can take go first. Demand (demand.ts): in a pass, a job takes the node
 * where it leaves the most the window's other jobs can still use (no GPUs stranded without cores or memory).
 *
 * Predictions (issue 17, PlacementContext.predict; without them nothing here changes): the first job of the pass that
 * does not fit gets a reservation at its predicted earliest start and later jobs take reserved room only if predicted
 * (p90) to end before it (backfill.ts); each class is ordered by predicted run time with aging (fairness.ts); and a
 * node's chance of failing during the job's predicted run costs `stabilityWeight` × that chance, and a GPU class the
 * job is predicted to run slower on than its median costs `speedWeight` × ln of the ratio (faster ones gain).
 */
import type { GangPeer } from '@gpux/protocol';
import type { Random } from '../ports.js';
import type { JobRecord, Placement } from '../records.js';
import type { CapacityIndex, NodeCapacity, PoolSlot } from './capacity-index.js';
import { DemandProfile } from './demand.js';
import { searchExact } from './exact-search.js';
import { DEFAULT_AGING_MS, fairOrder } from './fairness.js';
import { bestSlot, pickGpus, stakeLockAt } from './filters.js';
import { DEFAULT_NODE_STATS_POLICY } from './node-stats.js';
import { PredictedPass } from './predicted-pass.js';
import { type JobRequirements, requirementsOf } from './requirements.js';
import { PoolPressure } from './scarcity.js';
import { DEFAULT_SCORE_WEIGHTS, type ScoreWeights, scoreNode } from './scores.js';
import { type Candidate, type SearchLimits, type SearchResult, searchCandidates } from './search.js';
import type { PlacementContext, Scheduler } from './types.js';

export interface PlacementEngineOptions {
  weights?: Partial<ScoreWeights>;
  /**
   * Feasible nodes scored per job at most (K). Default 128. GPU jobs stop earlier, at `perGroup` per GPU class and
   * free-GPU level (search.ts); CPU-only jobs take K, fewest free cores first.
   */
  sampleSize?: number;
  /** Nodes looked at per job at most, feasible or not. Default 512. */
  maxVisits?: number;
  /**
   * GPU jobs: feasible nodes scored per GPU class and free-GPU level at most (search.ts). Default 2: the replay's
   * delays as with 128 taken from the lowest levels (issue 18), with about 17 nodes scored per GPU job at 50,000 nodes.
   */
  perGroup?: number;
  /**
   * GPU jobs: when the classes and levels with fitting nodes are too few to give this many candidates at perGroup
   * each, each gets its share of it (a fleet of one class: nodes of one kind still differ in reliability, price and
   * latency). Default 16.
   */
  minSample?: number;
  /** A queued job moves up one priority class per this much waiting. Default 10 min. */
  agingMs?: number;
  /** Half-life of the reliability record. Default DEFAULT_NODE_STATS_POLICY.halfLifeMs. */
  halfLifeMs?: number;
  /** Used when the PlacementContext brings none. */
  random?: Random;
  /** Weight of the scarcity term (scarcity.ts): jobs with a choice leave the pools constrained jobs need. Default 3; 0 turns it off. */
  scarcityWeight?: number;
  /** Within one round of the fair order, try the jobs fewest GPUs can take first (fairness.ts). Default true. */
  leastReachFirst?: boolean;
  /** Weight of the demand loss (demand.ts), per GPU the window's other jobs can no longer use. Default 3; 0 turns it off. */
  demandWeight?: number;
  /**
   * With predictions (PlacementContext.predict): jobs of a pass that do not fit and get a reservation (backfill.ts),
   * at most. Default 1 (EASY backfill: the first); 0 turns reservations off.
   */
  reservations?: number;
  /** With predictions: order each class by predicted run time, aged (fairness.ts). Default true. */
  orderByWork?: boolean;
  /** With predictions: the aging of that order: a job's predicted run time counts half after this much waiting, and a job that waited this long goes first in its class. Default agingMs ÷ 4. */
  workAgingMs?: number;
  /** With predictions of node uptime: weight of the chance the node fails during the job's predicted run. Default 3; 0 turns it off. */
  stabilityWeight?: number;
  /**
   * With per-class run-time predictions (PlacementPredictor.runTimeOn): weight of how much slower the job is predicted
   * to run on a candidate's GPU class than its median (ln of the ratio, within ±1; faster classes score higher).
   * Default 2; 0 turns it off.
   */
  speedWeight?: number;
}

/** Counters of the last place() call, for benchmarks and the explain of a pass. */
export interface PassStats {
  jobs: number;
  placed: number;
  visits: number;
  skippedShapes: number;
  /** Jobs for which the bounded search found nothing usable and the exact search ran. */
  exactSearches: number;
  /** With predictions: jobs given a reservation, and placements on reserved nodes (backfill). */
  reserved?: number;
  backfilled?: number;
}

export class PlacementEngine implements Scheduler {
  readonly weights: ScoreWeights;
  readonly sampleSize: number;
  readonly maxVisits: number;
  readonly perGroup: number;
  readonly minSample: number;
  readonly agingMs: number;
  readonly halfLifeMs: number;
  readonly scarcityWeight: number;
  readonly leastReachFirst: boolean;
  readonly demandWeight: number;
  readonly reservations: number;
  readonly orderByWork: boolean;
  readonly workAgingMs: number;
  readonly stabilityWeight: number;
  readonly speedWeight: number;
  private readonly random: Random | undefined;
  /** The pools the current pass's constrained jobs need (set by place() for its duration). */
  private pressure: PoolPressure | undefined;
  /** What the current pass's window still needs (set by place() for its duration). */
  private demand: DemandProfile | undefined;
  /** The current pass's predictions (set by place() for its duration, when the context brings a predictor). */
  private predicted: PredictedPass | undefined;
  lastPass: PassStats = { jobs: 0, placed: 0, visits: 0, skippedShapes: 0, exactSearches: 0 };

  constructor(opts: PlacementEngineOptions = {}) {
    this.weights = { ...DEFAULT_SCORE_WEIGHTS, ...opts.weights };
    this.sampleSize = Math.max(1, opts.sampleSize ?? 128);
    this.maxVisits = Math.max(this.sampleSize, opts.maxVisits ?? 512);
    this.perGroup = Math.max(1, opts.perGroup ?? DEFAULT_PER_GROUP);
    this.minSample = Math.min(this.sampleSize, opts.minSample ?? DEFAULT_MIN_SAMPLE);
    this.agingMs = opts.agingMs ?? DEFAULT_AGING_MS;
    this.halfLifeMs = opts.halfLifeMs ?? DEFAULT_NODE_STATS_POLICY.halfLifeMs;
    this.random = opts.random;
    this.scarcityWeight = opts.scarcityWeight ?? DEFAULT_SCARCITY_WEIGHT;
    this.leastReachFirst = opts.leastReachFirst ?? true;
    this.demandWeight = opts.demandWeight ?? DEFAULT_DEMAND_WEIGHT;
    this.reservations = Math.max(0, opts.reservations ?? 1);
    this.orderByWork = opts.orderByWork ?? true;
    this.workAgingMs = opts.workAgingMs ?? this.agingMs / 4;
    this.stabilityWeight = opts.stabilityWeight ?? DEFAULT_STABILITY_WEIGHT;
    this.speedWeight = opts.speedWeight ?? DEFAULT_SPEED_WEIGHT;
  }

  place(jobs: readonly JobRecord[], index: CapacityIndex, ctx: PlacementContext): Placement[] {
    const stats: PassStats = { jobs: jobs.length, placed: 0, visits: 0, skippedShapes: 0, exactSearches: 0 };
    const failed = new Set<string>();
    const out: Placement[] = [];
    const pressure = new PoolPressure(jobs, index);
    this.pressure = this.scarcityWeight > 0 ? pressure : undefined;
    this.demand = this.demandWeight > 0 ? new DemandProfile(jobs, index) : undefined;
    const reach = this.leastReachFirst ? (j: JobRecord) => pressure.reach(j) : undefined;
    const pr = ctx.predict ? new PredictedPass(ctx.predict, ctx.now, this.reservations) : undefined;
    this.predicted = pr;
    const work = pr && this.orderByWork ? (j: JobRecord) => pr.work(j) : undefined;
    try {
      for (const job of fairOrder(jobs, ctx.now, this.agingMs, (b) => index.buyerUsage(b), reach, work, this.workAgingMs)) {
        const req = requirementsOf(job);
        if (failed.has(req.shape)) {
          stats.skippedShapes++;
          continue;
        }
        pr?.aim(job);
        const placed = this.placeJob(job, index, ctx, stats);
        if (placed.length === 0) {
          failed.add(req.shape);
          pr?.notPlaced(job, req, index);
        } else {
          stats.placed++;
          out.push(...placed);
          this.pressure?.placed(req);
          this.demand?.placed(req);
        }
      }
    } finally {
      this.pressure = undefined;
      this.demand = undefined;
      this.predicted = undefined;
    }
    if (pr) {
      stats.reserved = pr.reserved;
      stats.backfilled = pr.backfilled;
    }
    this.lastPass = stats;
    return out;
  }

  /** One job: [] when it does not fit now, one placement, or N for a gang. Reserves what it returns. */
  placeJob(job: JobRecord, index: CapacityIndex, ctx: PlacementContext, stats?: PassStats): Placement[] {
    const req = requirementsOf(job);
    const n = req.nodes;
    if (req.check && n === 1) return this.placeCheck(job, req, index, ctx, stats);
    const want = n === 1 ? this.sampleSize : Math.max(this.sampleSize, 4 * n);
    const now = ctx.now;
    const lim: SearchLimits = {
      want,
      maxVisits: Math.max(this.maxVisits, 4 * want),
      distinct: n > 1,
      perGroup: n === 1 ? this.perGroup : undefined,
      minSample: this.minSample,
      // One node: the search keeps only the best-scored one (usable first), as best() over the whole sample would.
      best: n === 1 ? (node, slot) => this.scoreOf(req, node, slot, now) : undefined,
    };
    const res = searchFitting(req, index, ctx.random ?? this.random, lim, n, stats);
    const first = res.candidates[0];
    const chosen = n === 1 ? (first && first.score > BLOCKED ? [first] : undefined) : this.bestGang(req, res.candidates, now, n);
    if (!chosen) return [];
    return this.commit(job, req, chosen, index, ctx);
  }

  /**
   * Replicas of one job on nodes of distinct operators (and none of `excludeOperators`): `count`
   * placements, or [] when that many operators cannot take it now. For the trust layer's replication.
   */
  placeReplicas(job: JobRecord, count: number, index: CapacityIndex, ctx: PlacementContext, excludeOperators: Iterable<string> = []): Placement[] {
    const req = requirementsOf(job);
    const excluded = new Set(excludeOperators);
    const want = Math.max(this.sampleSize, 4 * count);
    const lim = { want, maxVisits: Math.max(this.maxVisits, 4 * want), distinct: true };
    let picked = this.byOperator(req, searchCandidates(req, index, ctx.random ?? this.random, lim).candidates, excluded, count, ctx.now);
    // Too few operators in the sample is not "too few operators": ask the exact search before giving up.
    if (picked.length < count) picked = this.byOperator(req, searchExact(req, index, lim).candidates, excluded, count, ctx.now);
    if (picked.length < count) return [];
    const out: Placement[] = [];
    for (const c of picked) out.push(...this.commit(job, req, [c], index, ctx, false));
    return out;
  }

  /** The best candidate of each operator not excluded, best first, at most `count`. */
  private byOperator(req: JobRequirements, cands: Candidate[], excluded: ReadonlySet<string>, count: number, now: number): Candidate[] {
    const best = new Map<string, Candidate>();
    for (const c of this.scored(req, cands, now)) {
      if (excluded.has(c.node.operatorId)) continue;
      const had = best.get(c.node.operatorId);
      if (!had || better(c, had)) best.set(c.node.operatorId, c);
    }
    return [...best.values()].sort(order).slice(0, count);
  }

  /**
   * A check run (audit, referee) of one node: a node drawn uniformly among the eligible ones found (TRUST.md:
   * "chosen after the commitment with randomness the node cannot predict"), not the best-scored, so an
   * operator cannot make its own nodes the likely auditors by pricing or packing. The draw and the number of
   * candidates ride on the placement for the record. Nodes the job failed on are used only when no other fits.
   */
  private placeCheck(job: JobRecord, req: JobRequirements, index: CapacityIndex, ctx: PlacementContext, stats?: PassStats): Placement[] {
    const random = ctx.random ?? this.random;
    const res = searchFitting(req, index, random, { want: CHECK_CANDIDATES, maxVisits: Math.max(this.maxVisits, 4 * CHECK_CANDIDATES), distinct: true }, 1, stats);
    const fresh = res.candidates.filter((c) => !c.avoided);
    const pool = fresh.length > 0 ? fresh : res.candidates;
    if (pool.length === 0) return [];
    const draw = random ? random.next() : 0;
    const chosen = pool[Math.min(pool.length - 1, Math.floor(draw * pool.length))] as Candidate;
    const out = this.commit(job, req, [chosen], index, ctx, false);
    for (const p of out) p.check = { kind: req.check as 'audit' | 'referee' | 'checker', candidates: pool.length, draw };
    return out;
  }

  private scored(req: JobRequirements, cands: Candidate[], now: number): Candidate[] {
    for (const c of cands) c.score = this.scoreOf(req, c.node, c.slot, now);
    return cands;
  }

  /** The node's score for the job: the weighted scores (scores.ts), and in a pass the scarcity, prior and demand terms. */
  private scoreOf(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined, now: number): number {
    const pr = this.predicted;
    if (pr && !pr.allows(req, node, slot)) return BLOCKED;
    let score = scoreNode(req, node, slot, now, this.weights, this.halfLifeMs);
    if (pr && this.stabilityWeight > 0) score -= this.stabilityWeight * pr.stabilityLoss(node.nodeId);
    if (pr && this.speedWeight > 0) score -= this.speedWeight * pr.speedLoss(slot);
    const p = this.pressure;
    // The prior is packing (where to leave room): it scales with the packing weight, and packing 0 turns it off.
    if (p) score += this.scarcityWeight * p.score(slot) + (this.weights.packing / DEFAULT_SCORE_WEIGHTS.packing) * p.keep(slot, req.gpuCount, req.cpu, req.memoryMb);
    const d = this.demand;
    if (d) score -= this.demandWeight * d.loss(req, node, slot);
    return score;
  }

  /** N distinct nodes; all in one region when some region has N (closer peers), else the best N anywhere. */
  private bestGang(req: JobRequirements, cands: Candidate[], now: number, n: number): Candidate[] | undefined {
    if (cands.length < n) return undefined;
    const sorted = this.scored(req, cands, now)
      .filter((c) => c.score > BLOCKED)
      .sort(order);
    if (sorted.length < n) return undefined;
    const byRegion = new Map<string, Candidate[]>();
    for (const c of sorted) {
      const key = c.node.region ?? '';
      const list = byRegion.get(key) ?? [];
      list.push(c);
      byRegion.set(key, list);
    }
    let bestGroup: Candidate[] | undefined;
    let bestSum = Number.NEGATIVE_INFINITY;
    for (const list of byRegion.values()) {
      if (list.length < n) continue;
      const top = list.slice(0, n);
      const sum = top.reduce((s, c) => s + c.score - (c.avoided ? 1000 : 0), 0);
      if (sum > bestSum) {
        bestSum = sum;
        bestGroup = top;
      }
    }
    return bestGroup ?? sorted.slice(0, n);
  }

  private commit(job: JobRecord, req: JobRequirements, chosen: Candidate[], index: CapacityIndex, ctx: PlacementContext, gang = chosen.length > 1): Placement[] {
    const ids = chosen.map(() => ctx.newAttemptId());
    const peers: GangPeer[] = gang ? chosen.map((c, rank) => ({ rank, nodeId: c.node.nodeId, address: c.node.hostname })) : [];
    const out: Placement[] = [];
    chosen.forEach((c, rank) => {
      const slot = req.gpuCount > 0 ? (c.slot ?? bestSlot(req, c.node.slots)) : undefined;
      const gpuIndices = slot ? pickGpus(req, slot) : [];
      const attemptId = ids[rank] as string;
      index.reserve({ attemptId, nodeId: c.node.nodeId, gpuIndices, cpu: req.cpu, memoryMb: req.memoryMb, buyerId: job.buyerId, jobId: job.id, gang, stakeLock: req.paid ? stakeLockAt(req, c.node) : 0 });
      const p: Placement = { jobId: job.id, attemptId, nodeId: c.node.nodeId, gpuIndices, leaseExpiresAt: ctx.now + ctx.leaseTtlMs };
      this.predicted?.placed(req, c.node, slot, gpuIndices);
      if (gang) p.gang = { leaderAttemptId: ids[0] as string, rank, worldSize: chosen.length, peers };
      out.push(p);
    });
    return out;
  }
}

/** The score of a node a job may not take (it holds room reserved for another job the job would not leave): never chosen. */
const BLOCKED = -1e12;

/**
 * The bounded search, then the exact one when the bounded search found fewer than `need` nodes the job may use
 * (not avoided): the bounded search is a fast sample, never the verdict that nothing fits.
 */
function searchFitting(req: JobRequirements, index: CapacityIndex, random: Random | undefined, lim: SearchLimits, need: number, stats?: PassStats): SearchResult {
  const res = searchCandidates(req, index, random, lim);
  if (stats) stats.visits += res.visits;
  if (res.found >= need) return res;
  const exact = searchExact(req, index, lim);
  if (stats) {
    stats.visits += exact.visits;
    stats.exactSearches++;
  }
  return exact.found > res.found || res.candidates.length === 0 ? exact : res;
}

/** As heavy as the packing and reliability scores together (replay: 2 to 3 helped alike on the constrained variants). */
export const DEFAULT_SCARCITY_WEIGHT = 3;

/** One GPU lost to the window's other jobs outweighs the packing score's whole range (replay, 5 seeds: 1.5 to 3 alike). */
export const DEFAULT_DEMAND_WEIGHT = 3;

/**
 * A job likely to lose its node during its run loses that run (no checkpoint): 3 × the chance outweighs the packing
 * score's range at a 1-in-3 chance, as the reliability score does for a node with a bad record.
 */
export const DEFAULT_STABILITY_WEIGHT = 3;
/** See PlacementEngineOptions.speedWeight: a class predicted twice as slow costs 2 × ln 2 ≈ 1.4. */
export const DEFAULT_SPEED_WEIGHT = 2;

/** Candidates per GPU class and free-GPU level (PlacementEngineOptions.perGroup). */
export const DEFAULT_PER_GROUP = 2;
/** PlacementEngineOptions.minSample. */
export const DEFAULT_MIN_SAMPLE = 16;

/** Eligible nodes a check run's draw is taken among, at most (the search stays bounded on any fleet). */
const CHECK_CANDIDATES = 256;

/** Not avoided beats avoided; then the higher score. */
function better(a: Candidate, b: Candidate): boolean {
  if (a.avoided !== b.avoided) return !a.avoided;
  return a.score > b.score;
}
const order = (a: Candidate, b: Candidate) => (a.avoided !== b.avoided ? (a.avoided ? 1 : -1) : b.score - a.score);
