/** Node verbs: register, read, list, heartbeat (lease renewal), admin state, staleness. */
import { GpuxError, type NodeRecord, type Page } from '@gpux/core';
import type { NodeAdminState, NodeAdvertisement, NodeStatus } from '@gpux/protocol';
import { inTx, type StoreContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { insertEvents } from './events.js';
import { recordOutages } from './node-stats.js';
import { nodeFromRow } from './rows.js';

/**
 * A node's provider is bound once: a registration with providerId claims an unowned node; the same provider
 * or no providerId keeps the owner; another provider is FORBIDDEN (and nothing is written).
 */
export function registerNode(
  ctx: StoreContext,
  node: { id: string; publicKey: string; advertisement: NodeAdvertisement; now: number; providerId?: string },
): Promise<NodeRecord> {
  return inTx(ctx, async (trx) => {
    const before = await trx
      .selectFrom('nodes')
      .select(['status', 'provider_id'])
      .where('id', '=', node.id)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    const providerId = node.providerId ?? null;
    const owner = before?.provider_id ?? null;
    if (providerId !== null && owner !== null && owner !== providerId) throw new GpuxError('FORBIDDEN', `node ${node.id} belongs to another provider`);
    const fresh = {
      public_key: node.publicKey,
      advertisement: JSON.stringify(node.advertisement),
      status: 'online',
      simulated: node.advertisement.simulated ? 1 : 0,
      last_heartbeat_at: node.now,
    };
    // Upsert: a re-register keeps id, registeredAt and adminState; the advertisement is replaced.
    const row = await trx
      .insertInto('nodes')
      .values({ id: node.id, admin_state: 'active', registered_at: node.now, provider_id: providerId, ...fresh })
      // An owner is never replaced: coalesce keeps it even if a concurrent registration bound one first.
      .onConflict((oc) => oc.column('id').doUpdateSet((eb) => ({ ...fresh, provider_id: eb.fn.coalesce('nodes.provider_id', eb.ref('excluded.provider_id')) })))
      .returningAll()
      .executeTakeFirstOrThrow();
    if (providerId !== null && row.provider_id !== providerId) throw new GpuxError('FORBIDDEN', `node ${node.id} belongs to another provider`);
    const adv = node.advertisement;
    await insertEvents(trx, ctx, [
      {
        at: node.now,
        subject: 'node',
        subjectId: node.id,
        type: 'node.registered',
        data: { hostname: adv.hostname, gpus: adv.gpus.length, reregistered: before !== undefined, previousStatus: before?.status ?? null },
      },
    ]);
    return nodeFromRow(row);
  });
}

export async function getNode(ctx: StoreContext, id: string): Promise<NodeRecord | undefined> {
  const row = await ctx.db.selectFrom('nodes').selectAll().where('id', '=', id).executeTakeFirst();
  return row && nodeFromRow(row);
}

/** Ordered by id, keyset-paginated. */
export async function listNodes(ctx: StoreContext, q: { status?: NodeStatus; limit: number; cursor?: string }): Promise<Page<NodeRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('nodes').selectAll();
  if (q.status !== undefined) qb = qb.where('status', '=', q.status);
  if (q.cursor) {
    const [after] = decodeCursor(q.cursor, ['string'] as const);
    qb = qb.where('id', '>', after);
  }
  const rows = await qb
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit).map(nodeFromRow);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.id]) : null };
}

export function heartbeat(ctx: StoreContext, nodeId: string, now: number, leaseExpiresAt: number): Promise<{ cancelAttemptIds: string[] }> {
  return inTx(ctx, async (trx) => {
    const node = await trx
      .selectFrom('nodes')
      .select('status')
      .where('id', '=', nodeId)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!node) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
    await trx.updateTable('nodes').set({ status: 'online', last_heartbeat_at: now }).where('id', '=', nodeId).execute();
    if (node.status !== 'online') {
      await insertEvents(trx, ctx, [{ at: now, subject: 'node', subjectId: nodeId, type: 'node.online', data: { previousStatus: node.status } }]);
    }
    await trx
      .updateTable('attempts')
      .set({ lease_expires_at: leaseExpiresAt })
      .where('node_id', '=', nodeId)
      .where('state', 'in', ['assigned', 'running'])
      .execute();
    const cancel = await trx
      .selectFrom('attempts')
      .innerJoin('jobs', 'jobs.id', 'attempts.job_id')
      .select('attempts.id')
      .where('attempts.node_id', '=', nodeId)
      .where('attempts.state', 'in', ['assigned', 'running'])
      .where('jobs.cancel_requested', '=', 1)
      .orderBy('attempts.id')
      .execute();
    return { cancelAttemptIds: cancel.map((r) => r.id) };
  }, { durable: false }); // lease renewals: a restart extends leases anyway
}

const ADMIN_EVENT: Record<NodeAdminState, string> = { active: 'node.uncordoned', cordoned: 'node.cordoned', draining: 'node.draining' };

export function setNodeAdminState(ctx: StoreContext, nodeId: string, state: NodeAdminState, now: number): Promise<NodeRecord> {
  return inTx(ctx, async (trx) => {
    const row = await trx
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', nodeId)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
    if (row.admin_state === state) return nodeFromRow(row); // unchanged: no event
    // An operator's decision replaces the coordinator's reason for an auto-cordon.
    const updated = await trx.updateTable('nodes').set({ admin_state: state, admin_reason: null }).where('id', '=', nodeId).returningAll().executeTakeFirstOrThrow();
    await insertEvents(trx, ctx, [{ at: now, subject: 'node', subjectId: nodeId, type: ADMIN_EVENT[state], data: { from: row.admin_state, to: state } }]);
    return nodeFromRow(updated);
  });
}

export function markStaleNodesOffline(ctx: StoreContext, cutoff: number, now: number): Promise<string[]> {
  return inTx(ctx, async (trx) => {
    const rows = await trx
      .updateTable('nodes')
      .set({ status: 'offline' })
      .where('status', '=', 'online')
      .where('last_heartbeat_at', '<', cutoff)
      .returning(['id', 'last_heartbeat_at'])
      .execute();
    rows.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    await insertEvents(
      trx,
      ctx,
      rows.map((r) => ({ at: now, subject: 'node' as const, subjectId: r.id, type: 'node.offline', data: { lastHeartbeatAt: Number(r.last_heartbeat_at) } })),
    );
    await recordOutages(
      trx,
      ctx,
      rows.map((r) => r.id),
      now,
    );
    return rows.map((r) => r.id);
  });
}
