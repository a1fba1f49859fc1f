/**
 * Offers (issue 16, `gpux offers`): what the network offers now, as a marketplace search shows it. One row per
 * (node, GPU class); identical rows (same class, GPUs, free GPUs, CPU, memory, region, tier, price, reliability,
 * proof and availability) are grouped with a count, so a row never names a node. Like explain, this looks at every
 * node of the capacity index once (memory only, no store read): an on-demand answer, never part of a pass.
 */
import { CPU_CLASS } from '../market/classes.js';
import type { NodeCapacity, PoolSlot } from './capacity-index.js';
import type { TrustTier } from './requirements.js';

export interface OfferFilter {
  /** A class or model, matched case-insensitively on letters and digits ("H100" finds nvidia-h100-80gb); "cpu": CPU-only nodes. */
  gpu?: string | undefined;
  /** At least this many GPUs of the class per node. */
  minGpus?: number | undefined;
  /** Price at most this (rows without a price pass). */
  maxPrice?: number | undefined;
  region?: string | undefined;
  provenOnly?: boolean | undefined;
  /** Also rows of nodes that cannot take a job now. */
  all?: boolean | undefined;
}

/** What a job pays on a node for a class, and the least cap that clears there (core market/clearing.ts); null without a market. */
export type OfferPricing = (node: NodeCapacity, marketClass: string) => { price: number; lowestCap: number } | null;

export interface Offer {
  class: string;
  vendor: string | null;
  model: string | null;
  vramGb: number | null;
  gpusPerNode: number;
  freeGpus: number;
  nodes: number;
  cpuCores: number;
  memoryGb: number;
  region: string | null;
  tier: TrustTier;
  unit: 'GPU-hour' | 'job-hour';
  price: number | null;
  lowestCap: number | null;
  reliability: number;
  proven: boolean;
  online: boolean;
  available: boolean;
  unavailable: string | null;
}

export interface OfferList {
  offers: Offer[];
  total: number;
  nodes: number;
  truncated: boolean;
}

/** Letters and digits only, lower case: "NVIDIA H100-80GB" → "nvidiah10080gb". */
const squash = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

/**
 * Why the node cannot take a job now, or null. In a market a node also needs a provider to pay and free stake
 * (TRUST.md: supply counts only those), as the stake filter demands of every market job.
 */
export function unavailableReason(n: NodeCapacity, market: boolean): string | null {
  if (n.status !== 'online') return 'offline';
  if (n.adminState !== 'active') return n.adminState;
  if (n.proofBlock !== null) return 'not proven';
  if (!n.schedulable) return 'not schedulable';
  if (market && n.providerId === null) return 'no provider';
  if (market && n.stake - n.stakeLocked <= 0) return 'no free stake';
  return null;
}

function rowsOf(n: NodeCapacity, pricing: OfferPricing, reliability: number, market: boolean): Offer[] {
  const unavailable = unavailableReason(n, market);
  const base = {
    cpuCores: n.cpuCores,
    memoryGb: Math.floor(n.memoryMb / 1024),
    region: n.region ?? null,
    tier: n.trustTier,
    reliability: Math.round(reliability * 100) / 100,
    proven: n.provenScore !== null,
    online: n.status === 'online',
    available: unavailable === null,
    unavailable,
    nodes: 1,
  };
  if (n.slots.length === 0) {
    const p = pricing(n, CPU_CLASS);
    return [{ ...base, class: CPU_CLASS, vendor: null, model: null, vramGb: null, gpusPerNode: 0, freeGpus: 0, unit: 'job-hour', price: p?.price ?? null, lowestCap: p?.lowestCap ?? null }];
  }
  return n.slots.map((s: PoolSlot) => {
    const p = pricing(n, s.pool.marketClass);
    return {
      ...base,
      class: s.pool.marketClass,
      vendor: s.pool.cls.vendor,
      model: s.pool.cls.model,
      vramGb: s.pool.cls.vramGb,
      gpusPerNode: s.indices.length,
      freeGpus: s.indices.reduce((c, i) => c + (n.freeGpus.has(i) ? 1 : 0), 0),
      unit: 'GPU-hour' as const,
      price: p?.price ?? null,
      lowestCap: p?.lowestCap ?? null,
    };
  });
}

function matches(o: Offer, f: OfferFilter): boolean {
  if (!o.available && !f.all) return false;
  if (f.gpu !== undefined) {
    const want = squash(f.gpu);
    if (want === CPU_CLASS ? o.class !== CPU_CLASS : !(squash(o.class).includes(want) || squash(`${o.vendor ?? ''}${o.model ?? ''}`).includes(want))) return false;
  }
  if (f.minGpus !== undefined && o.gpusPerNode < f.minGpus) return false;
  if (f.maxPrice !== undefined && o.price !== null && o.price > f.maxPrice) return false;
  if (f.region !== undefined && o.region !== f.region) return false;
  if (f.provenOnly && !o.proven) return false;
  return true;
}

const groupKey = (o: Offer) =>
  JSON.stringify([o.class, o.vendor, o.model, o.vramGb, o.gpusPerNode, o.freeGpus, o.cpuCores, o.memoryGb, o.region, o.tier, o.price, o.lowestCap, o.reliability, o.proven, o.online, o.unavailable]);

/** GPU rows before cpu rows (priced per job-hour, not comparable), cheapest first (no price last), then most reliable, most free GPUs, class and region. */
function byPrice(a: Offer, b: Offer): number {
  if (a.unit !== b.unit) return a.unit === 'GPU-hour' ? -1 : 1;
  const pa = a.price ?? Number.POSITIVE_INFINITY;
  const pb = b.price ?? Number.POSITIVE_INFINITY;
  if (pa !== pb) return pa - pb;
  if (a.available !== b.available) return a.available ? -1 : 1;
  if (a.reliability !== b.reliability) return b.reliability - a.reliability;
  if (a.freeGpus !== b.freeGpus) return b.freeGpus - a.freeGpus;
  return a.class.localeCompare(b.class) || (a.region ?? '').localeCompare(b.region ?? '') || b.nodes - a.nodes;
}

/**
 * The offers among `nodes` that pass `filter`, grouped, sorted by price, at most `limit` rows. `reliability` is the
 * node's score (scores.ts reliabilityOf); `pricing` prices a class on a node (the coordinator's price book).
 */
export function listOffers(
  nodes: Iterable<NodeCapacity>,
  opts: { filter: OfferFilter; pricing: OfferPricing; reliability: (n: NodeCapacity) => number; market: boolean; limit: number },
): OfferList {
  const groups = new Map<string, Offer>();
  for (const n of nodes) {
    // A node that cannot take a job is skipped before it is priced, unless asked for.
    if (!opts.filter.all && unavailableReason(n, opts.market) !== null) continue;
    for (const o of rowsOf(n, opts.pricing, opts.reliability(n), opts.market)) {
      if (!matches(o, opts.filter)) continue;
      const k = groupKey(o);
      const g = groups.get(k);
      if (g) g.nodes++;
      else groups.set(k, o);
    }
  }
  const rows = [...groups.values()].sort(byPrice);
  return { offers: rows.slice(0, opts.limit), total: rows.length, nodes: rows.reduce((s, o) => s + o.nodes, 0), truncated: rows.length > opts.limit };
}
