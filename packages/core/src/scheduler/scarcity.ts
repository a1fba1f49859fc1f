/**
 * Scarcity (issue 18): which GPU pools the model-constrained jobs of a pass need, so that jobs with a choice
 * leave those pools to them. Without it the packing score sends flexible 1-GPU jobs to the small 2-GPU nodes
 * (they fill best), which are exactly the T4 / P100 nodes that jobs naming those models then wait for.
 *
 * Pressure of a pool = the GPUs the pass's constrained jobs want from it ÷ its free GPUs. A job that accepts
 * some pools but not all (a `models`, `vendor` or `minVramGb` filter, a region) spreads its GPU count over its
 * pools in proportion to their free GPUs, so it adds count ÷ (free GPUs of its pools) to each of them. Jobs that
 * accept every pool add the same to every pool, which changes no choice: they are left out. The score term is
 * 1 − min(1, pressure): a pool nobody else needs scores 1, one whose free GPUs constrained jobs would take
 * scores 0. A job with one acceptable pool gets the same term on every candidate: it only steers jobs with a choice.
 * The engine adds it with weight DEFAULT_SCARCITY_WEIGHT (placer.ts) to the other scores, during a pass only
 * (placeJob alone has no window to learn the demand from).
 *
 * Cost: one walk over the pass's window (per job shape, the index's cached pool list) when the pass starts, a
 * map update per constrained placement, a map read per scored candidate. The pools' free-GPU counts are kept
 * by the index on every move (capacity-index.ts), never counted by a scan.
 *
 * The window only knows the demand that is already queued; `keep` is the prior for the demand that is not, in
 * score units (replay: a job naming the fleet's only two A10 nodes found both taken by the first flexible jobs
 * of the replay, which ran to its end; 8-GPU jobs that only a G3 node fits found every G3 node broken): take from
 * the pool with the largest free share (pools drain in proportion, as first-fit over a shuffled fleet does), and
 * more so from a pool whose free share is behind the fleet's (the packing score prefers small nodes, so the pools
 * of small nodes drained first), not the last free GPUs of a pool, not the last nodes of a pool with as many GPUs
 * free as this one, and not room few other nodes of the pool have (free cores or memory beyond what the pool's other
 * nodes have in all: a job that fits a smaller node leaves the one large node to the job that only it fits).
 */
import type { JobRecord } from '../records.js';
import { type CapacityIndex, nodesAtLeast, type Pool, type PoolSlot } from './capacity-index.js';
import { type JobRequirements, requirementsOf } from './requirements.js';

export class PoolPressure {
  private readonly pressure = new Map<Pool, number>();
  /** Per job shape (gpuShape@region): its pools and what each of its GPUs adds to their pressure; null: it accepts every pool. */
  private readonly shapes = new Map<string, { pools: Pool[]; perGpu: number } | null>();
  private readonly reaches = new Map<string, number>();
  /** GPUs and free GPUs of every pool (schedulable nodes), at the pass start, less what the pass placed. */
  private fleetGpus = 0;
  private fleetFree = 0;

  constructor(
    jobs: readonly JobRecord[],
    private readonly index: CapacityIndex,
  ) {
    let pools = 0;
    for (const p of index.allPools()) {
      pools++;
      this.fleetGpus += p.gpus;
      this.fleetFree += p.freeGpus;
    }
    for (const job of jobs) {
      const req = requirementsOf(job);
      if (req.gpuCount === 0) continue;
      const s = this.shapeOf(req, pools);
      if (s) this.add(s, req.gpuCount * req.nodes);
    }
  }

  /** A job of the window was placed: its claim on its pools is met. */
  placed(req: JobRequirements): void {
    if (req.gpuCount === 0) return;
    this.fleetFree -= req.gpuCount * req.nodes;
    const s = this.shapes.get(shapeKey(req));
    if (s) this.add(s, -req.gpuCount * req.nodes);
  }

  /**
   * In [0, 1]: 1 − the share of the slot's pool that constrained jobs want. 1 for CPU-only jobs (slot undefined):
   * steering them off pressed pools' nodes sent them onto the big nodes' CPU and stranded those GPUs (replay).
   */
  score(slot: PoolSlot | undefined): number {
    if (!slot || this.pressure.size === 0) return 1;
    return 1 - Math.min(1, Math.max(0, this.pressure.get(slot.pool) ?? 0));
  }

