/**
 * The exact search: what the placement engine runs when the bounded search (search.ts) found no node it may
 * use. It walks the index's fit cells (capacity-index.ts) that can hold a fitting node, fewest free GPUs and
 * fewest free cores first (best fit), and skips a cell whose free-memory bound is below the job's need, so:
 *
 * - a node that fits (GPU class, free GPUs, CPU, memory and the other filters) is found if one exists: the
 *   engine never leaves a job waiting while the index holds a node for it;
 * - for jobs that fit on resources, the walk stops at the first cells that hold fitting nodes; a job that fits
 *   nowhere walks the cells (levels × 257 core buckets per accepted pool, a constant) once the bounds are tight.
 *   Each full scan of a cell makes its bound exact, so a cell is rescanned only after its nodes changed.
 *
 * The filters the cells do not index (labels, trust, price, stake, operator; region for CPU-only jobs) are
 * checked node by node in the cells that pass: a job that only a rare label admits costs a scan of the nodes
 * that fit it on resources (once per job shape and pass: the engine does not search a failed shape again).
 */
import type { CapacityIndex, FitCell, NodeCapacity, PoolSlot } from './capacity-index.js';
import { CPU_BUCKETS } from './capacity-index.js';
import type { JobRequirements } from './requirements.js';
import { CandidateCollector, type SearchLimits, type SearchResult } from './search.js';

export function searchExact(req: JobRequirements, index: CapacityIndex, lim: Pick<SearchLimits, 'want' | 'distinct' | 'best'>): SearchResult {
  // No visit cap: the cells walked are only those that can hold a fitting node.
  const c = new CandidateCollector(req, { ...lim, maxVisits: Number.POSITIVE_INFINITY });
  // The core bucket a fitting node can be in at the least: floor(cpu) (a fractional need shares it with nodes just short).
  const firstCb = Math.min(CPU_BUCKETS - 1, Math.floor(req.cpu + 1e-9));
  if (req.gpuCount > 0) {
    for (const pool of index.poolsFor(req)) {
      if (pool.maxGpus < req.gpuCount || pool.maxCpuCores < req.cpu - 1e-9 || pool.maxMemoryMb < req.memoryMb) continue;
      for (let f = req.gpuCount; f < pool.cells.length; f++) {
        if ((pool.buckets[f]?.length ?? 0) === 0) continue;
        const row = pool.cells[f] as FitCell[];
        let top = pool.cellTop[f] as number;
        while (top > 0 && (row[top]?.slots.length ?? 0) === 0) top--;
        pool.cellTop[f] = top;
        for (let b = firstCb; b <= top; b++) {
          const cell = row[b];
          if (cell && !scanCell(cell, req.memoryMb, (s) => c.consider(s.node, s))) return c.result();
        }
      }
    }
  } else {
    for (let b = firstCb; b < CPU_BUCKETS; b++) {
      const arr = index.cpuBuckets[b] as NodeCapacity[];
      if (arr.length === 0 || (index.cpuMemMax[b] as number) < req.memoryMb) continue;
      let max = 0;
      for (const node of arr) {
        if (node.freeMemoryMb > max) max = node.freeMemoryMb;
        if (node.freeMemoryMb >= req.memoryMb && !c.consider(node, undefined)) return c.result();
      }
      index.cpuMemMax[b] = max;
    }
  }
  return c.result();
}

/** Visit the cell's slots with enough free memory; a scan that ends makes the cell's bound exact. False: stop. */
function scanCell(cell: FitCell, memoryMb: number, visit: (s: PoolSlot) => boolean): boolean {
  if (cell.slots.length === 0 || cell.memMax < memoryMb) return true;
  let max = 0;
  for (const s of cell.slots) {
    const mem = s.node.freeMemoryMb;
    if (mem > max) max = mem;
    if (mem >= memoryMb && !visit(s)) return false;
  }
  cell.memMax = max;
  return true;
}
