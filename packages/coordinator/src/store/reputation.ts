/**
 * Node reputations (issue 11), kept inside the transactions of the outcomes that change them (attempt end,
 * audit and canary verdicts), so a reputation and its cause commit together. The model is the core's
 * (trust/reputation.ts); this file reads and writes node_reputation rows (0011).
 */
import {
  applyReputationEvent,
  DEFAULT_REPUTATION_HALF_LIFE_MS,
  emptyReputation,
  type ReputationEventKind,
  type ReputationRecord,
  type ReputationState,
} from '@gpux/core';
import type { Kysely, Selectable } from 'kysely';
import type { StoreContext } from './context.js';
import type { Database, NodeReputationTable } from './schema.js';

function stateFromRow(r: Selectable<NodeReputationTable>): ReputationState {
  return { good: Number(r.good), bad: Number(r.bad), asOf: Number(r.as_of) };
}

function recordFromRow(r: Selectable<NodeReputationTable> & { consecutive_passes: number | null }): ReputationRecord {
  return { nodeId: r.node_id, state: stateFromRow(r), auditsPassed: Number(r.consecutive_passes ?? 0), updatedAt: Number(r.updated_at) };
}

/** Reputation rows with the node's audit streak (node_audits, 0010), for readers. */
function selectRecords(ctx: StoreContext) {
  return ctx.db
    .selectFrom('node_reputation')
    .leftJoin('node_audits', 'node_audits.node_id', 'node_reputation.node_id')
    .selectAll('node_reputation')
    .select('node_audits.consecutive_passes');
}

async function selectForUpdate(trx: Kysely<Database>, ctx: StoreContext, nodeId: string) {
  return trx
    .selectFrom('node_reputation')
    .selectAll()
    .where('node_id', '=', nodeId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/** updated_at never goes back (an out-of-order event is older than the row), so `>= since` readers see every change. */
async function updateRow(trx: Kysely<Database>, row: Selectable<NodeReputationTable>, s: ReputationState, at: number): Promise<void> {
  await trx
    .updateTable('node_reputation')
    .set({ good: s.good, bad: s.bad, as_of: s.asOf, updated_at: Math.max(Number(row.updated_at), at) })
    .where('node_id', '=', row.node_id)
    .execute();
}

/**
 * Apply one outcome to the node's reputation inside `trx` (creating the row at its first outcome). The row is
 * read FOR UPDATE on PostgreSQL so two transactions never lose each other's event; a node row is the last
 * in the lock order (job, attempts, nodes), so call this after those. `at` is the outcome's time; the row's
 * updated_at moves to it (never back), for listReputations' incremental readers.
 */
export async function applyReputationIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  nodeId: string,
  kind: ReputationEventKind,
  at: number,
  halfLifeMs = DEFAULT_REPUTATION_HALF_LIFE_MS,
): Promise<void> {
  await applyReputationToRowIn(trx, ctx, { nodeId, kind, at, halfLifeMs }, await selectForUpdate(trx, ctx, nodeId));
}

/**
 * applyReputationIn over the node's row (null: none yet) as this transaction already read it, locked on PostgreSQL
 * (SQLite's write transaction is exclusive: a row read earlier in it is still the row).
 */
export async function applyReputationToRowIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  e: { nodeId: string; kind: ReputationEventKind; at: number; halfLifeMs?: number },
  row: Selectable<NodeReputationTable> | null | undefined,
): Promise<void> {
  const { nodeId, kind, at } = e;
  const halfLifeMs = e.halfLifeMs ?? DEFAULT_REPUTATION_HALF_LIFE_MS;
  if (row) return updateRow(trx, row, applyReputationEvent(stateFromRow(row), kind, at, halfLifeMs), at);
  const first = applyReputationEvent(emptyReputation(at), kind, at, halfLifeMs);
  const inserted = await trx
    .insertInto('node_reputation')
    .values({ node_id: nodeId, good: first.good, bad: first.bad, as_of: first.asOf, updated_at: at })
    .onConflict((oc) => oc.column('node_id').doNothing())
    .returning('node_id')
    .execute();
  if (inserted.length > 0) return;
  // Another transaction created the row between our read and insert (PostgreSQL only): apply to its row.
  const raced = await selectForUpdate(trx, ctx, nodeId);
  if (!raced) throw new Error(`invariant: node_reputation row of ${nodeId} vanished after a conflicting insert`);
  await updateRow(trx, raced, applyReputationEvent(stateFromRow(raced), kind, at, halfLifeMs), at);
}

export async function getReputation(ctx: StoreContext, nodeId: string): Promise<ReputationRecord | undefined> {
  const row = await selectRecords(ctx).where('node_reputation.node_id', '=', nodeId).executeTakeFirst();
  return row ? recordFromRow(row) : undefined;
}

/** Bound on ids per statement; a list page is far smaller, this only keeps a huge caller under the parameter limit. */
const IDS_PER_QUERY = 1000;

export async function getReputations(ctx: StoreContext, nodeIds: readonly string[]): Promise<ReputationRecord[]> {
  const ids = [...new Set(nodeIds)];
  const out: ReputationRecord[] = [];
  for (let i = 0; i < ids.length; i += IDS_PER_QUERY) {
    const rows = await selectRecords(ctx)
      .where('node_reputation.node_id', 'in', ids.slice(i, i + IDS_PER_QUERY))
      .execute();
    for (const r of rows) out.push(recordFromRow(r));
  }
  return out;
}

export async function listReputations(ctx: StoreContext, since: number): Promise<ReputationRecord[]> {
  const rows = await selectRecords(ctx)
    .where('node_reputation.updated_at', '>=', since)
    .orderBy('node_reputation.updated_at')
    .orderBy('node_reputation.node_id')
    .execute();
  return rows.map(recordFromRow);
}
