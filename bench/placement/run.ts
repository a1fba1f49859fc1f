/**
 * One placement run: a fleet in a fresh capacity index, a sequence of queued jobs taken in windows (the
 * scheduling pass's batch), each window fairly ordered and every job's decision timed alone. After each
 * window the oldest placements finish until GPU use is back under `targetUtil`, so the cluster stays busy
 * and fragmented, as a live one is, instead of filling up once.
 */
import { performance } from 'node:perf_hooks';
import { CapacityIndex, fairOrder, type JobRecord, type NodeRecord, type Placement, type PlacementContext, requirementsOf } from '@gpux/core';

export interface Decider {
  placeJob(job: JobRecord, index: CapacityIndex, ctx: PlacementContext): Placement[];
  /** With `wholePass`: the coordinator's call, a window at a time (the engine's pass terms on); timed per window. */
  place?(jobs: readonly JobRecord[], index: CapacityIndex, ctx: PlacementContext): Placement[];
}

export interface RunOptions {
  window: number;
  targetUtil: number;
  /** Stop after this many decisions or this much decision time, whichever first. */
  maxJobs: number;
  budgetMs: number;
  now: number;
  /** Time decider.place over each window (as the coordinator's scheduling pass calls it) instead of placeJob per job. */
  wholePass?: boolean;
}

export interface RunResult {
  decisions: number;
  placements: number;
  /** Jobs skipped because their shape already found nothing in the window (no search). */
  skipped: number;
  /** wholePass: µs per job of each window's pass (latenciesUs is then this, one value per window). */
  perWindow: boolean;
  decisionMs: number;
  wallMs: number;
  latenciesUs: Float64Array;
  indexBuildMs: number;
  meanGpuUtil: number;
}

export function runPlacement(nodes: readonly NodeRecord[], jobs: readonly JobRecord[], decider: Decider, o: RunOptions, random: PlacementContext['random']): RunResult {
  const t0 = performance.now();
  const index = new CapacityIndex();
  for (const n of nodes) index.upsertNode(n);
  const indexBuildMs = performance.now() - t0;
  const totalGpus = nodes.reduce((s, n) => s + n.advertisement.gpus.length, 0);
  let ids = 0;
  const ctx: PlacementContext = { now: o.now, leaseTtlMs: 30_000, newAttemptId: () => `a${++ids}`, ...(random ? { random } : {}) };
  const running: Array<{ attemptId: string; gpus: number }> = [];
  let head = 0;
  let busyGpus = 0;
  const lat = new Float64Array(Math.min(jobs.length, o.maxJobs));
  let decisions = 0;
  let placements = 0;
  let skipped = 0;
  let decisionMs = 0;
  let utilSum = 0;
  let windows = 0;
  const wall0 = performance.now();
  outer: for (let w = 0; w < jobs.length; w += o.window) {
    if (o.wholePass && decider.place) {
      if (decisions >= o.maxJobs || decisionMs >= o.budgetMs) break;
      const batch = jobs.slice(w, w + o.window);
      const s = performance.now();
      const out = decider.place(batch, index, ctx);
      const took = performance.now() - s;
      decisionMs += took;
      lat[windows] = (took * 1000) / batch.length;
      decisions += batch.length;
      placements += out.length;
      for (const p of out) {
        running.push({ attemptId: p.attemptId, gpus: p.gpuIndices.length });
        busyGpus += p.gpuIndices.length;
      }
    }
    const window = o.wholePass ? [] : fairOrder(jobs.slice(w, w + o.window), o.now, 600_000, (b) => index.buyerUsage(b));
    const failed = new Set<string>();
    for (const job of window) {
      if (decisions >= o.maxJobs || decisionMs >= o.budgetMs) break outer;
      const shape = requirementsOf(job).shape;
      if (failed.has(shape)) {
        skipped++;
        continue;
      }
      const s = performance.now();
      const out = decider.placeJob(job, index, ctx);
      const took = performance.now() - s;
      decisionMs += took;
      lat[decisions++] = took * 1000;
      if (out.length === 0) failed.add(shape);
      else placements++;
      for (const p of out) {
        running.push({ attemptId: p.attemptId, gpus: p.gpuIndices.length });
        busyGpus += p.gpuIndices.length;
      }
    }
    utilSum += busyGpus / totalGpus;
    windows++;
    while (busyGpus > o.targetUtil * totalGpus && head < running.length) {
      const r = running[head++] as { attemptId: string; gpus: number };
      index.release(r.attemptId);
      busyGpus -= r.gpus;
    }
  }
  return {
    decisions,
    placements,
    skipped,
    decisionMs,
    wallMs: performance.now() - wall0,
    latenciesUs: lat.subarray(0, o.wholePass ? windows : decisions),
    perWindow: o.wholePass === true,
    indexBuildMs,
    meanGpuUtil: windows ? utilSum / windows : 0,
  };
}
