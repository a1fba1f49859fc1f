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
}

export interface Scheduler {
  /** Place as many of `jobs` as fit; reserves capacity in `index` for each placement it returns. */
  place(jobs: readonly JobRecord[], index: CapacityIndex, ctx: PlacementContext): Placement[];
}
