/**
 * Provider asks (one per provider and market class) and the price index history (one row per class and
 * epoch, appended by the pricing loop).
 */
import { type AskRecord, GpuxError, type PricePointRecord } from '@gpux/core';
import type { Kysely, Selectable } from 'kysely';
import { chunks, inTx, type StoreContext } from './context.js';
import type { AsksTable, Database, MarketPricesTable } from './schema.js';

const askFromRow = (r: Selectable<AsksTable>): AskRecord => ({
  providerId: r.provider_id,
  marketClass: r.market_class,
  pricePerGpuHour: Number(r.price),
  updatedAt: Number(r.updated_at),
});

const pointFromRow = (r: Selectable<MarketPricesTable>): PricePointRecord => ({
  marketClass: r.market_class,
  epoch: Number(r.epoch),
  at: Number(r.at),
  price: Number(r.price),
  utilizationBps: Number(r.utilization_bps),
  supplyUnits: Number(r.supply_units),
  demandUnits: Number(r.demand_units),
});

function asksOf(db: Kysely<Database>, providerId?: string): Promise<Selectable<AsksTable>[]> {
  return db
    .selectFrom('asks')
    .selectAll()
    .$if(providerId !== undefined, (qb) => qb.where('provider_id', '=', providerId as string))
    .orderBy('provider_id')
    .orderBy('market_class')
    .execute();
}

/** Upsert the ask, or delete it when price is null; returns the provider's asks by class. */
export async function setAsk(ctx: StoreContext, providerId: string, marketClass: string, price: number | null, now: number): Promise<AskRecord[]> {
  if (price !== null && (!Number.isSafeInteger(price) || price <= 0)) throw new GpuxError('REQUEST_INVALID', `an ask must be a positive price, got ${price}`);
  return inTx(ctx, async (trx) => {
    if (price === null) {
      await trx.deleteFrom('asks').where('provider_id', '=', providerId).where('market_class', '=', marketClass).execute();
    } else {
      await trx
        .insertInto('asks')
        .values({ provider_id: providerId, market_class: marketClass, price, updated_at: now })
        .onConflict((oc) => oc.columns(['provider_id', 'market_class']).doUpdateSet({ price, updated_at: now }))
        .execute();
    }
    return (await asksOf(trx, providerId)).map(askFromRow);
  });
}

/** Every ask, or one provider's; by provider then class. */
export async function listAsks(ctx: StoreContext, providerId?: string): Promise<AskRecord[]> {
  return (await asksOf(ctx.db, providerId)).map(askFromRow);
}

/**
 * Append one epoch. A (class, epoch) already recorded is kept: two coordinators pricing the same epoch
 * write it once, the first one wins.
 */
export async function recordPrices(ctx: StoreContext, points: PricePointRecord[]): Promise<void> {
  if (points.length === 0) return;
  const rows = points.map((p) => ({
    market_class: p.marketClass,
    epoch: p.epoch,
    at: p.at,
    price: p.price,
    utilization_bps: p.utilizationBps,
    supply_units: p.supplyUnits,
    demand_units: p.demandUnits,
  }));
  await inTx(ctx, async (trx) => {
    for (const batch of chunks(rows, 7, ctx.q)) {
      await trx
        .insertInto('market_prices')
        .values(batch)
        .onConflict((oc) => oc.columns(['market_class', 'epoch']).doNothing())
        .execute();
    }
  });
}

/** The latest epoch of every class, by class. */
export async function latestPrices(ctx: StoreContext): Promise<PricePointRecord[]> {
  const rows = await ctx.db
    .selectFrom('market_prices as p')
    .innerJoin(
      (eb) => eb.selectFrom('market_prices').select((e) => ['market_class', e.fn.max('epoch').as('epoch')]).groupBy('market_class').as('m'),
      (join) => join.onRef('m.market_class', '=', 'p.market_class').onRef('m.epoch', '=', 'p.epoch'),
    )
    .selectAll('p')
    .orderBy('p.market_class')
    .execute();
  return rows.map(pointFromRow);
}

/** The newest `limit` points (one class or all, at or after sinceAt), returned oldest first. */
export async function priceHistory(ctx: StoreContext, q: { marketClass?: string; sinceAt?: number; limit: number }): Promise<PricePointRecord[]> {
  const rows = await ctx.db
    .selectFrom('market_prices')
    .selectAll()
    .$if(q.marketClass !== undefined, (qb) => qb.where('market_class', '=', q.marketClass as string))
    .$if(q.sinceAt !== undefined, (qb) => qb.where('at', '>=', q.sinceAt as number))
    .orderBy('at', 'desc')
    .orderBy('epoch', 'desc')
    .orderBy('market_class', 'desc')
    .limit(Math.max(1, Math.floor(q.limit)))
    .execute();
  return rows.reverse().map(pointFromRow);
}
