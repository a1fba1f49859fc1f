/** What a node writes into an attempt while it runs: log lines and job events (image pulls). */
import {
  ACTIVE_ATTEMPT_STATES,
  type AttemptEventBatch,
  type AttemptEventBatchResponse,
  type LogBatch,
  type LogBatchResponse,
} from '@gpux/protocol';
import type { Runtime } from '../runtime.js';
import { nodeAttempt } from './agent.js';

export async function appendLogs(rt: Runtime, nodeId: string, attemptId: string, batch: LogBatch): Promise<LogBatchResponse> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  const accepted = await rt.store.appendLogs(a.jobId, attemptId, batch.entries);
  if (accepted > 0) rt.logs.wake(a.jobId);
  const job = await rt.store.getJob(a.jobId);
  return { accepted, cancel: !ACTIVE_ATTEMPT_STATES.includes(a.state) || (job?.cancelRequested ?? true) };
}

/** Job events the attempt reports (image pulls): appended to its job's history. Unknown or foreign attempt: 404. */
export async function appendAttemptEvents(rt: Runtime, nodeId: string, attemptId: string, batch: AttemptEventBatch): Promise<AttemptEventBatchResponse> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  const accepted = await rt.store.appendJobEvents(a.jobId, attemptId, batch.events);
  return { accepted };
}

