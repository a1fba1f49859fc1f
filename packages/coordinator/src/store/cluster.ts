/**
 * The replicas' shared state (issue 14): the leader lease and its fencing epoch, and the signature nonces.
 * A lease changes holder only when it expired, and its epoch grows by one then; a renewal must name the epoch
 * it holds, so a leader that lost the lease (paused, partitioned) can never renew its way back in.
 */
import type { LeaseGrant } from '@gpux/core';
import { sql } from 'kysely';
import { chunks, inTx, relaxedStatements, type StoreContext } from './context.js';

type LeaseRow = { name: string; holder: string; epoch: number; expires_at: number };
const grantOf = (r: LeaseRow): LeaseGrant => ({ name: r.name, holder: r.holder, epoch: Number(r.epoch), expiresAt: Number(r.expires_at) });

export function acquireLease(ctx: StoreContext, name: string, holder: string, now: number, ttlMs: number, epoch?: number): Promise<LeaseGrant | null> {
  return inTx(ctx, async (trx) => {
    const q = trx.selectFrom('coordinator_leases').selectAll().where('name', '=', name);
    const cur = await (ctx.q.forUpdate ? q.forUpdate() : q).executeTakeFirst();
    const expiresAt = now + ttlMs;
    if (!cur) {
      if (epoch !== undefined) return null; // a renewal of a lease that no longer exists
      await trx.insertInto('coordinator_leases').values({ name, holder, epoch: 1, expires_at: expiresAt }).execute();
      return { name, holder, epoch: 1, expiresAt };
    }
    const ours = cur.holder === holder && Number(cur.epoch) === epoch;
    if (!ours && (epoch !== undefined || Number(cur.expires_at) > now)) return null;
    const next = ours ? Number(cur.epoch) : Number(cur.epoch) + 1;
    await trx.updateTable('coordinator_leases').set({ holder, epoch: next, expires_at: expiresAt }).where('name', '=', name).execute();
    return { name, holder, epoch: next, expiresAt };
  });
}

export async function releaseLease(ctx: StoreContext, name: string, holder: string, epoch: number): Promise<void> {
  // Expired now, same epoch: the next taker bumps it, so this holder's late writes stay fenced out.
  await ctx.db.updateTable('coordinator_leases').set({ expires_at: 0 }).where('name', '=', name).where('holder', '=', holder).where('epoch', '=', epoch).execute();
}

export async function getLease(ctx: StoreContext, name: string): Promise<LeaseGrant | null> {
  const r = await ctx.db.selectFrom('coordinator_leases').selectAll().where('name', '=', name).executeTakeFirst();
  return r ? grantOf(r) : null;
}

export async function claimNonces(ctx: StoreContext, items: readonly { nodeId: string; nonce: string; expiresAt: number }[]): Promise<boolean[]> {
  if (items.length === 0) return [];
  // No durable commit: see migration 0019 for why a lost nonce is harmless.
  const claimed = await relaxedStatements(ctx, async (trx) => {
    const out = new Set<string>();
    for (const part of chunks(items, 3, ctx.q)) {
      const rows = await trx
        .insertInto('node_nonces')
        .values(part.map((i) => ({ node_id: i.nodeId, nonce: i.nonce, expires_at: i.expiresAt })))
        .onConflict((oc) => oc.doNothing())
        .returning(['node_id', 'nonce'])
        .execute();
      for (const r of rows) out.add(`${r.node_id}\n${r.nonce}`);
    }
    return out;
  });
  return items.map((i) => claimed.has(`${i.nodeId}\n${i.nonce}`));
}

export async function pruneNonces(ctx: StoreContext, now: number, limit: number): Promise<number> {
  const res = await ctx.db
    .deleteFrom('node_nonces')
    .where(({ eb, selectFrom }) =>
      eb(sql.raw('(node_id, nonce)'), 'in', selectFrom('node_nonces').select(['node_id', 'nonce']).where('expires_at', '<', now).limit(limit)),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}
