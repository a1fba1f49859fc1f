/**
 * This region's summary (issue 15), what its peers receive: free and total GPUs per market class from the
 * capacity index (live nodes; free: schedulable, proven where proof is required, not held by an attempt), the
 * price index per class from the price book, the queue depth, and the median recent placement wait. Reads the
 * in-memory caches and one grouped count: cheap enough for every pass.
 */
import { marketClassOf } from '@gpux/core';
import { MAX_SUMMARY_CLASSES, type RegionClassFigures, type RegionSummary } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
export type SummaryDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'offlineNodes' | 'scheduling' | 'store'>;

/** The recent placement waits the scheduling loop keeps (services/placement-waits.ts), where this build has them. */
type RecentWaits = { recent(now: number): { medianMs: number } | null };

function recentWaitP50(rt: SummaryDeps, now: number): number | null {
  const waits = (rt.scheduling as unknown as { waits?: RecentWaits }).waits;
  const median = waits?.recent(now)?.medianMs;
  return median === undefined || !Number.isFinite(median) ? null : Math.max(0, Math.round(median));
}

function classFigures(rt: SummaryDeps): RegionClassFigures[] {
  const byClass = new Map<string, { free: number; total: number }>();
  for (const n of rt.index.allNodes()) {
    if (rt.offlineNodes.has(n.nodeId)) continue;
    const takesWork = n.schedulable && n.proofBlock === null;
    for (const g of n.gpus) {
      const cls = marketClassOf(g);
      const c = byClass.get(cls) ?? { free: 0, total: 0 };
      c.total++;
      if (takesWork && n.freeGpus.has(g.index)) c.free++;
      byClass.set(cls, c);
    }
  }
  // A class priced here but with no live GPU still tells a peer its price.
  for (const cls of rt.book.classes()) if (!byClass.has(cls)) byClass.set(cls, { free: 0, total: 0 });
  return [...byClass.entries()]
    .map(([cls, c]) => ({ class: cls, freeGpus: c.free, totalGpus: c.total, priceIndex: rt.book.price(cls) }))
    .sort((a, b) => b.totalGpus - a.totalGpus || a.class.localeCompare(b.class))
    .slice(0, MAX_SUMMARY_CLASSES);
}

export async function regionSummary(rt: SummaryDeps): Promise<RegionSummary> {
  const now = rt.clock.now();
  const counts = await rt.store.countJobsByState();
  return {
    region: rt.config.region,
    sentAt: now,
    classes: classFigures(rt),
    queueDepth: counts.queued ?? 0,
    placementWaitP50Ms: recentWaitP50(rt, now),
  };
}
