/**
 * What a node writes into an attempt while it runs: log lines and job events (image pulls). Each write is
 * bounded: entry size and event data by the protocol schemas (400), the attempt's total by its budget
 * (past it: accepted, dropped, one visible marker, `truncated: true` so the agent stops), and only while
 * the attempt is assigned or running (410 GONE afterwards, nothing stored).
 */
import { type AttemptRecord, type AttemptWriteResult, GpuxError } from '@gpux/core';
import { type AttemptEventBatch, type AttemptEventBatchResponse, LOG_SEQ_MAX, type LogBatch, type LogBatchResponse } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { nodeAttempt } from './agent.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type AttemptWritesDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

/** The seq of the coordinator's "log limit reached" entry: above any seq a node may send. */
export const LOG_MARKER_SEQ = LOG_SEQ_MAX + 1;

function gone(attemptId: string, what: string, state?: string): GpuxError {
  return new GpuxError('GONE', `attempt ${attemptId} has ended${state ? ` (${state})` : ''}; it takes no more ${what}: stop sending them`);
}

/** Refuse what the store refused: the attempt ended between our read and the write, or vanished. */
function checked(a: AttemptRecord, res: AttemptWriteResult, what: string): AttemptWriteResult {
  if (res.status === 'gone') throw gone(a.id, what);
  if (res.status === 'missing') throw new GpuxError('ATTEMPT_NOT_FOUND', `no attempt ${a.id}`);
  return res;
}

export async function appendLogs(rt: AttemptWritesDeps, nodeId: string, attemptId: string, batch: LogBatch): Promise<LogBatchResponse> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  if (a.state !== 'assigned' && a.state !== 'running') throw gone(a.id, 'logs', a.state);
  const { config } = rt;
  const res = checked(
    a,
    await rt.store.writeAttemptLogs({
      attemptId,
      entries: batch.entries,
      maxBytes: config.attemptLogMaxBytes,
      maxEntries: config.attemptLogMaxEntries,
      markerSeq: LOG_MARKER_SEQ,
      now: rt.clock.now(),
    }),
    'logs',
  );
  if (res.accepted > 0 || res.dropped > 0) rt.logs.wake(a.jobId);
  if (res.dropped > 0) rt.logger.debug({ nodeId, attemptId, dropped: res.dropped }, 'log entries past the attempt budget dropped');
  const job = await rt.store.getJob(a.jobId);
  return { accepted: res.accepted, cancel: job?.cancelRequested ?? true, ...(res.truncated ? { truncated: true } : {}) };
}

/** Job events the attempt reports (image pulls): appended to its job's history under the attempt's budget. */
export async function appendAttemptEvents(rt: AttemptWritesDeps, nodeId: string, attemptId: string, batch: AttemptEventBatch): Promise<AttemptEventBatchResponse> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  if (a.state !== 'assigned' && a.state !== 'running') throw gone(a.id, 'events', a.state);
  const res = checked(a, await rt.store.writeAttemptEvents({ attemptId, events: batch.events, maxEvents: rt.config.attemptMaxEvents, now: rt.clock.now() }), 'events');
  return { accepted: res.accepted, ...(res.truncated ? { truncated: true } : {}) };
}
