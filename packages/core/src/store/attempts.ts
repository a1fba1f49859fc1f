import type { JobState, LogEntry, OutputFile } from '@gpux/protocol';
import type { AttemptRecord, FinishAttemptInput, JobRecord, StoredLogEntry, TransitionDecider } from '../records.js';

export interface LostAttempt {
  attemptId: string;
  jobId: string;
  nodeId: string;
  /** The job's state after the loss: queued (will retry), failed (out of retries) or cancelled. */
  jobState: JobState;
  /** How the attempt ended: lost (absent: lost), or cancelled when its job's cancel grace ran out. */
  outcome?: 'lost' | 'cancelled';
  /** 'deadline': lost at its deadline (core attempt-end/deadline.ts), the node heartbeating but never finishing; absent: its lease ran out. */
  cause?: 'deadline';
}

/** What a node wrote into an attempt through the budgeted verbs (issue 10 item 5). */
export interface AttemptWriteResult {
  /** ok: written within the budget; gone: the attempt is no longer assigned/running (nothing stored); missing: no such attempt. */
  status: 'ok' | 'gone' | 'missing';
  /** New rows stored (repeats of a stored (attempt, seq) are neither stored nor counted). */
  accepted: number;
  /** Rows past the budget, not stored. */
  dropped: number;
  /** The budget is spent (by this write or before): later writes are dropped too. */
  truncated: boolean;
}

/** Attempts: start, finish, leases, and what nodes write into them (logs, events). */
export interface AttemptsPort {
  getAttempt(id: string): Promise<AttemptRecord | undefined>;
  listAttempts(jobId: string): Promise<AttemptRecord[]>;
  /** Attempts in state assigned or running, of one node or of all nodes. */
  listActiveAttempts(nodeId?: string): Promise<AttemptRecord[]>;
  /**
   * assigned -> running (job too, startedAt set; the attempt's deadline: now + the job's timeout + the result grace). Idempotent when already running. Returns whether the
   * job has a cancel request. Throws ATTEMPT_NOT_FOUND if the attempt is not this node's, CONFLICT if it
   * is no longer active.
   */
  startAttempt(attemptId: string, nodeId: string, now: number): Promise<{ attempt: AttemptRecord; job: JobRecord }>;
  /**
   * End an attempt with the node's signed result. Idempotent: the same report again returns
   * duplicate=true; a different report for an ended attempt throws CONFLICT. `decide` picks the job's
   * next state. Outputs are stored with the attempt.
   */
  finishAttempt(input: FinishAttemptInput, decide: TransitionDecider): Promise<{ attempt: AttemptRecord; job: JobRecord; duplicate: boolean }>;
  getOutputs(attemptId: string): Promise<OutputFile[]>;
  /**
   * The node refuses an assignment it could not verify (issue 19): if the attempt is this node's and still
   * assigned (not started), it ends as failed with no exit code and no fault of the node's (no track-record
   * failure, no lease penalty); event attempt.refused with the reason; `decide` requeues the job. Otherwise
   * nothing changes: ended false (the attempt is another node's, started, or over).
   */
  refuseAttempt(input: { attemptId: string; nodeId: string; reason: string; now: number }, decide: TransitionDecider): Promise<{ ended: false } | { ended: true; job: JobRecord }>;

  /**
   * Active attempts whose lease expired before `now` become lost (event attempt.lost), each in a transaction of its own (job, then attempt: the store's lock order); `decide` moves each
   * job on (requeue with backoff, fail, or cancel). At most `limit` per call. This also ends an attempt at
   * its deadline (attempt-end/deadline.ts): heartbeats never lease it past that.
   */
  expireLeases(now: number, decide: TransitionDecider, limit: number): Promise<LostAttempt[]>;
  /** On coordinator start: push every active lease to at least `minExpiresAt` (past a deadline too) so a restart expires nothing healthy. */
  extendActiveLeases(minExpiresAt: number): Promise<number>;
  /** Append entries; an entry whose (attemptId, seq) exists is ignored. Returns how many were new. */
  appendLogs(jobId: string, attemptId: string, entries: LogEntry[]): Promise<number>;
  /** Entries with cursor > after, in cursor order; at most `limit`, and at most `maxBytes` of data (but always one entry when there is one). */
  readLogs(jobId: string, after: number, limit: number, maxBytes?: number): Promise<StoredLogEntry[]>;
  /**
   * A node's log batch under the attempt's budget, in one transaction with the attempt row locked (two
   * concurrent batches cannot both pass the budget). Entries past maxBytes/maxEntries are dropped; the first
   * overflow stores one `system` marker entry (seq `markerSeq`) whose text says what was dropped, updated on
   * later overflows. Nothing is stored for an attempt that is not assigned/running (gone) or unknown (missing).
   */
  writeAttemptLogs(q: { attemptId: string; entries: LogEntry[]; maxBytes: number; maxEntries: number; markerSeq: number; now: number }): Promise<AttemptWriteResult>;
  /**
   * Node-reported job events under the attempt's budget (same transaction rule as writeAttemptLogs): past
   * maxEvents they are dropped, and the first overflow writes one `attempt.events_dropped` event.
   */
  writeAttemptEvents(q: { attemptId: string; events: { type: string; at: number; data: Record<string, unknown> }[]; maxEvents: number; now: number }): Promise<AttemptWriteResult>;
  /** Append events an attempt reported (image pulls) to the job's history, in order, with attemptId in their data. Returns how many. */
  appendJobEvents(jobId: string, attemptId: string, events: { type: string; at: number; data: Record<string, unknown> }[]): Promise<number>;
}
