/**
 * Explain a job's wait (GET /v1/jobs/:id/explain): the core's explainJob over the live capacity index, with
 * the job's queue position from the store. Looks at every node once: an on-demand answer, not a pass.
 */
import { explainJob, fairQueuePosition } from '@gpux/core';
import type { ExplainJobResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { visibleJob } from './jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ExplainDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

export async function explainJobWait(rt: ExplainDeps, p: Principal, id: string): Promise<ExplainJobResponse> {
  const job = await visibleJob(rt, p, id);
  const now = rt.clock.now();
  const standing = job.state === 'queued' ? await rt.store.queueStanding(id, now) : undefined;
  return explainJob(job, rt.index, now, standing ? fairQueuePosition(standing) : null);
}
