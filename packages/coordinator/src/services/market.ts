/**
 * The market around scheduling: a submitted job's cap and escrow hold, each placement's clearing price,
 * node asks in the capacity index, and the epoch that moves the price index (core market/price-index.ts).
 */
import {
  type AttemptPriceRecord,
  CPU_CLASS,
  clearingPrice,
  GpuxError,
  holdFor,
  type JobPaymentRecord,
  type JobRecord,
  marketCap,
  marketClassOf,
  nextPrice,
  type Placement,
  type PricePointRecord,
  requirementsOf,
  unitsOf,
  utilizationBps,
} from '@gpux/core';
import type { GpuDevice, JobSpec } from '@gpux/protocol';
import type { Runtime } from '../runtime.js';

const policyOf = (rt: Runtime) => ({ targetUtilizationBps: rt.config.marketTargetBps, maxStepBps: rt.config.marketMaxStepBps });

/** The market classes whose GPUs the job would accept, among those on the network now (cpu for CPU-only jobs). */
export function acceptedClasses(rt: Runtime, spec: JobSpec): string[] {
  if (spec.resources.gpu.count === 0) return [CPU_CLASS];
  const req = requirementsOf({ spec, avoidNodeIds: [] });
  const out = new Set<string>();
  for (const p of rt.index.poolsFor(req)) out.add(marketClassOf({ vendor: p.cls.vendor, model: p.cls.model, vramMb: p.cls.vramGb * 1024 }));
  return [...out];
}

/**
 * What a new job may cost: its cap (maxPricePerGpuHour, or the market cap: the dearest accepted class's
 * index plus one epoch's step) and the escrow to hold. undefined when the coordinator runs without a market.
 */
export function paymentFor(rt: Runtime, spec: JobSpec): JobPaymentRecord | undefined {
  if (!rt.config.market) return undefined;
  let cap = spec.maxPricePerGpuHour;
  if (cap === undefined) {
    cap = marketCap(
      acceptedClasses(rt, spec).map((c) => rt.book.price(c)),
      rt.config.marketMaxStepBps,
    );
    if (cap === undefined) {
      throw new GpuxError('SPEC_INVALID', 'no GPU class on the network matches this job, so there is no market price for it to take', {
        problems: [{ path: 'maxPricePerGpuHour', message: 'set the most you pay per GPU-hour (minor units, 1000000 = 1.0) to queue it anyway, or change resources.gpu' }],
      });
    }
  }
  return { asset: spec.asset ?? 'usdc', capPerUnitHour: cap, units: unitsOf(spec), held: holdFor(spec, cap) };
}

/** The class a placement's work is priced in: its first GPU's, or cpu. */
function classOfPlacement(rt: Runtime, p: Placement): string | undefined {
  const node = rt.index.get(p.nodeId);
  if (!node) return undefined;
  if (p.gpuIndices.length === 0) return CPU_CLASS;
  const g = node.gpus.find((x) => x.index === p.gpuIndices[0]);
  return g ? marketClassOf(g) : undefined;
}

/**
 * Give each placement of a market job its clearing price. A placement that cannot clear (the ask rose, the
 * node lost its provider) is dropped with its whole gang; the caller releases what was dropped.
 */
export function pricePlacements(rt: Runtime, jobs: ReadonlyMap<string, JobRecord>, placements: Placement[]): { priced: Placement[]; dropped: Placement[] } {
  const bad = new Set<string>();
  for (const p of placements) {
    const job = jobs.get(p.jobId);
    if (!job?.payment) continue;
    const node = rt.index.get(p.nodeId);
    const cls = classOfPlacement(rt, p);
    const providerId = node?.providerId ?? null;
    if (!node || cls === undefined || providerId === null) {
      bad.add(p.jobId);
      continue;
    }
    const pay = job.payment;
    const price = clearingPrice({ index: rt.book.price(cls), ask: rt.book.ask(providerId, cls) ?? 0, cap: pay.capPerUnitHour, feeBps: rt.config.treasuryFeeBps });
    if (price === null) {
      bad.add(p.jobId);
      continue;
    }
    const record: AttemptPriceRecord = {
      asset: pay.asset,
      pricePerUnitHour: price,
      units: pay.units,
      feeBps: rt.config.treasuryFeeBps,
      providerId,
      stakeLock: requirementsOf(job).stakeNeeded,
      marketClass: cls,
    };
    p.price = record;
  }
  const priced: Placement[] = [];
  const dropped: Placement[] = [];
  for (const p of placements) (bad.has(p.jobId) ? dropped : priced).push(p);
  return { priced, dropped };
}

/** Put the node's gross asks into the capacity index (after it registers, or its provider's asks change). */
export function applyNodeAsks(rt: Runtime, nodeId: string, providerId: string | null, gpus: readonly GpuDevice[]): void {
  const a = rt.book.grossAsks(providerId, gpus);
  rt.index.setAsk(nodeId, a.gpu, a.cpu);
}

/**
 * One epoch of the index: per class, supply (GPUs on online, active nodes; CPU cores for cpu) and demand
 * (busy units plus what due queued jobs want at the index: a job's units split evenly over the classes it
 * accepts whose index is within its cap, so demand falls as the price rises), then each price moves toward
 * the target utilization. Recorded, then applied to the book.
 */
export async function runEpoch(rt: Runtime, now: number): Promise<PricePointRecord[]> {
  const supply = new Map<string, number>();
  const demand = new Map<string, number>();
  const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);
  for (const n of rt.index.allNodes()) {
    if (n.status !== 'online') continue;
    const taking = n.adminState === 'active';
    for (const g of n.gpus) {
      const cls = marketClassOf(g);
      const busy = !n.freeGpus.has(g.index);
      if (taking || busy) add(supply, cls, 1);
      if (busy) add(demand, cls, 1);
    }
    if (taking) add(supply, CPU_CLASS, n.cpuCores);
    add(demand, CPU_CLASS, n.cpuCores - n.freeCpu);
  }
  for (const job of await rt.store.claimQueued(now, rt.config.scheduleBatchSize)) {
    // Demand at the index: a queued job counts for the classes whose index is within its cap.
    const cap = job.payment?.capPerUnitHour ?? Number.POSITIVE_INFINITY;
    const classes = acceptedClasses(rt, job.spec).filter((c) => rt.book.price(c) <= cap);
    const want = job.spec.resources.gpu.count > 0 ? job.spec.resources.gpu.count * (job.spec.nodes ?? 1) : (job.spec.resources.cpuCores ?? 1) * (job.spec.nodes ?? 1);
    for (const c of classes) add(demand, c, want / classes.length);
  }
  const policy = policyOf(rt);
  const epoch = rt.book.epoch + 1;
  const classes = new Set([...supply.keys(), ...demand.keys(), ...rt.book.classes()]);
  const points: PricePointRecord[] = [...classes].sort().map((cls) => {
    const s = supply.get(cls) ?? 0;
    const d = Math.round(demand.get(cls) ?? 0);
    const u = utilizationBps(d, s, policy);
    return { marketClass: cls, epoch, at: now, price: nextPrice(rt.book.price(cls), u, rt.book.floor(cls), policy), utilizationBps: u, supplyUnits: s, demandUnits: d };
  });
  await rt.store.recordPrices(points);
  for (const p of points) rt.book.note(p);
  return points;
}
