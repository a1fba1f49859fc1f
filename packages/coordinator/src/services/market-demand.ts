/**
 * What one epoch of the price index counts (issue 10 items 3 and 4).
 *
 * Supply: GPUs (CPU cores for class cpu) of live nodes: online, active, owned by a provider, with free
 * stake of at least a one-unit, one-minute job's lock at the class floor. A busy GPU counts on any online
 * node (it is supply in use). The capacity index follows the store (the expiry pass sets a node offline in
 * it), so a node that goes offline leaves the supply at the next epoch.
 *
 * Demand: busy units, plus queued jobs (the fair claim's window: a share per buyer) that some live node of
 * the class could run now or once idle, by the scheduler's own filters (GPU count per node, VRAM, vendor,
 * models, region, labels, trust, CPU, memory, price, stake), and whose cap reaches the class index. A job's
 * units are split evenly over the classes it counts in. One buyer's queued demand counts at most half the
 * class supply (core market/price-index.ts buyerDemandCap). Checking fits costs at most DEMAND_VISIT_BUDGET
 * node looks per epoch; job shapes left unchecked when it runs out count nowhere.
 */
import { buyerDemandCap, CPU_CLASS, fitsWhenIdle, type JobRequirements, type NodeCapacity, requirementsOf, stakeToLock } from '@gpux/core';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type MarketDemandDeps = Needs<'book' | 'config' | 'index' | 'store'>;

/** Node looks per epoch spent on deciding which queued job shapes fit a live node. */
export const DEMAND_VISIT_BUDGET = 50_000;
/** Live supply needs free stake covering one unit for this long at the class floor. */
const LIVE_STAKE_SECONDS = 60;

type Tally = Map<string, number>;
const add = (m: Tally, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

/** The stake a node needs free to count as live supply of a class. */
function liveStake(rt: MarketDemandDeps, memo: Tally, cls: string): number {
  let v = memo.get(cls);
  if (v === undefined) {
    v = stakeToLock(rt.book.floor(cls), 1, LIVE_STAKE_SECONDS);
    memo.set(cls, v);
  }
  return v;
}

function isLive(rt: MarketDemandDeps, memo: Tally, n: NodeCapacity, cls: string): boolean {
  return n.schedulable && n.providerId !== null && n.stake - n.stakeLocked >= Math.max(1, liveStake(rt, memo, cls));
}

/**
 * The classes in which the job could run on live nodes (enough distinct fitting nodes for a gang), by the
 * scheduler's filters over the index's buckets (schedulable nodes only). Spends `budget.left`.
 */
function fittingClasses(rt: MarketDemandDeps, memo: Tally, req: JobRequirements, budget: { left: number }): string[] {
  const perClass = new Map<string, number>();
  const seen = new Set<string>();
  const look = (n: NodeCapacity, cls: string): boolean => {
    if (budget.left-- <= 0) return false;
    if (seen.has(n.nodeId) || (perClass.get(cls) ?? 0) >= req.nodes) return true;
    if (isLive(rt, memo, n, cls) && fitsWhenIdle(req, n)) {
      seen.add(n.nodeId);
      add(perClass, cls, 1);
    }
    return true;
  };
  if (req.gpuCount > 0) {
    for (const pool of rt.index.poolsFor(req)) {
      if (pool.maxGpus < req.gpuCount || pool.maxCpuCores < req.cpu - 1e-9 || pool.maxMemoryMb < req.memoryMb) continue;
      const cls = pool.marketClass;
      for (const bucket of pool.buckets) {
        for (const slot of bucket) {
          if ((perClass.get(cls) ?? 0) >= req.nodes) break;
          if (slot.indices.length < req.gpuCount) continue;
          if (!look(slot.node, cls)) return [];
        }
      }
    }
  } else {
    outer: for (const bucket of rt.index.cpuBuckets) {
      for (const n of bucket) {
        if ((perClass.get(CPU_CLASS) ?? 0) >= req.nodes) break outer;
        if (!look(n, CPU_CLASS)) return [];
      }
    }
  }
  // A gang needs `nodes` distinct nodes; it counts in every class that has one of them.
  return seen.size >= req.nodes ? [...perClass.keys()].sort() : [];
}

export async function supplyAndDemand(rt: MarketDemandDeps, now: number): Promise<{ supply: Tally; demand: Tally }> {
  const supply: Tally = new Map();
  const demand: Tally = new Map();
  const memo: Tally = new Map();
  for (const n of rt.index.allNodes()) {
    if (n.status !== 'online') continue;
    for (const slot of n.slots) {
      const cls = slot.pool.marketClass;
      const busy = slot.indices.length - slot.free;
      add(supply, cls, isLive(rt, memo, n, cls) ? slot.indices.length : busy);
      add(demand, cls, busy);
    }
    const busyCpu = Math.max(0, n.cpuCores - n.freeCpu);
    add(supply, CPU_CLASS, isLive(rt, memo, n, CPU_CLASS) ? n.cpuCores : busyCpu);
    add(demand, CPU_CLASS, busyCpu);
  }

  const budget = { left: DEMAND_VISIT_BUDGET };
  const byShape = new Map<string, string[]>();
  const queued = new Map<string, Tally>();
  for (const job of await rt.store.claimQueuedFair(now, rt.config.scheduleBatchSize)) {
    const req = requirementsOf(job);
    let classes = byShape.get(req.shape);
    if (!classes) {
      classes = budget.left > 0 ? fittingClasses(rt, memo, req, budget) : [];
      byShape.set(req.shape, classes);
    }
    // Demand at the index: a queued job counts for the classes whose index is within its cap.
    const cap = job.payment?.capPerUnitHour ?? Number.POSITIVE_INFINITY;
    const at = classes.filter((c) => rt.book.price(c) <= cap);
    if (at.length === 0) continue;
    const want = (req.gpuCount > 0 ? req.gpuCount : req.cpu) * req.nodes;
    let mine = queued.get(job.buyerId);
    if (!mine) {
      mine = new Map();
      queued.set(job.buyerId, mine);
    }
    for (const c of at) add(mine, c, want / at.length);
  }
  for (const mine of queued.values()) {
    for (const [cls, units] of mine) add(demand, cls, Math.min(units, buyerDemandCap(supply.get(cls) ?? 0)));
  }
  return { supply, demand };
}
