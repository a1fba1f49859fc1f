import type { JobSpec } from '@gpux/protocol';

/** A run that succeeded, as the run-time predictions learn from it (issue 17). */
export interface FinishedRun {
  attemptId: string;
  jobId: string;
  buyerId: string;
  /** The job's spec as the scheduler sees it: name, image, resources, priority (no command, env or inputs). */
  spec: Pick<JobSpec, 'name' | 'image' | 'resources' | 'priority'>;
  /** The GPU class it ran on (the priced or the proven class), null when neither is known. */
  gpuClass: string | null;
  startedAt: number;
  finishedAt: number;
}

/** Where a reader of finished runs stands: the last run it read. */
export interface RunCursor {
  finishedAt: number;
  attemptId: string;
}

export interface FinishedRunsPage {
  /** Oldest first. */
  runs: FinishedRun[];
  /** The last row read (a run or a row left out: no start, or a spec no longer understood); null: none after `after`. */
  last: RunCursor | null;
  /** Rows read: fewer than the limit means the history is caught up. */
  rows: number;
}

export interface RunHistoryPort {
  /** Succeeded runs that finished after `after` (finishedAt, then attempt id), oldest first, reading at most `limit` rows. */
  listFinishedRuns(after: RunCursor, limit: number): Promise<FinishedRunsPage>;
}
