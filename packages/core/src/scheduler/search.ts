/**
 * The bounded candidate search: visit the index's buckets in packing order (fewest sufficient free GPUs,
 * or fewest free cores, first), starting each bucket at a random offset, and collect feasible nodes until
 * `want` are found or `maxVisits` nodes were looked at. Cost depends on `want` and `maxVisits`, never on
 * the number of nodes (kube-scheduler's percentageOfNodesToScore and Sparrow's sampling make the same trade).
 *
 * Two guards keep a bounded search from missing nodes that exist: pools whose largest node is too small
 * for the job's CPU or memory are skipped outright, and each free-count level gets at most 1/8 of the
 * visits (the pools of a level taken in turns), so nearly full nodes whose CPU or memory ran out first
 * cannot use up the budget before emptier nodes are seen.
 */
import type { Random } from '../ports.js';
import type { CapacityIndex, NodeCapacity, PoolSlot } from './capacity-index.js';
import { fitsFound } from './filters.js';
import type { JobRequirements } from './requirements.js';

export interface Candidate {
  node: NodeCapacity;
  /** The GPU pool slot the job takes its GPUs from; undefined for CPU-only jobs. */
  slot: PoolSlot | undefined;
  /** The job failed on this node before: used only when nothing else fits. */
  avoided: boolean;
  score: number;
}

export interface SearchLimits {
  want: number;
  maxVisits: number;
  /** Gang and replica searches need distinct nodes (a node with two GPU classes sits in two pools). */
  distinct: boolean;
}

export interface SearchResult {
  candidates: Candidate[];
  visits: number;
}

/**
 * Collects the fitting nodes a search visits (each once when `distinct`); `consider` answers false once `want`
 * usable candidates are found or `maxVisits` nodes were visited. Shared by the bounded and the exact search.
 */
export function candidateCollector(req: JobRequirements, lim: { want: number; distinct?: boolean | undefined; maxVisits: number }) {
  const out: Candidate[] = [];
  const seen = lim.distinct ? new Set<string>() : undefined;
  let found = 0;
  let visits = 0;
  const consider = (node: NodeCapacity, slot: PoolSlot | undefined): boolean => {
    visits++;
    if (fitsFound(req, node) && !(seen?.has(node.nodeId) ?? false)) {
      seen?.add(node.nodeId);
      const avoided = req.avoid.size > 0 && req.avoid.has(node.nodeId);
      out.push({ node, slot, avoided, score: 0 });
      if (!avoided) found++;
    }
    return found < lim.want && visits < lim.maxVisits;
  };
  return { consider, result: (): SearchResult => ({ candidates: out, visits }) };
}

export function searchCandidates(req: JobRequirements, index: CapacityIndex, random: Random | undefined, lim: SearchLimits): SearchResult {
  const { consider, result } = candidateCollector(req, lim);
  const r = random ? random.next() : 0;
  const levelCap = Math.max(lim.want, Math.ceil(lim.maxVisits / 8));
  if (req.gpuCount > 0) {
    const pools = index.poolsFor(req).filter((p) => p.maxCpuCores >= req.cpu - 1e-9 && p.maxMemoryMb >= req.memoryMb);
    let top = 0;
    for (const p of pools) top = Math.max(top, p.buckets.length - 1);
    const p0 = Math.floor(r * pools.length);
    const level: PoolSlot[][] = [];
    for (let f = req.gpuCount; f <= top; f++) {
      level.length = 0;
      let longest = 0;
      for (let pi = 0; pi < pools.length; pi++) {
        const arr = pools[(pi + p0) % pools.length]?.buckets[f];
        if (arr && arr.length > 0) {
          level.push(arr);
          longest = Math.max(longest, arr.length);
        }
      }
      let seen = 0;
      for (let j = 0; j < longest && seen < levelCap; j++) {
        for (const arr of level) {
          const len = arr.length;
          if (j >= len) continue;
          seen++;
          const slot = arr[(Math.floor(r * len) + j) % len] as PoolSlot;
          if (!consider(slot.node, slot)) return result();
        }
      }
    }
  } else {
    // Bucket b holds nodes with [b, b+1) cores free. For a fractional request the bucket it falls in is mixed
    // (16.5 cores: a node with 16.0 free sits beside one with 16.7), so it is tried last, not first.
    const buckets = index.cpuBuckets;
    const whole = Math.ceil(req.cpu - 1e-9);
    const order: number[] = [];
    for (let b = whole; b < buckets.length; b++) order.push(b);
    if (whole > Math.floor(req.cpu + 1e-9)) order.push(whole - 1);
    for (const b of order) {
      const arr = buckets[b] as NodeCapacity[];
      const len = arr.length;
      if (len === 0) continue;
      const start = Math.floor(r * len);
      for (let j = 0; j < len && j < levelCap; j++) if (!consider(arr[(start + j) % len] as NodeCapacity, undefined)) return result();
    }
  }
  return result();
}