  /**
   * The prior (see above): ≤ 0, what taking `gpuCount` GPUs (and `cpu` cores, `memoryMb`) from `slot` costs the work
   * not queued yet.
   */
  keep(slot: PoolSlot | undefined, gpuCount: number, cpu = 0, memoryMb = 0): number {
    if (!slot) return 0;
    const pool = slot.pool;
    const share = pool.freeGpus / Math.max(1, pool.gpus);
    let cost = KEEP_SHARE_WEIGHT * (1 - share) + KEEP_LAST_GPUS / (1 + pool.freeGpus);
    const fleetShare = this.fleetFree / Math.max(1, this.fleetGpus);
    if (fleetShare > 0 && share < fleetShare) cost += KEEP_BEHIND_WEIGHT * (1 - share / fleetShare);
    if (slot.free > gpuCount && slot.free >= 2) {
      // Nodes of the pool with at least this many GPUs free: the buckets above this level (at most a node's GPUs).
      let nodes = 0;
      for (let f = slot.free; f < pool.buckets.length; f++) nodes += pool.buckets[f]?.length ?? 0;
      cost += KEEP_LAST_NODES / (1 + nodes);
    }
    // Rare room: how much rarer the node's free room (cores, memory) is than what the placement leaves of it. A job
    // that takes the node below what other nodes of the pool have in all pays; one that leaves it above does not
    // (a 12-core job on the pool's 40-core node, where the 16-core one would strand its second GPU).
    const node = slot.node;
    cost += KEEP_RARE_ROOM * (rarity(pool, node.freeCpu, node.freeMemoryMb) - rarity(pool, node.freeCpu - cpu, node.freeMemoryMb - memoryMb));
    return -cost;
  }

  /**
   * How much of the fleet can take the job: GPUs of its pools (schedulable nodes, pools with a node of enough
   * GPUs), cached per shape for the pass; CPU-only jobs reach every node. fairOrder tries the least reached first.
   */
  reach(job: JobRecord): number {
    const req = requirementsOf(job);
    if (req.gpuCount === 0) return Number.MAX_SAFE_INTEGER;
    const key = `${shapeKey(req)}#${req.gpuCount}`;
    let r = this.reaches.get(key);
    if (r === undefined) {
      r = 0;
      for (const p of this.index.poolsFor(req)) if (p.maxGpus >= req.gpuCount) r += p.gpus;
      this.reaches.set(key, r);
    }
    return r;
  }

  private shapeOf(req: JobRequirements, allPools: number): { pools: Pool[]; perGpu: number } | null {
    const key = shapeKey(req);
    let s = this.shapes.get(key);
    if (s === undefined) {
      const pools = this.index.poolsFor(req);
      let free = 0;
      for (const p of pools) free += p.freeGpus;
      s = pools.length === 0 || pools.length >= allPools ? null : { pools, perGpu: 1 / Math.max(1, free) };
      this.shapes.set(key, s);
    }
    return s;
  }

  private add(s: { pools: Pool[]; perGpu: number }, gpus: number): void {
    for (const p of s.pools) this.pressure.set(p, (this.pressure.get(p) ?? 0) + gpus * s.perGpu);
  }
}

/** Weights of the prior (replay, burst, default and model variants: share 2 to 4, last GPUs 10 to 20, last nodes 3 to 10 within noise). */
export const KEEP_SHARE_WEIGHT = 2;
export const KEEP_LAST_GPUS = 10;
export const KEEP_LAST_NODES = 10;
/**
 * Weight of the shortfall of a pool's free share against the fleet's (replay, burst: packing sent flexible jobs to the
 * 2-GPU T4 and P100 nodes, whose pools ran dry while half of G2 was free, and the jobs naming those models waited;
 * seeds 1–5, 0 → 1, 2, 3: 2 best, and without failures every variant's mean, p99 and allocation ≥ first-fit's).
 */
export const KEEP_BEHIND_WEIGHT = 2;
/**
 * Weight of the rare-room prior (replay, models-33-cpu seed 2: a job of 67 cores on a V100M16 GPU, which only the one
 * 82-core V100M16 node fits, waited 236 s behind a 29-core job that a 64-core node could have taken).
 */
export const KEEP_RARE_ROOM = 10;

const shapeKey = (req: JobRequirements) => req.poolKey;

/** 1 / (1 + other nodes of the pool at least this large in all), less the pool's baseline (1 / its nodes): 0 when common. */
function rarity(pool: Pool, cores: number, memoryMb: number): number {
  const others = Math.max(0, nodesAtLeast(pool, Math.max(0, cores), Math.max(0, memoryMb)) - 1);
  return Math.max(0, 1 / (1 + others) - 1 / Math.max(1, pool.nodes));
}
