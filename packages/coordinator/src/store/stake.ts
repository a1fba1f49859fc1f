/**
 * Node stake, always USDC: bond (wallet → stake:<node>), unbond with a delay (stake → unbonding:<node>,
 * a row in unbondings), release when due (unbonding → wallet), slash (stake → others by the trust
 * rules). Locked stake is not a ledger account: it is the sum of price_stake_lock over the node's active
 * attempts, so only staked − locked may unbond.
 */
import { ACCOUNTS, amountFromDb, GpuxError, move, type StakeRecord, type TransferRecord, type UnbondingRecord } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import type { Database } from './schema.js';

const STAKE_ASSET: Asset = 'usdc';
const ACTIVE = ['assigned', 'running'];
const usdc = (n: number) => formatAmount(n, STAKE_ASSET);

/** The node's provider; NODE_NOT_FOUND when there is no such node. */
async function nodeProvider(db: Kysely<Database>, nodeId: string): Promise<string | null> {
  const row = await db.selectFrom('nodes').select('provider_id').where('id', '=', nodeId).executeTakeFirst();
  if (!row) throw new GpuxError('NODE_NOT_FOUND', `node ${nodeId} not found`);
  return row.provider_id;
}

/** FORBIDDEN unless the node is providerId's. */
async function assertOwner(db: Kysely<Database>, nodeId: string, providerId: string): Promise<void> {
  const owner = await nodeProvider(db, nodeId);
  if (owner === null) throw new GpuxError('FORBIDDEN', `node ${nodeId} has no provider: register it with an enrollment token (gpux node start --enrollment-token)`);
  if (owner !== providerId) throw new GpuxError('FORBIDDEN', `node ${nodeId} belongs to another provider`);
}

/** Sum of the stake locks of the node's active attempts (a null lock counts 0). */
async function lockedOf(db: Kysely<Database>, nodeId: string): Promise<number> {
  const row = await db
    .selectFrom('attempts')
    .select((eb) => eb.fn.sum<number | string | null>('price_stake_lock').as('locked'))
    .where('node_id', '=', nodeId)
    .where('state', 'in', ACTIVE)
    .executeTakeFirst();
  return amountFromDb(row?.locked, `locked stake of ${nodeId}`);
}

async function stakeIn(db: Kysely<Database>, ctx: StoreContext, nodeId: string): Promise<StakeRecord> {
  const providerId = await nodeProvider(db, nodeId);
  const staked = await balanceIn(db, ctx, ACCOUNTS.stake(nodeId), STAKE_ASSET);
  const locked = await lockedOf(db, nodeId);
  const rows = await db
    .selectFrom('unbondings')
    .selectAll()
    .where('node_id', '=', nodeId)
    .where('released_at', 'is', null)
    .orderBy('release_at')
    .orderBy('id')
    .execute();
  const unbonding = rows.map(
    (r): UnbondingRecord => ({ id: r.id, nodeId: r.node_id, providerId: r.provider_id, amount: Number(r.amount), releaseAt: Number(r.release_at) }),
  );
  return { nodeId, providerId, asset: STAKE_ASSET, staked, locked, unbonding };
}

function assertPositive(amount: number, what: string): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new GpuxError('REQUEST_INVALID', `${what} must be a positive amount, got ${amount}`);
}

export function getStake(ctx: StoreContext, nodeId: string): Promise<StakeRecord> {
  return stakeIn(ctx.db, ctx, nodeId);
}

/** Every node with a stake balance or an active lock, by node id. */
export async function listStakes(ctx: StoreContext): Promise<{ nodeId: string; staked: number; locked: number }[]> {
  const prefix = ACCOUNTS.stake('');
  const balances = await ctx.db
    .selectFrom('ledger_balances')
    .select(['account', 'balance'])
    .where('asset', '=', STAKE_ASSET)
    .where('account', 'like', `${prefix}%`)
    .where('balance', '<>', 0)
    .execute();
  const locks = await ctx.db
    .selectFrom('attempts')
    .select((eb) => ['node_id', eb.fn.sum<number | string>('price_stake_lock').as('locked')])
    .where('state', 'in', ACTIVE)
    .where('price_stake_lock', '>', 0)
    .groupBy('node_id')
    .execute();
  const out = new Map<string, { nodeId: string; staked: number; locked: number }>();
  const entry = (nodeId: string) => {
    const e = out.get(nodeId) ?? { nodeId, staked: 0, locked: 0 };
    out.set(nodeId, e);
    return e;
  };
  for (const b of balances) entry(b.account.slice(prefix.length)).staked = Number(b.balance);
  for (const l of locks) entry(l.node_id).locked = amountFromDb(l.locked, `locked stake of ${l.node_id}`);
  return [...out.values()].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0));
}

