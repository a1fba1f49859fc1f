/**
 * Succeeded runs in finish order, for the run-time predictions (issue 17; core predict/run-time.ts). Only the job's
 * scheduling view of its spec is read (never its payload: command, env and inline inputs may be a megabyte), and
 * the GPU class is the one the run was priced at, else the node's proven class. Index: 0023 (state, finished_at, id).
 */
import type { FinishedRun, FinishedRunsPage, RunCursor } from '@gpux/core';
import { JobSpec } from '@gpux/protocol';
import { z } from 'zod';
import type { StoreContext } from './context.js';

/** What the predictions read of a stored spec; a spec the schema no longer takes is skipped. */
const { name, image, resources, priority } = JobSpec.shape;
const RunShape = z.object({ name, image, resources, priority });

export async function listFinishedRuns(ctx: StoreContext, after: RunCursor, limit: number): Promise<FinishedRunsPage> {
  const rows = await ctx.db
    .selectFrom('attempts')
    .innerJoin('jobs', 'jobs.id', 'attempts.job_id')
    .leftJoin('nodes', 'nodes.id', 'attempts.node_id')
    .select(['attempts.id as attempt_id', 'attempts.job_id', 'attempts.started_at', 'attempts.finished_at', 'attempts.price_class', 'nodes.proven_class', 'jobs.buyer_id', 'jobs.spec'])
    .where('attempts.state', '=', 'succeeded')
    .where((eb) => eb.or([eb('attempts.finished_at', '>', after.finishedAt), eb.and([eb('attempts.finished_at', '=', after.finishedAt), eb('attempts.id', '>', after.attemptId)])]))
    .orderBy('attempts.finished_at')
    .orderBy('attempts.id')
    .limit(limit)
    .execute();
  const runs: FinishedRun[] = [];
  for (const r of rows) {
    if (r.started_at === null || r.finished_at === null) continue;
    // The scheduling view has no payload keys (command, …): only what the features need is read.
    const spec = RunShape.safeParse(JSON.parse(r.spec));
    if (!spec.success) continue;
    runs.push({
      attemptId: r.attempt_id,
      jobId: r.job_id,
      buyerId: r.buyer_id,
      spec: spec.data,
      gpuClass: r.price_class ?? r.proven_class ?? null,
      startedAt: Number(r.started_at),
      finishedAt: Number(r.finished_at),
    });
  }
  const last = rows.at(-1);
  return { runs, last: last ? { finishedAt: Number(last.finished_at), attemptId: last.attempt_id } : null, rows: rows.length };
}
