/** Pure job lifecycle rules: what happens to a job when one of its attempts ends. */
import type { AttemptEnd, JobRecord, JobTransition } from './records.js';

export interface RetryPolicy {
  baseBackoffMs: number;
  maxBackoffMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { baseBackoffMs: 2_000, maxBackoffMs: 5 * 60_000 };

/** Delay before retry number `retry` (1-based): base * 2^(retry-1), capped. */
export function backoffMs(retry: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): number {
  return Math.min(policy.maxBackoffMs, policy.baseBackoffMs * 2 ** Math.max(0, retry - 1));
}

/**
 * - a cancel request wins: cancelled;
 * - success: succeeded;
 * - the job's own program failed (an exit code): failed, no retry (running it again costs the buyer and
 *   fails again);
 * - infrastructure failure (lost lease, executor error with no exit code): back to the queue with
 *   backoff, away from that node, while retries remain; otherwise failed.
 */
export function decideAfterAttempt(job: JobRecord, end: AttemptEnd, now: number, policy: RetryPolicy = DEFAULT_RETRY_POLICY): JobTransition {
  if (job.cancelRequested || end.outcome === 'cancelled') {
    return { state: 'cancelled', runAfter: null, error: end.error ?? 'cancelled by the buyer', exitCode: end.exitCode, avoidNode: false };
  }
  if (end.outcome === 'succeeded') return { state: 'succeeded', runAfter: null, error: null, exitCode: end.exitCode, avoidNode: false };
  if (end.outcome === 'failed' && end.exitCode !== null) {
    return { state: 'failed', runAfter: null, error: end.error ?? `exited with code ${end.exitCode}`, exitCode: end.exitCode, avoidNode: false };
  }
  const reason = end.outcome === 'lost' ? (end.error ?? 'node stopped heartbeating; attempt lost') : (end.error ?? 'executor failed');
  const retriesUsed = job.attemptCount - 1;
  if (retriesUsed >= job.spec.maxRetries) {
    return { state: 'failed', runAfter: null, error: `${reason} (no retries left: maxRetries=${job.spec.maxRetries})`, exitCode: null, avoidNode: true };
  }
  return { state: 'queued', runAfter: now + backoffMs(retriesUsed + 1, policy), error: reason, exitCode: null, avoidNode: true };
}

export function transitionDecider(policy: RetryPolicy = DEFAULT_RETRY_POLICY) {
  return (job: JobRecord, end: AttemptEnd, now: number) => decideAfterAttempt(job, end, now, policy);
}
