/**
 * GET /v1/offers (issue 16): what the network offers now, for buyers to compare before they submit. The core's
 * listOffers over the capacity index, priced from the price book as a placement would be (core market/clearing.ts).
 * Memory only: no store read per request. Rows group identical nodes and never name a node, host or provider.
 */
import { DEFAULT_REPUTATION_HALF_LIFE_MS, grossAsk, listOffers, lowestPrice, type OfferPricing, reliabilityOf } from '@gpux/core';
import type { OffersQuery, OffersResponse } from '@gpux/protocol';
import type { z } from 'zod';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type OffersDeps = Needs<'book' | 'clock' | 'config' | 'index'>;

/**
 * What a job pays on the node for the class (with a cap at or above it): the index, or the node's gross ask
 * when higher, never below the floor; and the least cap that clears there (the gross ask, or the index without one).
 */
export function offerPricing(rt: Pick<OffersDeps, 'book' | 'config'>): OfferPricing {
  return (node, cls) => {
    if (!rt.config.market) return null;
    const ask = rt.book.ask(node.providerId, cls);
    const q = { index: rt.book.price(cls), floor: rt.book.floor(cls), grossAsk: ask === undefined ? undefined : grossAsk(ask, rt.config.treasuryFeeBps) };
    const lowestCap = lowestPrice(q);
    return { price: Math.max(q.index, lowestCap), lowestCap };
  };
}

export function offers(rt: OffersDeps, q: z.output<typeof OffersQuery>): OffersResponse {
  const now = rt.clock.now();
  const list = listOffers(rt.index.allNodes(), {
    filter: { gpu: q.gpu, minGpus: q.count, maxPrice: q.maxPrice, region: q.region, provenOnly: q.proven, all: q.all },
    pricing: offerPricing(rt),
    reliability: (n) => reliabilityOf(n, now, rt.config.nodeStatsHalfLifeMs, DEFAULT_REPUTATION_HALF_LIFE_MS),
    market: rt.config.market,
    limit: q.limit,
  });
  return { market: rt.config.market, asset: 'usdc', feeBps: rt.config.market ? rt.config.treasuryFeeBps : 0, ...list };
}
