/**
 * A quote for a job not yet submitted (issue 16, `gpux job submit --dry-run`): how many nodes could take it now,
 * how many fit but are busy, what it would pay on the cheapest and the dearest of them, and the expected wait.
 * Uses the same filters as placement (filters.ts), so a quote agrees with what a submit meets. Looks at every node
 * of the capacity index once, like explain: on demand, never in a pass.
 */
import type { CapacityIndex } from './capacity-index.js';
import { priceAt, rejectNode } from './filters.js';
import type { JobRequirements } from './requirements.js';

export interface PlacementQuote {
  nodesTotal: number;
  nodesFitting: number;
  nodesBusy: number;
  /** The clearing price at the job's cap on the cheapest and the dearest node that fits (busy or not); null without a market or a fit. */
  priceLow: number | null;
  priceHigh: number | null;
}

export function quotePlacement(req: JobRequirements, index: CapacityIndex): PlacementQuote {
  const q: PlacementQuote = { nodesTotal: index.size, nodesFitting: 0, nodesBusy: 0, priceLow: null, priceHigh: null };
  for (const n of index.allNodes()) {
    const why = rejectNode(req, n);
    if (why === null) q.nodesFitting++;
    else if (why === 'busy') q.nodesBusy++;
    else continue;
    const price = req.paid ? priceAt(req, n) : null;
    if (price === null) continue;
    q.priceLow = Math.min(q.priceLow ?? price, price);
    q.priceHigh = Math.max(q.priceHigh ?? price, price);
  }
  return q;
}

/** Recent waits from submission to first placement (the scheduling pass notes them; services/placement-waits.ts). */
export interface RecentWaits {
  count: number;
  windowMs: number;
  medianMs: number;
  p90Ms: number;
}

export interface WaitEstimate {
  kind: 'now' | 'recent' | 'unknown' | 'never';
  seconds: number | null;
  basis: string;
}

/** Fewer recent placements than this say nothing about a wait. */
export const MIN_RECENT_WAITS = 3;

const secs = (ms: number) => Math.max(0, Math.round(ms / 1000));
const phrase = (ms: number) => (ms < 1000 ? 'under a second' : ms < 120_000 ? `${secs(ms)} s` : `${Math.round(ms / 60_000)} min`);

/**
 * The expected wait before placement. Enough free fitting nodes: the next scheduling pass (a submit starts one).
 * All fitting nodes busy: the median of recent waits from submission to first placement, when there are enough of
 * them; else unknown. Too few fitting nodes even when idle: never, as specified.
 */
export function estimateWait(q: Pick<PlacementQuote, 'nodesFitting' | 'nodesBusy'>, needed: number, recent: RecentWaits | null, passEveryMs: number): WaitEstimate {
  if (q.nodesFitting >= needed) {
    return {
      kind: 'now',
      seconds: 0,
      basis: `${q.nodesFitting} ${q.nodesFitting === 1 ? 'node fits' : 'nodes fit'} and ${q.nodesFitting === 1 ? 'is' : 'are'} free now: a submit is placed in the next scheduling pass (one starts at once; they run at least every ${passEveryMs < 1000 ? `${passEveryMs} ms` : phrase(passEveryMs)}), unless jobs queued ahead take ${q.nodesFitting === 1 ? 'it' : 'them'} first`,
    };
  }
  if (q.nodesFitting + q.nodesBusy < needed) {
    return { kind: 'never', seconds: null, basis: `${q.nodesFitting + q.nodesBusy} of the ${needed} ${needed === 1 ? 'node' : 'nodes'} it needs fit, even when idle: it would wait until ${needed === 1 ? 'one that fits joins' : 'enough that fit join'} (or its queue timeout)` };
  }
  const busy = `every node that fits is busy (${q.nodesBusy})`;
  if (!recent || recent.count < MIN_RECENT_WAITS) {
    return { kind: 'unknown', seconds: null, basis: `${busy}, and too few jobs were placed here in the last ${phrase(recent?.windowMs ?? 3_600_000)} to estimate the wait (${recent?.count ?? 0}; ${MIN_RECENT_WAITS} needed)` };
  }
  return {
    kind: 'recent',
    seconds: secs(recent.medianMs),
    basis: `${busy}: the median wait from submission to placement of the last ${recent.count} jobs placed in the last ${phrase(recent.windowMs)} was ${phrase(recent.medianMs)} (90th percentile ${phrase(recent.p90Ms)}); jobs of any shape count`,
  };
}
