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
    if (this.total <= 0) return 0;
    const cpu = node.freeCpu - req.cpu;
    const mem = node.freeMemoryMb - req.memoryMb;
    let lost = 0;
    for (const t of this.types) {
      if (t.weight <= 0) continue;
      const before = usable(t, node, node.freeCpu, node.freeMemoryMb, undefined, 0);
      if (before === 0) continue;
      lost += t.weight * (before - usable(t, node, cpu, mem, slot, req.gpuCount));
    }
    return lost / this.total;
  }
}

/** GPUs of `node` that jobs of type `t` could fill, with `taken` GPUs gone from `slot` and the given cores and memory free. */
function usable(t: DemandType, node: NodeCapacity, cpu: number, mem: number, slot: PoolSlot | undefined, taken: number): number {
  if (cpu < t.cpu - 1e-9 || mem < t.memoryMb) return 0;
  // Cores and memory count in fractions of a job: whole-job steps would make a 1-core difference weigh a GPU.
  const byCpu = t.cpu > 0 ? cpu / t.cpu : Number.POSITIVE_INFINITY;
  const byMem = t.memoryMb > 0 ? mem / t.memoryMb : Number.POSITIVE_INFINITY;
  let best = 0;
  for (const s of node.slots) {
    if (t.pools && !t.pools.has(s.pool)) continue;
    const free = s.free - (s === slot ? taken : 0);
    best = Math.max(best, t.gpus * Math.min(Math.floor(free / t.gpus), byCpu, byMem));
  }
  return best;
}

const keyOf = (req: JobRequirements) => `${req.gpuShape}@${req.region ?? '\u0000'}|${req.gpuCount}|${req.cpu}|${req.memoryMb}`;

