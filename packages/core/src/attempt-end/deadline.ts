/**
 * The coordinator's own time limit on an attempt (TRUST.md: the slow-loris node, which accepts and stalls).
 * The agent enforces a job's timeoutSeconds itself, but a node that keeps heartbeating and never reports
 * would hold its lease forever: the buyer waits and the job never moves. So every active attempt has a
 * deadline, and no heartbeat leases it past that (the store's heartbeat, as for a cancel's stop_by); the
 * lease expiry then ends it as lost, the job retries elsewhere, and it counts as an abandoned lease.
 *
 * - running: startedAt + timeoutSeconds + the result grace (the time to stop the program and report);
 * - assigned, never started: its creation + the start grace (result grace + one lease TTL: an agent starts
 *   an attempt as soon as it receives it).
 *
 * A coordinator restart grants every active lease one more TTL (extendActiveLeases), past a deadline too:
 * a node that finished while the coordinator was away can still report.
 */
import type { AttemptFacts } from './snapshot.js';

export interface AttemptDeadlinePolicy {
  /** After startedAt + the job's timeout, how long a running attempt may take to report. */
  resultGraceMs: number;
  /** After an attempt is assigned, how long its node may hold it without starting it. */
  startGraceMs: number;
}

/** GPUX_RESULT_GRACE_MS's default, and a lease TTL of 3 × the default 5 s heartbeat on top for a start. */
export const DEFAULT_DEADLINE_POLICY: AttemptDeadlinePolicy = { resultGraceMs: 60_000, startGraceMs: 75_000 };

/** The deadline of an attempt started at `startedAt`. */
export function runDeadline(startedAt: number, timeoutSeconds: number, p: AttemptDeadlinePolicy): number {
  return startedAt + timeoutSeconds * 1000 + p.resultGraceMs;
}

/** The deadline of an attempt assigned at `createdAt` while it is not started. */
export function startDeadline(createdAt: number, p: AttemptDeadlinePolicy): number {
  return createdAt + p.startGraceMs;
}

/**
 * Did the lease end at the deadline (heartbeats could not renew it further)? A node that went silent
 * earlier has a lease short of its deadline and is an ordinary lost lease.
 */
export function leaseReachedDeadline(a: Pick<AttemptFacts, 'deadlineAt' | 'leaseExpiresAt'>): boolean {
  return a.deadlineAt !== undefined && a.deadlineAt !== null && a.leaseExpiresAt !== null && a.leaseExpiresAt >= a.deadlineAt;
}

/** The error of an attempt ended at its deadline (the attempt's, and the job's when it moves on). */
export function deadlineError(started: boolean, timeoutSeconds: number): string {
  return started
    ? `no result within the job's timeout (${timeoutSeconds} s) plus the grace: the node held the attempt without finishing it`
    : 'not started within the grace: the node held the assignment without starting it';
}
