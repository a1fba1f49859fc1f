import type { JobState } from '@gpux/protocol';
import type { QueueStanding } from '../scheduler/fairness.js';
import type { AttemptRecord, JobRecord, NewJob, Placement } from '../records.js';
import type { Page } from './page.js';

/** Store.failQueueTimeouts's question. `reason` runs before each job's transaction (it may be slow, never inside a write lock). */
export interface QueueTimeoutInput {
  now: number;
  defaultTimeoutSeconds: number;
  limit: number;
  reason: (job: JobRecord, waitedSeconds: number) => string;
}

/** Jobs: submission, cancel, the queue claims, queue timeouts and the scheduling pass's writes. */
export interface JobsPort {
  /**
   * Insert a queued job and its `job.submitted` event in one transaction. When (buyerId, idempotencyKey)
   * already exists, returns the existing job with created=false and writes nothing. With job.maxQueued, a
   * buyer who already has that many queued jobs gets GpuxError LIMIT_EXCEEDED and nothing is written or held.
   */
  submitJob(job: NewJob): Promise<{ job: JobRecord; created: boolean }>;
  getJob(id: string): Promise<JobRecord | undefined>;
  /** The jobs among `ids` that exist, in no particular order: one query, for callers that would otherwise loop getJob. */
  getJobs(ids: readonly string[]): Promise<JobRecord[]>;
  /** Newest first. */
  listJobs(q: { buyerId?: string; states?: JobState[]; limit: number; cursor?: string }): Promise<Page<JobRecord>>;
  /**
   * Cancel: a queued job becomes cancelled at once (stopAttemptIds empty). An assigned or running job
   * gets cancelRequested=true and stays in its state until its attempt ends; its active attempt ids are
   * returned. A finished job: throws GpuxError JOB_FINISHED. Unknown: JOB_NOT_FOUND.
   * Its active attempts get stopBy = now + graceMs (default CANCEL_GRACE_MS; a repeated request keeps the
   * first): they are charged only up to stopBy, no heartbeat leases them past it, and expireLeases then
   * ends each still active as cancelled, whether or not its node answers.
   */
  requestCancel(jobId: string, now: number, graceMs?: number): Promise<{ job: JobRecord; stopAttemptIds: string[] }>;
  /**
   * Queued jobs with runAfter null or <= now and no cancel request, oldest first (uses an index). Both claims
   * return each job's scheduling view: its spec with command, args, env, inputs and labels empty (the pass
   * never reads them, and they are most of a large spec; specs never change, so getJob has them).
   */
  claimQueued(now: number, limit: number): Promise<JobRecord[]>;
  /**
   * The fair-share claim (core scheduler/fairness.ts): queued jobs grouped into (buyer, priority class)
   * pairs, at most `limit` pairs starting at the first buyer >= `fromBuyer` (wrapping around), the oldest
   * ceil(limit / pairs) due jobs of each (runAfter null or <= now, no cancel request); then the shares left
   * unused, split among the pairs that filled theirs, in one more round. Indexed per pair.
   */
  claimQueuedFair(now: number, limit: number, fromBuyer?: string): Promise<JobRecord[]>;
  /** A queued job's standing for explain (fairQueuePosition turns it into a position); undefined if not queued. */
  queueStanding(jobId: string, now: number): Promise<QueueStanding | undefined>;
  /**
   * Queue timeouts (issue 10 item 4): queued jobs past their queue deadline (when they entered the queue +
   * spec.queueTimeoutSeconds, else `defaultTimeoutSeconds`) fail, each in its own transaction: state failed,
   * `reason(job, waitedSeconds)` in job.error, events job.queue_timeout and job.failed, the escrow released
   * to the buyer. At most `limit` jobs per call (the caller repeats while it gets `limit`); indexed.
   */
  failQueueTimeouts(q: QueueTimeoutInput): Promise<JobRecord[]>;
  /**
   * Write a scheduling pass in one transaction: per placement, insert the attempt (state assigned, lease),
   * move the job to assigned, bump attemptCount, set currentAttemptId, write `job.assigned`. A placement
   * whose job is no longer queued is skipped. Returns the attempts written. The members of a gang
   * (placements with `gang`, same job) are written together; currentAttemptId is the leader's (rank 0).
   * A gang member's end moves the job only when it fails (the job moves as its decider says and the other
   * active members are ended as cancelled) or when it is the last member to succeed.
   */
  assign(placements: Placement[], now: number): Promise<AttemptRecord[]>;
}
