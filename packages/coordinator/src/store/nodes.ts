/** Node verbs: register, read, list, heartbeat (lease renewal), admin state, trust tier, staleness. */
import { type AttemptRecord, GpuxError, type NodeRecord, type Page, type RegisterNodeInput } from '@gpux/core';
import { type Kysely, type Selectable, sql } from 'kysely';
import type { NodeAdminState, NodeStatus } from '@gpux/protocol';
import { deadlinesOf, inTx, relaxedStatements, type StoreContext } from './context.js';
import { afterId, pageById } from './cursor.js';
import { insertEvents } from './events.js';
import { recordOutages } from './node-stats.js';
import { attemptFromRow, nodeFromRow } from './rows.js';
import type { Database, EnrollmentsTable } from './schema.js';

/**
 * A node's provider is bound once: a registration with providerId claims an unowned node; the same provider
 * or no providerId keeps the owner; another provider is FORBIDDEN (and nothing is written). With an
 * enrollment, its row is locked and checked here, so a revocation or a node limit cannot be raced.
 */
export function registerNode(ctx: StoreContext, node: RegisterNodeInput): Promise<NodeRecord> {
  return inTx(ctx, async (trx) => {
    // Lock order: the enrollment, then the node (revokeEnrollment takes them in this order too).
    const enrollmentRow = node.enrollment
      ? await trx
          .selectFrom('enrollments')
          .selectAll()
          .where('id', '=', node.enrollment.id)
          .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
          .executeTakeFirst()
      : undefined;
    const before = await trx
      .selectFrom('nodes')
      .select(['status', 'provider_id', 'enrollment_id', 'removed_at', 'banned_at', 'banned_reason'])
      .where('id', '=', node.id)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    // A banned node (equivocation, issue 11) is removed for good: no enrollment brings it back.
    if (before?.banned_at !== null && before?.banned_at !== undefined) {
      throw new GpuxError('FORBIDDEN', `node ${node.id} is banned (${before.banned_reason ?? 'banned'}): it signed two different result commitments for one attempt; see gpux node penalties ${node.id}`);
    }
    const providerId = node.providerId ?? null;
    const owner = before?.provider_id ?? null;
    if (providerId !== null && owner !== null && owner !== providerId) throw new GpuxError('FORBIDDEN', `node ${node.id} belongs to another provider`);
    if (node.enrollment) {
      await checkEnrollment(trx, node, enrollmentRow, before);
      if (providerId !== null) await refuseForeignGpus(trx, node, providerId);
    }
    const fresh = {
      public_key: node.publicKey,
      advertisement: JSON.stringify(node.advertisement),
      status: 'online',
      simulated: node.advertisement.simulated ? 1 : 0,
      last_heartbeat_at: node.now,
      ...(node.enrollment ? { enrollment_id: node.enrollment.id, removed_at: null } : {}),
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
    await trx.deleteFrom('node_gpus').where('node_id', '=', node.id).execute();
    const uuids = [...new Set(node.advertisement.gpus.map((g) => g.uuid))];
    if (uuids.length > 0) await trx.insertInto('node_gpus').values(uuids.map((uuid) => ({ node_id: node.id, uuid }))).execute();
    const adv = node.advertisement;
    await insertEvents(trx, ctx, [
      {
        at: node.now,
        subject: 'node',
        subjectId: node.id,
        type: 'node.registered',
        data: {
          hostname: adv.hostname,
          gpus: adv.gpus.length,
          reregistered: before !== undefined,
          previousStatus: before?.status ?? null,
          ...(node.enrollment ? { enrollmentId: node.enrollment.id } : {}),
        },
      },
    ]);
    return nodeFromRow(row);
  });
}

type NodeBefore = { provider_id: string | null; enrollment_id: string | null; removed_at: number | null } | undefined;

/**
 * A revoked or expired enrollment still re-registers a live node that registered with it (existing nodes
 * keep working), never a new one or a removed one. A new node counts against the enrollment's maxNodes and
 * the provider's cap.
 */
async function checkEnrollment(trx: Kysely<Database>, node: RegisterNodeInput, e: Selectable<EnrollmentsTable> | undefined, before: NodeBefore): Promise<void> {
  const en = node.enrollment;
  if (!en) return;
  if (!e) throw new GpuxError('UNAUTHORIZED', 'unknown enrollment token: create one with `gpux enrollment create`');
  const ownLive = before !== undefined && before.enrollment_id === e.id && before.removed_at === null;
  if (!ownLive) {
    if (e.revoked_at !== null) throw new GpuxError('UNAUTHORIZED', `enrollment ${e.id} was revoked at ${new Date(Number(e.revoked_at)).toISOString()}: create a new one with \`gpux enrollment create\``);
    if (e.expires_at !== null && Number(e.expires_at) <= node.now) {
      throw new GpuxError('UNAUTHORIZED', `enrollment ${e.id} expired at ${new Date(Number(e.expires_at)).toISOString()}: create a new one with \`gpux enrollment create\``);
    }
  }
  // Limits count live nodes; a node already counted (live under this provider) re-registers freely.
  const counted = before !== undefined && before.removed_at === null && before.provider_id === e.account_id;
  if (counted) return;
  if (e.max_nodes !== null) {
    const n = await trx
      .selectFrom('nodes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('enrollment_id', '=', e.id)
      .where('removed_at', 'is', null)
      .executeTakeFirstOrThrow();
    if (Number(n.n) >= Number(e.max_nodes)) {
      throw new GpuxError('LIMIT_EXCEEDED', `enrollment ${e.id} allows at most ${e.max_nodes} nodes and has ${n.n}: register more with another enrollment (gpux enrollment create --max-nodes N)`);
    }
  }
  const p = await trx
    .selectFrom('nodes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('provider_id', '=', e.account_id)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  if (Number(p.n) >= en.maxProviderNodes) {
    throw new GpuxError('LIMIT_EXCEEDED', `provider ${e.account_id} has ${p.n} nodes, the most one provider may register (${en.maxProviderNodes}; GPUX_MAX_NODES_PER_PROVIDER): remove nodes you no longer run (gpux enrollment revoke ID --remove-nodes) or ask the operator to raise the limit`);
  }
}

/** A GPU is one physical device: a uuid that a live node of another provider advertises is refused. */
async function refuseForeignGpus(trx: Kysely<Database>, node: RegisterNodeInput, providerId: string): Promise<void> {
  const uuids = [...new Set(node.advertisement.gpus.map((g) => g.uuid))];
  if (uuids.length === 0) return;
  const held = await trx
    .selectFrom('node_gpus')
    .innerJoin('nodes', 'nodes.id', 'node_gpus.node_id')
    .select(['node_gpus.uuid', 'nodes.id'])
    .where('node_gpus.uuid', 'in', uuids)
    .where('nodes.id', '!=', node.id)
    .where('nodes.removed_at', 'is', null)
    .where((eb) => eb.or([eb('nodes.provider_id', 'is', null), eb('nodes.provider_id', '!=', providerId)]))
    .orderBy('node_gpus.uuid')
    .limit(1)
    .executeTakeFirst();
  if (held) {
    const i = node.advertisement.gpus.findIndex((g) => g.uuid === held.uuid);
    throw new GpuxError('CONFLICT', `GPU uuid ${held.uuid} is already advertised by node ${held.id} of another provider; a GPU can be registered once`, {
      problems: [{ path: `advertisement.gpus.${i}.uuid`, message: `held by node ${held.id} of another provider` }],
    });
  }
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
  const after = afterId(q.cursor);
  if (after !== undefined) qb = qb.where('id', '>', after);
  const rows = await qb
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  return pageById(rows, limit, nodeFromRow);
}

/**
 * The common heartbeat (an online node, not removed) is three statements and no transaction on PostgreSQL: the
 * node's time, its leases renewed (returning its active attempts, so the caller reads them no more), and, only when
 * it has any, their cancel requests. A node coming back online takes the locked path (its event, the removal check).
 * Relaxed commits: a crash loses at most the latest renewals, and a restart extends every lease anyway.
 */
export async function heartbeat(ctx: StoreContext, nodeId: string, now: number, leaseExpiresAt: number): Promise<{ cancelAttemptIds: string[]; active: AttemptRecord[] }> {
  return relaxedStatements(ctx, async (db) => {
    const online = await db.updateTable('nodes').set({ last_heartbeat_at: now }).where('id', '=', nodeId).where('status', '=', 'online').where('removed_at', 'is', null).executeTakeFirst();
    if (Number(online.numUpdatedRows) === 0) await comeOnline(ctx, db, nodeId, now);
    // An attempt whose job's cancel was requested is never leased past its stop_by (cancel + grace), nor
    // any attempt past its deadline (core attempt-end/deadline.ts; an assigned one's is pinned here, at
    // creation + the start grace), so it ends then even if the node keeps heartbeating and never stops or
    // finishes it. A lease already past the deadline (a restart's extension) is kept, never shortened.
    const deadline = sql<number | null>`coalesce(deadline_at, case when started_at is null then created_at + ${deadlinesOf(ctx).startGraceMs} end)`;
    const rows = await db
      .updateTable('attempts')
      .set({
        deadline_at: deadline,
        lease_expires_at: sql<number>`case
          when stop_by is not null and stop_by < ${leaseExpiresAt} then stop_by
          when ${deadline} < ${leaseExpiresAt} then (case when lease_expires_at > ${deadline} then lease_expires_at else ${deadline} end)
          else ${leaseExpiresAt} end`,
      })
      .where('node_id', '=', nodeId)
      .where('state', 'in', ['assigned', 'running'])
      // PostgreSQL: the rows are locked in id order, the order a group of this node's starts takes them (services
      // work.ts), so a heartbeat never deadlocks with one (in scan order it did, under load: a second lost each time).
      .$if(ctx.q.forUpdate, (qb) => qb.where('id', 'in', (eb) => eb.selectFrom('attempts').select('id').where('node_id', '=', nodeId).where('state', 'in', ['assigned', 'running']).orderBy(sql`id collate "C"`).forUpdate()))
      .returningAll()
      .execute();
    const active = rows.map(attemptFromRow).sort((x, y) => x.createdAt - y.createdAt || (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
    if (active.length === 0) return { cancelAttemptIds: [], active };
    const cancel = await db
      .selectFrom('jobs')
      .select('id')
      .where('id', 'in', [...new Set(active.map((x) => x.jobId))])
      .where('cancel_requested', '=', 1)
      .execute();
    const cancelled = new Set(cancel.map((r) => r.id));
    return { cancelAttemptIds: active.filter((x) => cancelled.has(x.jobId)).map((x) => x.id).sort(), active };
  });
}

/** An offline node's heartbeat: online again, with its event; refused for a removed node (a heartbeat authenticated just before a ban). */
function comeOnline(ctx: StoreContext, db: Kysely<Database>, nodeId: string, now: number): Promise<void> {
  // Off a transaction (PostgreSQL's relaxed connections) it takes one of its own; inside one (SQLite), it runs there.
  const inOwnTx = (fn: (trx: Kysely<Database>) => Promise<void>) => (db === ctx.relaxedDb ? inTx(ctx, fn, { durable: false }) : fn(db));
  return inOwnTx(async (trx) => {
    const node = await trx
      .selectFrom('nodes')
      .select(['status', 'removed_at'])
      .where('id', '=', nodeId)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!node) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
    if (node.removed_at !== null) throw new GpuxError('UNAUTHORIZED', `node ${nodeId} was removed at ${new Date(Number(node.removed_at)).toISOString()}: register it again with a valid enrollment token`);
    await trx.updateTable('nodes').set({ status: 'online', last_heartbeat_at: now }).where('id', '=', nodeId).execute();
    if (node.status !== 'online') await insertEvents(trx, ctx, [{ at: now, subject: 'node', subjectId: nodeId, type: 'node.online', data: { previousStatus: node.status } }]);
  });
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

/** The trust tier; who may set which tier is the caller's check (core trust/attestation.ts tierChangeRefusal). */
export function setNodeTier(
  ctx: StoreContext,
  nodeId: string,
  tier: 'open' | 'attested' | 'curated',
  now: number,
  by: { source: 'operator' | 'attestation'; reason?: string | null },
): Promise<NodeRecord> {
  return inTx(ctx, async (trx) => {
    const row = await trx
      .selectFrom('nodes')
      .selectAll()
      .where('id', '=', nodeId)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
    const from = row.tier ?? 'open';
    if (from === tier) return nodeFromRow(row); // unchanged: no event
    const updated = await trx.updateTable('nodes').set({ tier }).where('id', '=', nodeId).returningAll().executeTakeFirstOrThrow();
    await insertEvents(trx, ctx, [{ at: now, subject: 'node', subjectId: nodeId, type: 'node.tier_set', data: { from, to: tier, by: by.source, reason: by.reason ?? null } }]);
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
