/**
 * One attempt's end inside the caller's transaction (finishAttempt, expireLeases): load the snapshot, plan
 * with the core's rules, apply the plan, then let the verification step see the result (it runs for every
 * attempt end and decides itself what to do), then write the events: the node's cordon, the plan's, the
 * penalty's (node.penalized, node.suspended), the verification step's.
 */
import { type AttemptEndCause, type AttemptEndPlan, type AttemptRecord, isPeerNodeId, type JobRecord, planAttemptEnd, type TransitionDecider } from '@gpux/core';
import type { OutputFile } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { applyAttemptEndIn } from './attempt-end-apply.js';
import { loadAttemptEndIn } from './attempt-end-load.js';
import type { StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { type AttemptRow, attemptFromRow, type JobRow } from './rows.js';
import type { Database } from './schema.js';
import { afterAttemptEndIn } from './verification.js';

export interface AttemptEndRun {
  row: AttemptRow;
  /** The job's row when the caller already holds it locked (PostgreSQL's lock order reads it first); else read here. */
  jobRow?: JobRow;
  cause: AttemptEndCause;
  decide: TransitionDecider;
  now: number;
  outputs?: readonly OutputFile[];
  /** FinishAttemptInput.auditDraw, passed on to the verification step. */
  auditDraw?: number;
}

export async function endAttemptIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  r: AttemptEndRun,
): Promise<{ attempt: AttemptRecord; job: JobRecord; plan: AttemptEndPlan }> {
  const policy = { decide: r.decide, nodeStats: ctx.policy };
  const { snapshot, reputation } = await loadAttemptEndIn(trx, ctx, { row: r.row, ...(r.jobRow ? { jobRow: r.jobRow } : {}), cause: r.cause, now: r.now, policy });
  const plan = withoutPeerNode(planAttemptEnd(snapshot, policy), r.row.node_id);
  const applied = await applyAttemptEndIn(trx, ctx, plan, { now: r.now, ...(r.outputs ? { outputs: r.outputs } : {}), ...(reputation !== undefined ? { reputation } : {}) });
  const job = applied.job ?? snapshot.job;
  const attempt = attemptFromRow(applied.row);
  const verification = await afterAttemptEndIn(trx, ctx, {
    job,
    attempt,
    previousJobState: snapshot.job.state,
    ...(r.auditDraw !== undefined ? { auditDraw: r.auditDraw } : {}),
    now: r.now,
  });
  await insertEvents(trx, ctx, [...applied.nodeEvents, ...plan.events, ...applied.penaltyEvents, ...verification]);
  return { attempt, job, plan };
}

/**
 * A forwarded attempt's node is a peer region (peer:<id>, no nodes row): no track record, runtime expectation,
 * lease-loss penalty or reputation is written for it here. The peer's own nodes are judged by the peer.
 */
function withoutPeerNode(plan: AttemptEndPlan, nodeId: string): AttemptEndPlan {
  if (!isPeerNodeId(nodeId)) return plan;
  return { ...plan, node: null, expectation: null, penalties: [], reputation: null };
}
