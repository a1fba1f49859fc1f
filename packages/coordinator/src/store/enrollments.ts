/**
 * Node enrollment tokens (issue 10 item 2): create, find by hash, list with their node counts, revoke
 * (optionally removing the nodes that registered with one).
 */
import { type EnrollmentRecord, GpuxError, type Page } from '@gpux/core';
import type { Selectable } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { afterId, pageById } from './cursor.js';
import { insertEvents } from './events.js';
import type { EnrollmentsTable } from './schema.js';
import { isUniqueViolation } from './tokens.js';

const num = (v: number | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));

export function enrollmentFromRow(r: Selectable<EnrollmentsTable>): EnrollmentRecord {
  return {
    id: r.id,
    hash: r.hash,
    accountId: r.account_id,
    name: r.name,
    createdAt: Number(r.created_at),
    expiresAt: num(r.expires_at),
    revokedAt: num(r.revoked_at),
    maxNodes: num(r.max_nodes),
  };
}

export async function createEnrollment(ctx: StoreContext, e: EnrollmentRecord): Promise<void> {
  try {
    await ctx.db
      .insertInto('enrollments')
      .values({
        id: e.id,
        hash: e.hash,
        account_id: e.accountId,
        name: e.name,
        created_at: e.createdAt,
        expires_at: e.expiresAt,
        revoked_at: e.revokedAt,
        max_nodes: e.maxNodes,
      })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new GpuxError('CONFLICT', `an enrollment with id ${e.id} or the same hash already exists`, { cause: err });
    throw err;
  }
}

export async function findEnrollmentByHash(ctx: StoreContext, hash: string): Promise<EnrollmentRecord | undefined> {
  const row = await ctx.db.selectFrom('enrollments').selectAll().where('hash', '=', hash).executeTakeFirst();
  return row && enrollmentFromRow(row);
}

export async function getEnrollment(ctx: StoreContext, id: string): Promise<EnrollmentRecord | undefined> {
  const row = await ctx.db.selectFrom('enrollments').selectAll().where('id', '=', id).executeTakeFirst();
  return row && enrollmentFromRow(row);
}

export async function listEnrollments(
  ctx: StoreContext,
  q: { accountId?: string; limit: number; cursor?: string },
): Promise<Page<EnrollmentRecord & { nodes: number }>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('enrollments').selectAll();
  if (q.accountId !== undefined) qb = qb.where('account_id', '=', q.accountId);
  const after = afterId(q.cursor);
  if (after !== undefined) qb = qb.where('id', '>', after);
  const rows = await qb
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  const { items: page, nextCursor } = pageById(rows, limit, enrollmentFromRow);
  const counts = new Map<string, number>();
  if (page.length > 0) {
    const c = await ctx.db
      .selectFrom('nodes')
      .select(['enrollment_id', (eb) => eb.fn.countAll<number>().as('n')])
      .where(
        'enrollment_id',
        'in',
        page.map((e) => e.id),
      )
      .where('removed_at', 'is', null)
      .groupBy('enrollment_id')
      .execute();
    for (const r of c) if (r.enrollment_id !== null) counts.set(r.enrollment_id, Number(r.n));
  }
  return { items: page.map((e) => ({ ...e, nodes: counts.get(e.id) ?? 0 })), nextCursor };
}

export function revokeEnrollment(
  ctx: StoreContext,
  id: string,
  now: number,
  removeNodes: boolean,
): Promise<{ enrollment: EnrollmentRecord; removedNodeIds: string[]; lostAttempts: number; nodes: number } | undefined> {
  return inTx(ctx, async (trx) => {
    const row = await trx
      .selectFrom('enrollments')
      .selectAll()
      .where('id', '=', id)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) return undefined;
    if (row.revoked_at === null) await trx.updateTable('enrollments').set({ revoked_at: now }).where('id', '=', id).execute();
    let removedNodeIds: string[] = [];
    let lostAttempts = 0;
    if (removeNodes) {
      const nodes = await trx.selectFrom('nodes').select('id').where('enrollment_id', '=', id).where('removed_at', 'is', null).orderBy('id').execute();
      removedNodeIds = nodes.map((n) => n.id);
      if (removedNodeIds.length > 0) {
        // Nodes first, then their attempts: the lock order of heartbeat and registerNode.
        await trx.updateTable('nodes').set({ removed_at: now, status: 'offline' }).where('enrollment_id', '=', id).where('removed_at', 'is', null).execute();
        // Their leases end now: the node can no longer renew them, and expireLeases ends them as lost (the caller's
        // pass or the periodic one, whichever comes first: counted here).
        const ended = await trx
          .updateTable('attempts')
          .set({ lease_expires_at: now - 1 })
          .where('node_id', 'in', trx.selectFrom('nodes').select('id').where('enrollment_id', '=', id).where('removed_at', '=', now))
          .where('state', 'in', ['assigned', 'running'])
          .executeTakeFirst();
        lostAttempts = Number(ended.numUpdatedRows);
        await insertEvents(
          trx,
          ctx,
          removedNodeIds.map((nodeId) => ({ at: now, subject: 'node' as const, subjectId: nodeId, type: 'node.removed', data: { enrollmentId: id, reason: 'enrollment revoked' } })),
        );
      }
    }
    const after = await trx.selectFrom('enrollments').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
    const live = await trx
      .selectFrom('nodes')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('enrollment_id', '=', id)
      .where('removed_at', 'is', null)
      .executeTakeFirstOrThrow();
    return { enrollment: enrollmentFromRow(after), removedNodeIds, lostAttempts, nodes: Number(live.n) };
  });
}

export async function countProviderNodes(ctx: StoreContext, providerId: string): Promise<number> {
  const row = await ctx.db
    .selectFrom('nodes')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('provider_id', '=', providerId)
    .where('removed_at', 'is', null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function countLiveEnrollments(ctx: StoreContext, accountId: string, now: number): Promise<number> {
  const row = await ctx.db
    .selectFrom('enrollments')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('account_id', '=', accountId)
    .where('revoked_at', 'is', null)
    .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', now)]))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
