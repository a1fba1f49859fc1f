/** Reading what a job produced: its logs (cursor + long-poll) and its result. */
import { performance } from 'node:perf_hooks';
import { GpuxError } from '@gpux/core';
import { type JobLogsResponse, type JobResultResponse, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Principal } from '../http/bearer-auth.js';
import type { Runtime } from '../runtime.js';
import { visibleJob } from './jobs.js';

export async function readJobLogs(rt: Runtime, p: Principal, id: string, q: { after: number; limit: number; waitMs: number }): Promise<JobLogsResponse> {
  await visibleJob(rt, p, id);
  const begin = performance.now();
  for (;;) {
    const sub = rt.logs.subscribe(id);
    try {
      // The job is read before its logs: if it was finished then, every entry it will get is already stored.
      const job = await rt.store.getJob(id);
      const rows = await rt.store.readLogs(id, q.after, q.limit);
      const terminal = job !== undefined && TERMINAL_JOB_STATES.includes(job.state);
      const remaining = q.waitMs - (performance.now() - begin);
      if (rows.length > 0 || terminal || remaining <= 0 || rt.logs.isClosed) {
        return {
          entries: rows.map((r) => ({ attemptId: r.attemptId, cursor: r.cursor, seq: r.seq, stream: r.stream, data: r.data, at: r.at })),
          next: rows.at(-1)?.cursor ?? q.after,
          done: terminal && rows.length < q.limit,
        };
      }
      await sub.wait(remaining);
    } finally {
      sub.dispose();
    }
  }
}

export async function jobResult(rt: Runtime, p: Principal, id: string): Promise<JobResultResponse> {
  const job = await visibleJob(rt, p, id);
  if (!TERMINAL_JOB_STATES.includes(job.state)) throw new GpuxError('RESULT_NOT_READY', `job ${id} is ${job.state}; its result is not ready`);
  const attempts = await rt.store.listAttempts(id);
  const last = job.currentAttemptId ? (attempts.find((a) => a.id === job.currentAttemptId) ?? attempts.at(-1)) : attempts.at(-1);
  if (!last) throw new GpuxError('CONFLICT', `job ${id} was ${job.state} before any attempt ran; it has no result`);
  return {
    jobId: id,
    attemptId: last.id,
    state: job.state,
    exitCode: job.exitCode,
    error: job.error,
    outputDigest: last.outputDigest,
    outputs: await rt.store.getOutputs(last.id),
  };
}
