/** The market's public face: index prices with their recent change, price history, and a provider's asks. */
import { CLASS_CATALOGUE, changeBps, GpuxError, marketClassOf } from '@gpux/core';
import type { AsksResponse, MarketPricesResponse, PriceHistoryResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs, Runtime } from '../runtime.js';
import { applyNodeAsks } from './market.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type PricesDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'index' | 'logger' | 'signals' | 'store'>;

/** From the price book (memory): a dashboard polling this every few seconds reads no history. */
export function marketPrices(rt: PricesDeps): MarketPricesResponse {
  const classes = rt.book.points().map(({ latest: p, previous, dayAgo }) => ({
    class: p.marketClass,
    asset: 'usdc' as const,
    price: p.price,
    previous: previous?.price ?? null,
    changeBps: changeBps(previous?.price ?? null, p.price),
    change24hBps: changeBps(dayAgo?.price ?? null, p.price),
    floor: rt.book.floor(p.marketClass),
    utilizationBps: p.utilizationBps,
    supplyUnits: p.supplyUnits,
    demandUnits: p.demandUnits,
    epoch: p.epoch,
    at: p.at,
  }));
  return {
    market: rt.config.market,
    feeBps: rt.config.treasuryFeeBps,
    targetUtilizationBps: rt.config.marketTargetBps,
    maxStepBps: rt.config.marketMaxStepBps,
    epochMs: rt.config.marketEpochMs,
    classes,
  };
}

export async function priceHistory(rt: PricesDeps, q: { class?: string; limit: number }): Promise<PriceHistoryResponse> {
  const points = await rt.store.priceHistory({ limit: q.limit, ...(q.class ? { marketClass: q.class } : {}) });
  return {
    points: points.map((p) => ({ class: p.marketClass, epoch: p.epoch, at: p.at, price: p.price, utilizationBps: p.utilizationBps, supplyUnits: p.supplyUnits, demandUnits: p.demandUnits })),
  };
}

function asksView(asks: Awaited<ReturnType<Runtime['store']['listAsks']>>): AsksResponse {
  return { asks: asks.map((a) => ({ providerId: a.providerId, class: a.marketClass, pricePerGpuHour: a.pricePerGpuHour, updatedAt: a.updatedAt })) };
}

export async function myAsks(rt: PricesDeps, p: Principal): Promise<AsksResponse> {
  return asksView(await rt.store.listAsks(p.accountId));
}

/** Classes an ask may name: the catalogue's, those the index has priced, and those of GPUs on the network now. */
function knownClasses(rt: PricesDeps): Set<string> {
  const out = new Set([...Object.keys(CLASS_CATALOGUE), ...rt.book.classes()]);
  for (const n of rt.index.allNodes()) for (const g of n.gpus) out.add(marketClassOf(g));
  return out;
}

/** Store the ask, then re-price the provider's nodes in the capacity index. A class nobody knows is a typo until shown otherwise. */
export async function setAsk(rt: PricesDeps, p: Principal, cls: string, price: number | null): Promise<AsksResponse> {
  const known = knownClasses(rt);
  if (price !== null && !known.has(cls)) {
    const like = [...known].filter((k) => k.split('-')[1] !== undefined && cls.includes(k.split('-')[1] as string)).sort();
    throw new GpuxError('REQUEST_INVALID', `unknown GPU class ${JSON.stringify(cls)}`, {
      problems: [{ path: 'class', message: `not a class of the catalogue or of any node here${like.length ? `; did you mean ${like.join(' or ')}?` : ''} (see \`gpux market prices\`; a node's class is vendor-model-VRAMgb, e.g. nvidia-h100-80gb, or cpu)` }],
    });
  }
  const asks = await rt.store.setAsk(p.accountId, cls, price, rt.clock.now());
  rt.book.setAsk(p.accountId, cls, price);
  rt.bus.publish({ t: 'asks', provider: p.accountId });
  for (const n of rt.index.allNodes()) {
    if (n.providerId === p.accountId) applyNodeAsks(rt, n.nodeId, n.providerId, n.gpus);
  }
  rt.logger.info({ providerId: p.accountId, class: cls, price }, 'ask set');
  rt.signals.kick();
  return asksView(asks);
}
