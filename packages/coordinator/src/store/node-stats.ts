/**
 * Node track records, kept inside the transactions that end attempts and mark nodes offline, so a node's
 * record and the outcome that changed it commit together. The rules are the core's (scheduler/node-stats.ts,
 * attempt-end/node-outcome.ts); this file reads and writes the rows: the record, the runtime expectations
 * of job shapes per GPU class, and the auto-cordon (conditional: only an active node is cordoned).
 */
import { applyOutcome, emptyNodeStats, gpuClassOf, type JobRecord, type NodeStats, type NodeStatsRecord, type RuntimeExpectation, runtimeExpectationKey } from '@gpux/core';
import type { NodeAdvertisement } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import type { StoreContext } from './context.js';
import type { Database, NodeReputationTable, NodeStatsTable } from './schema.js';

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

export async function readNodeStatsIn(trx: Kysely<Database>, nodeId: string, now: number): Promise<NodeStats> {
  const row = await trx.selectFrom('node_stats').selectAll().where('node_id', '=', nodeId).executeTakeFirst();
  return row ? statsFromRow(row) : emptyNodeStats(now);
}

/**
 * SQLite: the node's record and its reputation row (null: none yet) in one read, for an attempt's end (its plan
 * applies both). Undefined when the node has no row: read them apart then. PostgreSQL locks the reputation row
 * later, in the lock order (reputation.ts), so it reads them apart.
 */
export async function readNodeRecordsIn(
  trx: Kysely<Database>,
  nodeId: string,
  now: number,
): Promise<{ stats: NodeStats; reputation: Selectable<NodeReputationTable> | null } | undefined> {
  const r = await trx
    .selectFrom('nodes')
    .leftJoin('node_stats', 'node_stats.node_id', 'nodes.id')
    .leftJoin('node_reputation', 'node_reputation.node_id', 'nodes.id')
    .select([
      'node_stats.node_id as stats_node_id',
      'node_stats.successes',
      'node_stats.failures',
      'node_stats.outages',
      'node_stats.decayed_at',
      'node_stats.runtime_ratio',
      'node_stats.runtime_weight',
      'node_stats.recent_failures',
      'node_stats.updated_at as stats_updated_at',
      'node_reputation.node_id as rep_node_id',
      'node_reputation.good',
      'node_reputation.bad',
      'node_reputation.as_of',
      'node_reputation.updated_at as rep_updated_at',
    ])
    .where('nodes.id', '=', nodeId)
    .executeTakeFirst();
  if (!r) return undefined;
  const stats =
    r.stats_node_id === null
      ? emptyNodeStats(now)
      : statsFromRow({
          node_id: r.stats_node_id,
          successes: r.successes as number,
          failures: r.failures as number,
          outages: r.outages as number,
          decayed_at: r.decayed_at as number,
          runtime_ratio: r.runtime_ratio ?? null,
          runtime_weight: r.runtime_weight as number,
          recent_failures: r.recent_failures as string,
          updated_at: r.stats_updated_at as number,
        });
  const reputation =
    r.rep_node_id === null ? null : { node_id: r.rep_node_id, good: r.good as number, bad: r.bad as number, as_of: r.as_of as number, updated_at: r.rep_updated_at as number };
  return { stats, reputation };
}

export async function writeNodeStatsIn(trx: Kysely<Database>, nodeId: string, s: NodeStats, now: number): Promise<void> {
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

/**
 * The runtime expectation of `job`'s shape on the GPU class the attempt ran on (no row yet: no samples),
 * or null when the class is unknown (the node or its GPU is gone).
 */
export async function readExpectationIn(trx: Kysely<Database>, job: JobRecord, nodeId: string, gpuIndices: readonly number[]): Promise<RuntimeExpectation | null> {
  const cls = await classOfAttempt(trx, nodeId, gpuIndices);
  if (cls === undefined) return null;
  const key = runtimeExpectationKey(job.spec, cls);
  const row = await trx.selectFrom('runtime_expectations').selectAll().where('key', '=', key).executeTakeFirst();
  return { key, samples: row ? Number(row.samples) : 0, meanMs: row ? Number(row.mean_ms) : 0 };
}

export async function writeExpectationIn(trx: Kysely<Database>, x: RuntimeExpectation, now: number): Promise<void> {
  const next = { mean_ms: x.meanMs, samples: x.samples, updated_at: now };
  await trx
    .insertInto('runtime_expectations')
    .values({ key: x.key, ...next })
    .onConflict((oc) => oc.column('key').doUpdateSet(next))
    .execute();
}

/** Cordon the node if it is still active. Returns whether it was. */
export async function autoCordonIn(trx: Kysely<Database>, nodeId: string, reason: string): Promise<boolean> {
  const cordoned = await trx
    .updateTable('nodes')
    .set({ admin_state: 'cordoned', admin_reason: reason })
    .where('id', '=', nodeId)
    .where('admin_state', '=', 'active')
    .returning('id')
    .execute();
  return cordoned.length > 0;
}

/**
 * Suspend the node (abandoned leases): cordoned with `reason`, whatever its admin state (an operator may
 * uncordon it). Returns false when it was already suspended for that reason (no second event).
 */
export async function suspendNodeIn(trx: Kysely<Database>, nodeId: string, reason: string): Promise<boolean> {
  const row = await trx.selectFrom('nodes').select(['admin_state', 'admin_reason']).where('id', '=', nodeId).executeTakeFirst();
  if (!row || (row.admin_state === 'cordoned' && row.admin_reason === reason)) return false;
  await trx.updateTable('nodes').set({ admin_state: 'cordoned', admin_reason: reason }).where('id', '=', nodeId).execute();
  return true;
}

/** Nodes that just went offline: one outage each on their record. */
export async function recordOutages(trx: Kysely<Database>, ctx: StoreContext, nodeIds: readonly string[], now: number): Promise<void> {
  for (const id of nodeIds) {
    const { stats } = applyOutcome(await readNodeStatsIn(trx, id, now), { kind: 'outage' }, now, ctx.policy);
    await writeNodeStatsIn(trx, id, stats, now);
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
