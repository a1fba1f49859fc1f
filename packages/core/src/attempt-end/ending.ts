/**
 * How an attempt ends, from its cause: the node's report carries its outcome; an expired lease is a lost
 * attempt, except when its job's cancel was requested and the lease ran to the attempt's stop_by (the node
 * kept heartbeating but never stopped it): then it ends as cancelled, charged up to stop_by. A node that
 * went silent before its stop_by is lost as usual; one whose lease ran to its deadline (deadline.ts: the node
 * kept heartbeating but never finished) is lost with that reason.
 */
import type { AttemptMetrics } from '@gpux/protocol';
import type { AttemptEnd } from '../records.js';
import { deadlineError, leaseReachedDeadline } from './deadline.js';
import type { PlannedEvent } from './settle.js';
import type { AttemptEndCause, AttemptFacts } from './snapshot.js';

export const LEASE_EXPIRED = 'lease expired: the node stopped heartbeating';
export const CANCEL_GRACE_EXPIRED = 'cancelled by the buyer: the node did not stop the attempt within the cancel grace';

/** The attempt row as ended (settled totals are added by the plan). */
export interface AttemptEndRow {
  state: AttemptEnd['outcome'];
  error: string | null;
  finishedAt: number;
  /** The node's report: written only when the node reported. */
  report: { exitCode: number | null; outputDigest: string; metrics: AttemptMetrics; commitment: string | null; commitmentSignature: string | null } | null;
}

export interface Ending {
  /** What `decide` and the node's record are told. */
  end: AttemptEnd;
  durationMs: number | null;
  row: AttemptEndRow;
  /** attempt.finished, attempt.lost, attempt.cancelled or attempt.refused: the first event of the end. */
  event: PlannedEvent;
}

/** True when the coordinator may end this attempt for its lease at `now` (active, leased, expired). */
export function leaseHasExpired(a: Pick<AttemptFacts, 'state' | 'leaseExpiresAt'>, now: number): boolean {
  return (a.state === 'assigned' || a.state === 'running') && a.leaseExpiresAt !== null && a.leaseExpiresAt < now;
}

/**
 * `timeoutSeconds`: the job's, for the error of an attempt ended at its deadline (attempt-end/deadline.ts):
 * lost like a silent node's, with the reason its node held it, which the job's error repeats.
 */
export function endingOf(a: AttemptFacts, cause: AttemptEndCause, now: number, timeoutSeconds: number | null = null): Ending {
  if (cause.kind === 'report') {
    const { outcome, exitCode, error, outputDigest } = cause;
    return {
      end: { outcome, exitCode, error },
      durationMs: cause.metrics.durationMs,
      row: {
        state: outcome,
        error,
        finishedAt: now,
        report: { exitCode, outputDigest, metrics: cause.metrics, commitment: cause.commitment ?? null, commitmentSignature: cause.commitmentSignature ?? null },
      },
      event: {
        at: now,
        subject: 'job',
        subjectId: a.jobId,
        type: 'attempt.finished',
        data: { attemptId: a.id, nodeId: a.nodeId, outcome, exitCode, error, outputDigest },
      },
    };
  }
  if (cause.kind === 'refused') {
    // Failed with no exit code: the job goes back to the queue (away from this node) like an infrastructure failure.
    const error = `refused by the node: ${cause.reason}`;
    return {
      end: { outcome: 'failed', exitCode: null, error },
      durationMs: null,
      row: { state: 'failed', error, finishedAt: now, report: null },
      event: { at: now, subject: 'job', subjectId: a.jobId, type: 'attempt.refused', data: { attemptId: a.id, nodeId: a.nodeId, reason: cause.reason } },
    };
  }
  const outcome = a.stopBy !== null && a.leaseExpiresAt !== null && a.leaseExpiresAt >= a.stopBy ? 'cancelled' : 'lost';
  const deadline = outcome === 'lost' && leaseReachedDeadline(a);
  const error = outcome === 'cancelled' ? CANCEL_GRACE_EXPIRED : deadline ? deadlineError(a.startedAt !== null, timeoutSeconds ?? 0) : LEASE_EXPIRED;
  const data = {
    attemptId: a.id,
    nodeId: a.nodeId,
    leaseExpiresAt: a.leaseExpiresAt,
    ...(a.stopBy !== null ? { stopBy: a.stopBy } : {}),
    ...(deadline ? { cause: 'deadline', deadlineAt: a.deadlineAt } : {}),
  };
  return {
    end: { outcome, exitCode: null, error: outcome === 'cancelled' || deadline ? error : null },
    durationMs: null,
    row: { state: outcome, error, finishedAt: now, report: null },
    event: { at: now, subject: 'job', subjectId: a.jobId, type: `attempt.${outcome}`, data },
  };
}
