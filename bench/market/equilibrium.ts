/**
 * The static market of one class, and where it clears. The demand curve is what an arrival brings at a price
 * (E[GPUs × epochs] over buyers whose valuation is at least the price), the supply curve the GPUs of nodes
 * whose gross ask is at most the price; the clearing level p* is the lowest price at which arrivals × demand
 * is at most the target share of supply (both curves are monotone, so bisection finds it). By Little's law
 * that is where the index's utilization settles if every willing job starts at once.
 */
import { BPS } from '@gpux/core';

export interface DemandCurve {
  /** Valuations of a large sample of jobs, ascending. */
  valuations: Float64Array;
  /** tail[i] = Σ_{j ≥ i} GPUs × epochs of the sorted sample, ÷ the sample size. */
  tail: Float64Array;
}

export function demandCurve(jobs: ReadonlyArray<{ v: number; g: number; d: number }>): DemandCurve {
  const sorted = jobs.slice().sort((a, b) => a.v - b.v);
  const valuations = Float64Array.from(sorted, (j) => j.v);
  const tail = new Float64Array(sorted.length + 1);
  for (let i = sorted.length - 1; i >= 0; i--) {
    const j = sorted[i] as { g: number; d: number };
    tail[i] = (tail[i + 1] as number) + (j.g * j.d) / sorted.length;
  }
  return { valuations, tail };
}

/** GPU-epochs one arrival brings at price p: E[g × d × 1{v ≥ p}]. */
export function gpuEpochsAt(c: DemandCurve, p: number): number {
  let lo = 0;
  let hi = c.valuations.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((c.valuations[mid] as number) < p) lo = mid + 1;
    else hi = mid;
  }
  return c.tail[lo] as number;
}

export function supplyAt(nodes: ReadonlyArray<{ gpus: number; grossAsk: number }>, p: number): number {
  let s = 0;
  for (const n of nodes) if (n.grossAsk <= p) s += n.gpus;
  return s;
}

/** The lowest whole price ≥ floor where rate × demand ≤ target × supply. */
export function clearingLevel(q: {
  curve: DemandCurve;
  rate: number;
  nodes: ReadonlyArray<{ gpus: number; grossAsk: number }>;
  floor: number;
  targetBps: number;
}): number {
  const over = (p: number) => q.rate * gpuEpochsAt(q.curve, p) * BPS > q.targetBps * supplyAt(q.nodes, p);
  if (!over(q.floor)) return q.floor;
  let lo = q.floor;
  let hi = 2 * q.floor;
  while (over(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (over(mid)) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * The fewest epochs a price that moves at most maxStepBps an epoch needs to get from `from` to within
 * ±band of `to` (band 0: to `to` itself): ceil(log(target/from) / log(1 ± step)).
 */
export function minEpochs(from: number, to: number, band: number, maxStepBps: number): number {
  const step = maxStepBps / BPS;
  const lo = to * (1 - band);
  const hi = to * (1 + band);
  if (from < lo) return Math.ceil(Math.log(lo / from) / Math.log(1 + step) - 1e-9);
  if (from > hi) return step >= 1 ? 1 : Math.ceil(Math.log(hi / from) / Math.log(1 - step) - 1e-9);
  return 0;
}
