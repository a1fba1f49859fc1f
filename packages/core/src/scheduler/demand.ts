/**
 * Demand-aware packing (issue 18): which node a job should take so that the pass's other jobs can still use
 * what is left. The window's GPU jobs, grouped into types (GPU count, CPU, memory, the pools they accept), are
 * the demand; a node's usable GPUs for a type are the GPUs of an accepted pool it could still fill with jobs of
 * that type, k × min(free GPUs ÷ k, free cores ÷ cpu, free memory ÷ memory). A placement's loss is the
 * demand-weighted drop of that number on its node: taking a GPU nobody else could use (the last one of a node
 * whose cores ran out, one of a model the rest of the window does not accept) loses nothing, taking one of a
 * whole 8-GPU node that the window's 8-GPU jobs wait for loses 8 for them, and a CPU-only job that eats a GPU
 * node's cores loses the GPUs it strands. The engine subtracts the loss (weight DEFAULT_DEMAND_WEIGHT) from the
 * score. This is Alibaba's FGD (fragmentation gradient descent) measured against the waiting work rather
 * than a historical task mix, and in whole GPUs.
 *
 * Cost: one walk over the window when the pass starts; per scored candidate, types × the node's GPU classes
 * (at most MAX_TYPES types, the most frequent). Pass-only, as scarcity.ts: placeJob alone has no window.
 */
import type { JobRecord } from '../records.js';
import type { CapacityIndex, NodeCapacity, Pool, PoolSlot } from './capacity-index.js';
import { type JobRequirements, requirementsOf } from './requirements.js';

interface DemandType {
  key: string;
  gpus: number;
  cpu: number;
  memoryMb: number;
  /** Pools the type accepts; null: every pool. */
  pools: ReadonlySet<Pool> | null;
  /** Jobs (gang members) of the type not placed yet. */
  weight: number;
}

/** Types kept, the most frequent: the loss costs this many evaluations per candidate at most. */
export const MAX_TYPES = 32;

export class DemandProfile {
  private readonly types: DemandType[];
  private readonly byKey = new Map<string, DemandType>();
  private total = 0;

  constructor(jobs: readonly JobRecord[], index: CapacityIndex, maxTypes = MAX_TYPES) {
    let allPools = 0;
    for (const _ of index.allPools()) allPools++;
    const all: DemandType[] = [];
    for (const job of jobs) {
      const req = requirementsOf(job);
      if (req.gpuCount === 0) continue;
      const key = keyOf(req);
      let t = this.byKey.get(key);
      if (!t) {
        const pools = index.poolsFor(req);
        t = { key, gpus: req.gpuCount, cpu: req.cpu, memoryMb: req.memoryMb, pools: pools.length >= allPools ? null : new Set(pools), weight: 0 };
        this.byKey.set(key, t);
        all.push(t);
      }
      t.weight += req.nodes;
    }
    all.sort((a, b) => b.weight - a.weight);
    this.types = all.slice(0, maxTypes);
    for (const t of all.slice(maxTypes)) this.byKey.delete(t.key);
    for (const t of this.types) this.total += t.weight;
  }

  /** A job of the window was placed: it no longer competes for what is left. */
  placed(req: JobRequirements): void {
    if (req.gpuCount === 0) return;
    const t = this.byKey.get(keyOf(req));
    if (!t || t.weight <= 0) return;
    const n = Math.min(t.weight, req.nodes);
    t.weight -= n;
    this.total -= n;
  }

  /** Usable GPUs the placement of `req` on `node` (GPUs from `slot`) takes from the remaining demand, per job of it. */
  loss(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined): number {
    // No free GPU: no type could fill any, before or after (CPU-only jobs on full GPU nodes, most of a busy fleet).
    if (this.total <= 0 || node.freeGpuCount === 0) return 0;
    const fc = node.freeCpu;
    const fm = node.freeMemoryMb;
    const cpu = fc - req.cpu;
    const mem = fm - req.memoryMb;
    const slots = node.slots;
    let lost = 0;
    for (const t of this.types) {
      if (t.weight <= 0 || fc < t.cpu - 1e-9 || fm < t.memoryMb) continue;
      // The GPUs of the node jobs of the type could fill, before and after the placement, in one walk over its slots.
      // Cores and memory count in fractions of a job: whole-job steps would make a 1-core difference weigh a GPU.
      const fits = cpu >= t.cpu - 1e-9 && mem >= t.memoryMb;
      const byCpu0 = t.cpu > 0 ? fc / t.cpu : Number.POSITIVE_INFINITY;
      const byMem0 = t.memoryMb > 0 ? fm / t.memoryMb : Number.POSITIVE_INFINITY;
      const byCpu1 = t.cpu > 0 ? cpu / t.cpu : Number.POSITIVE_INFINITY;
      const byMem1 = t.memoryMb > 0 ? mem / t.memoryMb : Number.POSITIVE_INFINITY;
      let before = 0;
      let after = 0;
      for (const s of slots) {
        if (t.pools && !t.pools.has(s.pool)) continue;
        before = Math.max(before, t.gpus * Math.min(Math.floor(s.free / t.gpus), byCpu0, byMem0));
        if (fits) after = Math.max(after, t.gpus * Math.min(Math.floor((s.free - (s === slot ? req.gpuCount : 0)) / t.gpus), byCpu1, byMem1));
      }
      if (before === 0) continue;
      lost += t.weight * (before - after);
    }
    return lost / this.total;
  }
}

const keyOf = (req: JobRequirements) => `${req.poolKey}|${req.gpuCount}|${req.cpu}|${req.memoryMb}`;

