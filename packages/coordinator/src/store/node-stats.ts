/**
 * Node track records, kept inside the transactions that end attempts and mark nodes offline, so a node's
 * record and the outcome that changed it commit together. The rules are the core's (scheduler/node-stats.ts);
 * this file reads and writes rows, and auto-cordons a node (event node.auto_cordoned) when the rule says so.
 */
import { applyOutcome, emptyNodeStats, gpuClassOf, type JobRecord, type NodeOutcome, type NodeStats, type NodeStatsRecord, runtimeShapeKey } from '@gpux/core';
import type { NodeAdvertisement } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import type { StoreContext } from './context.js';
import { insertEvents } from './events.js';
import type { Database, NodeStatsTable } from './schema.js';

/** A running mean that turns into an exponential one after this many samples (recent runs count more). */
const EXPECTATION_WINDOW = 50;

function statsFromRow(r: Selectable<NodeStatsTable>): NodeStats {
  return {
    successes: Number(r.successes),
    failures: Number(r.failures),
    outages: Number(r.outages),
    decayedAt: Number(r.decayed_at),
    runtimeRatio: r.runtime_ratio === null ? null : Number(r.runtime_ratio),
    runtimeWeight: Number(r.runtime_weight),
    recentFailures: JSON.parse(r.recent_failures),
  };
}

async function readStats(trx: Kysely<Database>, nodeId: string, now: number): Promise<NodeStats> {
  const row = await trx.selectFrom('node_stats').selectAll().where('node_id', '=', nodeId).executeTakeFirst();
  return row ? statsFromRow(row) : emptyNodeStats(now);
}

async function writeStats(trx: Kysely<Database>, nodeId: string, s: NodeStats, now: number): Promise<void> {
  const values = {
    successes: s.successes,
    failures: s.failures,
    outages: s.outages,
    decayed_at: s.decayedAt,
    runtime_ratio: s.runtimeRatio,
    runtime_weight: s.runtimeWeight,
    recent_failures: JSON.stringify(s.recentFailures),
    updated_at: now,
  };
  await trx
    .insertInto('node_stats')
    .values({ node_id: nodeId, ...values })
    .onConflict((oc) => oc.column('node_id').doUpdateSet(values))
    .execute();
}

/** The GPU class the attempt ran on ('cpu' for CPU-only), from the node's advertisement. */
async function classOfAttempt(trx: Kysely<Database>, nodeId: string, gpuIndices: readonly number[]): Promise<string | undefined> {
  if (gpuIndices.length === 0) return 'cpu';
  const row = await trx.selectFrom('nodes').select('advertisement').where('id', '=', nodeId).executeTakeFirst();
  if (!row) return undefined;
  const gpu = (JSON.parse(row.advertisement) as NodeAdvertisement).gpus.find((g) => g.index === gpuIndices[0]);
  return gpu ? gpuClassOf(gpu).key : undefined;
}

/** actual / expected for this run (undefined until the shape has enough runs on the class), and learn from it. */
async function runtimeRatio(trx: Kysely<Database>, ctx: StoreContext, job: JobRecord, nodeId: string, gpuIndices: readonly number[], durationMs: number, now: number) {
  const cls = await classOfAttempt(trx, nodeId, gpuIndices);
  if (cls === undefined || durationMs <= 0) return undefined;
  const key = `${runtimeShapeKey(job.spec)}@${cls}`;
  const row = await trx.selectFrom('runtime_expectations').selectAll().where('key', '=', key).executeTakeFirst();
  const samples = row ? Number(row.samples) : 0;
  const mean = row ? Number(row.mean_ms) : 0;
  const ratio = samples >= ctx.policy.minExpectationSamples && mean > 0 ? durationMs / mean : undefined;
  const next = { mean_ms: mean + (durationMs - mean) / Math.min(samples + 1, EXPECTATION_WINDOW), samples: samples + 1, updated_at: now };
  await trx
    .insertInto('runtime_expectations')
    .values({ key, ...next })
    .onConflict((oc) => oc.column('key').doUpdateSet(next))
    .execute();
  return ratio;
}

export interface AttemptOutcomeInput {
  nodeId: string;
  job: JobRecord;
  gpuIndices: readonly number[];
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'lost';
  exitCode: number | null;
  durationMs: number | null;
  now: number;
}

/**
 * Record how an attempt ended on its node. The node ran the job to an end (succeeded, or the program's own
 * exit code): a success for the node; lost or failed with no exit code: an infrastructure failure; cancelled:
 * nothing. Auto-cordons an active node that crossed the failure threshold.
 */
export async function recordAttemptOutcome(trx: Kysely<Database>, ctx: StoreContext, a: AttemptOutcomeInput): Promise<void> {
  let outcome: NodeOutcome;
  if (a.outcome === 'cancelled') return;
  if (a.outcome === 'succeeded') {
    const ratio = a.durationMs === null ? undefined : await runtimeRatio(trx, ctx, a.job, a.nodeId, a.gpuIndices, a.durationMs, a.now);
    outcome = ratio === undefined ? { kind: 'success' } : { kind: 'success', runtimeRatio: ratio };
  } else if (a.outcome === 'failed' && a.exitCode !== null) outcome = { kind: 'success' };
  else outcome = { kind: 'failure' };
  const { stats, cordonReason } = applyOutcome(await readStats(trx, a.nodeId, a.now), outcome, a.now, ctx.policy);
  await writeStats(trx, a.nodeId, stats, a.now);
  if (cordonReason === null) return;
  const cordoned = await trx
    .updateTable('nodes')
    .set({ admin_state: 'cordoned', admin_reason: cordonReason })
    .where('id', '=', a.nodeId)
    .where('admin_state', '=', 'active')
    .returning('id')
    .execute();
  if (cordoned.length === 0) return;
  await insertEvents(trx, ctx, [
    {
      at: a.now,
      subject: 'node',
      subjectId: a.nodeId,
      type: 'node.auto_cordoned',
      data: { reason: cordonReason, failures: stats.recentFailures.length, windowMs: ctx.policy.cordonWindowMs },
    },
  ]);
}

/** Nodes that just went offline: one outage each on their record. */
export async function recordOutages(trx: Kysely<Database>, ctx: StoreContext, nodeIds: readonly string[], now: number): Promise<void> {
  for (const id of nodeIds) {
    const { stats } = applyOutcome(await readStats(trx, id, now), { kind: 'outage' }, now, ctx.policy);
    await writeStats(trx, id, stats, now);
  }
}

export async function listNodeStats(ctx: StoreContext, since: number): Promise<NodeStatsRecord[]> {
  const rows = await ctx.db
    .selectFrom('node_stats')
    .innerJoin('nodes', 'nodes.id', 'node_stats.node_id')
    .selectAll('node_stats')
    .select(['nodes.admin_state', 'nodes.admin_reason'])
    .where('node_stats.updated_at', '>=', since)
    .orderBy('node_stats.updated_at')
    .orderBy('node_stats.node_id')
    .execute();
  return rows.map((r) => ({
    nodeId: r.node_id,
    stats: statsFromRow(r),
    adminState: r.admin_state as NodeStatsRecord['adminState'],
    adminReason: r.admin_reason,
    updatedAt: Number(r.updated_at),
  }));
}
