/**
 * Explain a job's wait (GET /v1/jobs/:id/explain): the core's explainJob over the live capacity index, with
 * the job's queue position from the store. Looks at every node once: an on-demand answer, not a pass.
 */
import { estimateWait, explainJob, fairQueuePosition, requirementsOf } from '@gpux/core';
import type { ExplainJobResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { visibleJob } from './jobs.js';
import { type RegionAdviceDeps, regionAdvice } from './region-advice.js';
import { predictionOf } from './run-predictions.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ExplainDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'predictions' | 'random' | 'signals' | 'store' | 'work'> & RegionAdviceDeps;

export async function explainJobWait(rt: ExplainDeps, p: Principal, id: string): Promise<ExplainJobResponse> {
  const job = await visibleJob(rt, p, id);
  const now = rt.clock.now();
  const standing = job.state === 'queued' ? await rt.store.queueStanding(id, now) : undefined;
  const explained = { ...explainJob(job, rt.index, now, standing ? fairQueuePosition(standing) : null), ...(await predictionOf(rt, job)) };
  if (!explained.pending) return explained;
  // Issue 15: where else it could run (the forwarder follows the same verdict), from the same counts the quote's wait uses.
  const req = requirementsOf(job);
  const wait = estimateWait(explained, req.nodes, rt.scheduling.waits.recent(now), rt.config.schedulePassIntervalMs);
  const local = { nodesFitting: explained.nodesFitting, nodesBusy: explained.nodesBusy, nodesNeeded: req.nodes, wait };
  const regions = await regionAdvice(rt, p, req, local, { queueTimeoutSeconds: job.spec.queueTimeoutSeconds, asset: job.payment?.asset ?? job.spec.asset ?? 'usdc', spec: job.spec });
  return regions ? { ...explained, regions } : explained;
}
