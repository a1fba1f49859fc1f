/** The Scheduler port: turn a window of queued jobs into placements, reserving capacity in the index. */
import type { Random } from '../ports.js';
import type { JobRecord, Placement } from '../records.js';
import type { CapacityIndex } from './capacity-index.js';

export interface PlacementContext {
  now: number;
  leaseTtlMs: number;
  newAttemptId: () => string;
  /** Where the search starts in each bucket; without it every search starts at the front. */
  random?: Random;
  /**
   * Predictions (issue 17): with them the engine reserves room for the first job of the pass that does not fit and
   * lets others backfill it, orders each class by predicted run time with aging, and sends long jobs to nodes likely
   * to stay up (placer.ts, backfill.ts, fairness.ts). Without them it places exactly as before.
   */
  predict?: PlacementPredictor;
}

/** A run time's distribution, ms. */
export interface RunTimeEstimate {
  medianMs: number;
  p90Ms: number;
}

/** What an attempt running on a node holds there, and when it is predicted to end (ms, absolute; Infinity: unknown). */
export interface RunningAttempt {
  endsAt: number;
  gpuIndices: readonly number[];
  cpu: number;
  memoryMb: number;
}

/** What the engine may ask of the network's history during a pass. Every answer may be "unknown". */
export interface PlacementPredictor {
  /** The job's run time if it started now; undefined when nothing is known of it. */
  runTime(job: JobRecord): RunTimeEstimate | undefined;
  /** The attempts running on the node (placed before this pass), with their predicted ends. */
  running(nodeId: string): Iterable<RunningAttempt>;
  /**
   * The job's run time on GPUs of this market class (Pool.marketClass), when runs of its family or the class's speed
   * relative to others are known; undefined otherwise (core predict/RunTimeModel.predict with a class).
   */
  runTimeOn?(job: JobRecord, marketClass: string): RunTimeEstimate | undefined;
  /** The chance the node stays online for the next `horizonMs`; undefined when unknown (core predict/NodeUptimeModel). */
  pStaysUp?(nodeId: string, horizonMs: number): number | undefined;
}

export interface Scheduler {
  /** Place as many of `jobs` as fit; reserves capacity in `index` for each placement it returns. */
  place(jobs: readonly JobRecord[], index: CapacityIndex, ctx: PlacementContext): Placement[];
}