export async function addStake(ctx: StoreContext, q: { nodeId: string; providerId: string; amount: number; now: number }): Promise<StakeRecord> {
  assertPositive(q.amount, 'a stake deposit');
  return inTx(ctx, async (trx) => {
    await assertOwner(trx, q.nodeId, q.providerId);
    await postTransferIn(trx, {
      kind: 'stake.deposit',
      postings: move(STAKE_ASSET, ACCOUNTS.wallet(q.providerId), [{ account: ACCOUNTS.stake(q.nodeId), amount: q.amount }]),
      at: q.now,
      memo: `stake ${usdc(q.amount)} on node ${q.nodeId}`,
      nodeId: q.nodeId,
    });
    return stakeIn(trx, ctx, q.nodeId);
  });
}

export async function unbondStake(
  ctx: StoreContext,
  q: { id: string; nodeId: string; providerId: string; amount: number; releaseAt: number; now: number },
): Promise<StakeRecord> {
  assertPositive(q.amount, 'an unbonding');
  return inTx(ctx, async (trx) => {
    await assertOwner(trx, q.nodeId, q.providerId);
    // The balance row is locked first, so an assign that would lock more stake waits for this unbond.
    const staked = await balanceIn(trx, ctx, ACCOUNTS.stake(q.nodeId), STAKE_ASSET, true);
    const locked = await lockedOf(trx, q.nodeId);
    const free = Math.max(0, staked - locked);
    if (q.amount > free) {
      throw new GpuxError(
        'INSUFFICIENT_FUNDS',
        `node ${q.nodeId} has ${usdc(staked)} staked, ${usdc(locked)} locked by active attempts, ${usdc(free)} free: cannot unbond ${usdc(q.amount)}`,
      );
    }
    await postTransferIn(trx, {
      kind: 'stake.unbond',
      postings: move(STAKE_ASSET, ACCOUNTS.stake(q.nodeId), [{ account: ACCOUNTS.unbonding(q.nodeId), amount: q.amount }]),
      at: q.now,
      memo: `unbond ${usdc(q.amount)} from node ${q.nodeId}, released at ${new Date(q.releaseAt).toISOString()}`,
      nodeId: q.nodeId,
    });
    await trx
      .insertInto('unbondings')
      .values({ id: q.id, node_id: q.nodeId, provider_id: q.providerId, amount: q.amount, release_at: q.releaseAt, released_at: null })
      .execute();
    return stakeIn(trx, ctx, q.nodeId);
  });
}

/** Due unbondings, oldest release first, paid back in one transaction. */
export function releaseUnbonded(ctx: StoreContext, now: number, limit: number): Promise<number> {
  return inTx(ctx, async (trx) => {
    const due = await trx
      .selectFrom('unbondings')
      .selectAll()
      .where('released_at', 'is', null)
      .where('release_at', '<=', now)
      .orderBy('release_at')
      .orderBy('id')
      .limit(Math.max(1, Math.floor(limit)))
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .$if(ctx.q.skipLocked, (qb) => qb.skipLocked())
      .execute();
    for (const u of due) {
      const amount = Number(u.amount);
      await postTransferIn(trx, {
        kind: 'stake.release',
        postings: move(STAKE_ASSET, ACCOUNTS.unbonding(u.node_id), [{ account: ACCOUNTS.wallet(u.provider_id), amount }]),
        at: now,
        memo: `unbonded stake of node ${u.node_id} released (${u.id})`,
        nodeId: u.node_id,
      });
      await trx.updateTable('unbondings').set({ released_at: now }).where('id', '=', u.id).execute();
    }
    return due.length;
  });
}

/**
 * Pay the legs in order out of the node's stake until it runs out (the last paid leg is cut, the rest
 * dropped). A node with no stake still gets the (empty) transfer and the event, so the slash is on record.
 */
export function slash(
  ctx: StoreContext,
  q: { nodeId: string; to: { account: string; amount: number }[]; reason: string; jobId?: string; now: number },
): Promise<TransferRecord> {
  return inTx(ctx, (trx) => slashIn(trx, ctx, q));
}

/** slash inside the caller's transaction (equivocation evidence is stored with it); evidenceId is recorded in the event. */
export async function slashIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  q: { nodeId: string; to: { account: string; amount: number }[]; reason: string; jobId?: string; evidenceId?: string; now: number },
): Promise<TransferRecord> {
  await nodeProvider(trx, q.nodeId);
  let left = await balanceIn(trx, ctx, ACCOUNTS.stake(q.nodeId), STAKE_ASSET, true);
  const legs: { account: string; amount: number }[] = [];
  for (const leg of q.to) {
    if (left <= 0) break;
    const amount = Math.min(leg.amount, left);
    legs.push({ account: leg.account, amount });
    left -= amount;
  }
  const transfer = await postTransferIn(trx, {
    kind: 'slash',
    postings: move(STAKE_ASSET, ACCOUNTS.stake(q.nodeId), legs),
    at: q.now,
    memo: q.reason,
    jobId: q.jobId ?? null,
    nodeId: q.nodeId,
  });
  const amount = legs.reduce((s, l) => s + l.amount, 0);
  await insertEvents(trx, ctx, [
    {
      at: q.now,
      subject: 'node',
      subjectId: q.nodeId,
      type: 'node.slashed',
      data: { amount, reason: q.reason, jobId: q.jobId ?? null, ...(q.evidenceId ? { evidenceId: q.evidenceId } : {}) },
    },
  ]);
  return transfer;
}
