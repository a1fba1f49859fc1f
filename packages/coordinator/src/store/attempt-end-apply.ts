/**
 * Applying an attempt-end plan (core attempt-end/plan.ts) inside the transaction that loaded its snapshot:
 * the attempt row (with its outputs and settled totals), the gang siblings stopped, the ledger transfers
 * in the plan's order, the fee carries, the job row, the node's record, the runtime expectation and the
 * auto-cordon, an abandoned lease's penalty (its fee transfer, the penalty row, the suspension), and the
 * node's reputation event (last: node rows close the lock order). Events are the caller's to insert (after
 * the verification step's hook).
 */
import { type AttemptEndPenalty, type AttemptEndPlan, type JobRecord, newId } from '@gpux/core';
import type { OutputFile } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import { cryptoRandom } from '../random.js';
import { chunks, type StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { postTransferIn, postTransfersIn } from './ledger.js';
import { autoCordonIn, suspendNodeIn, writeExpectationIn, writeNodeStatsIn } from './node-stats.js';
import { applyReputationIn, applyReputationToRowIn } from './reputation.js';
import { type AttemptRow, jobFromRow } from './rows.js';
import type { Database, NodeReputationTable } from './schema.js';
import { writeFeeCarriesIn } from './settlement.js';
import { stopSiblingIn, writeJobMoveIn } from './transition.js';

export interface AppliedAttemptEnd {
  /** The ending attempt's row as written. */
  row: AttemptRow;
  /** The job row as written; null when the plan did not move the job. */
  job: JobRecord | null;
  /** node.auto_cordoned, when the node was still active. */
  nodeEvents: NewEvent[];
  /** node.penalized (with the penalty's id) and node.suspended: written after the plan's events. */
  penaltyEvents: NewEvent[];
}

export async function applyAttemptEndIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  plan: AttemptEndPlan,
  q: { now: number; outputs?: readonly OutputFile[]; reputation?: Selectable<NodeReputationTable> | null },
): Promise<AppliedAttemptEnd> {
  const a = plan.attempt;
  const report = a.report
    ? {
        exit_code: a.report.exitCode,
        output_digest: a.report.outputDigest,
        metrics: JSON.stringify(a.report.metrics),
        commitment: a.report.commitment,
        commitment_signature: a.report.commitmentSignature,
      }
    : {};
  const settled = a.settlement ? { settled_charged: a.settlement.charged, settled_fee: a.settlement.fee, settled_ms: a.settlement.settledMs } : {};
  const row = await trx
    .updateTable('attempts')
    .set({ state: a.state, error: a.error, lease_expires_at: null, finished_at: a.finishedAt, ...report, ...settled })
    .where('id', '=', a.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  const outputRows = (q.outputs ?? []).map((f) => ({ attempt_id: a.id, path: f.path, size: f.size, sha256: f.sha256, content: f.content ?? null, blob: f.blob ? 1 : 0, plain_sha256: f.encrypted?.sha256 ?? null, plain_size: f.encrypted?.size ?? null }));
  for (const batch of chunks(outputRows, 8, ctx.q)) await trx.insertInto('outputs').values(batch).execute();
  for (const stop of plan.siblings) await stopSiblingIn(trx, stop, q.now);
  // In the plan's order, as if posted one by one (ledger.ts), in three statements.
  await postTransfersIn(trx, plan.transfers);
  await writeFeeCarriesIn(trx, plan.carries);
  const job = plan.job ? jobFromRow(await writeJobMoveIn(trx, row.job_id, plan.job.row)) : null;
  const nodeEvents: NewEvent[] = [];
  if (plan.expectation) await writeExpectationIn(trx, plan.expectation, q.now);
  if (plan.node) {
    await writeNodeStatsIn(trx, plan.node.nodeId, plan.node.stats, q.now);
    if (plan.node.cordon && (await autoCordonIn(trx, plan.node.nodeId, plan.node.cordon.reason))) nodeEvents.push(plan.node.cordon.event);
  }
  const penaltyEvents: NewEvent[] = [];
  for (const p of plan.penalties) penaltyEvents.push(...(await applyPenaltyIn(trx, p)));
  // The node's reputation row as the load read it (SQLite; nothing above writes it), else read now.
  if (plan.reputation && q.reputation !== undefined) await applyReputationToRowIn(trx, ctx, { nodeId: row.node_id, kind: plan.reputation, at: q.now }, q.reputation);
  else if (plan.reputation) await applyReputationIn(trx, ctx, row.node_id, plan.reputation, q.now);
  return { row, job, nodeEvents, penaltyEvents };
}

/** An abandoned lease: the fee transfer (if any), the penalty row, the suspension (if not suspended already). */
async function applyPenaltyIn(trx: Kysely<Database>, p: AttemptEndPenalty): Promise<NewEvent[]> {
  const at = p.event.at;
  const transfer = p.transfer ? await postTransferIn(trx, p.transfer) : null;
  const id = newId('pen', at, cryptoRandom);
  await trx
    .insertInto('penalties')
    .values({
      id,
      node_id: p.nodeId,
      kind: p.plan.event,
      job_id: p.jobId,
      attempt_id: p.attemptId,
      evidence: JSON.stringify(p.evidence),
      transfer_id: transfer?.id ?? null,
      slashed: p.plan.slashed,
      fee: p.fee,
      banned: p.plan.ban ? 1 : 0,
      suspended: p.plan.suspend ? 1 : 0,
      reason: p.plan.reason,
      at,
    })
    .execute();
  const events: NewEvent[] = [{ ...p.event, data: { penaltyId: id, ...p.event.data, transferId: transfer?.id ?? null } }];
  if (p.suspend && (await suspendNodeIn(trx, p.nodeId, p.suspend.reason))) events.push({ ...p.suspend.event, data: { ...p.suspend.event.data, penaltyId: id } });
  return events;
}
