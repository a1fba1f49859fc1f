import type { JobState } from '@gpux/protocol';
import type { EventRecord } from '../records.js';

/** One page of a job's history: its own events (state, money) and the node-reported ones in their range. */
export interface JobHistoryPage {
  /** Oldest first. */
  events: EventRecord[];
  /** Older events exist: read them with before = this; null on the oldest page. */
  moreBefore: number | null;
  /** Node-reported events in this page's range left out (more than the limit). */
  nodeElided: number;
}

/** History and counts: event lists, job history pages, jobs per state. */
export interface HistoryPort {
  listEvents(subject: 'job' | 'node', subjectId: string, limit: number): Promise<EventRecord[]>;
  /**
   * A page of a job's history, newest first by page: the newest `limit` events with seq < `before` that are
   * not of `nodeTypes` (the job's state and money events, which node-reported ones cannot crowd out), and
   * the newest `limit` events of `nodeTypes` in the same seq range.
   */
  listJobHistory(jobId: string, q: { before?: number; limit: number; nodeTypes: readonly string[] }): Promise<JobHistoryPage>;
  countJobsByState(): Promise<Record<JobState, number>>;
}
