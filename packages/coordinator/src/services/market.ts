/**
 * The market around scheduling: a submitted job's cap and escrow hold, each placement's clearing price,
 * node asks in the capacity index, and the epoch that moves the price index (core market/price-index.ts).
 */
import {
  type AttemptPriceRecord,
  CLASS_CATALOGUE,
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
  stakeToLock,
  unitsOf,
  utilizationBps,
} from '@gpux/core';
import { formatAmount, type GpuDevice, type JobSpec } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { supplyAndDemand } from './market-demand.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type MarketDeps = Needs<'book' | 'config' | 'index' | 'store'>;

const policyOf = (rt: MarketDeps) => ({ targetUtilizationBps: rt.config.marketTargetBps, maxStepBps: rt.config.marketMaxStepBps });

/** The market classes whose GPUs the job would accept, among those on the network now (cpu for CPU-only jobs). */
export function acceptedClasses(rt: MarketDeps, spec: JobSpec): string[] {
  if (spec.resources.gpu.count === 0) return [CPU_CLASS];
  const req = requirementsOf({ spec, avoidNodeIds: [] });
  const out = new Set<string>();
  for (const p of rt.index.poolsFor(req)) out.add(p.marketClass);
  return [...out];
}

/** Whether a catalogue class (`vendor-model-VRAMgb`) would meet the job's GPU want, as far as its name tells. */
function catalogueFits(cls: string, want: ReturnType<typeof requirementsOf>['gpu']): boolean {
  const [vendor = '', model = '', vram = ''] = cls.split('-');
  if (want.vendor !== undefined && vendor !== want.vendor) return false;
  if (want.models !== undefined && !want.models.some((m) => model.includes(m.replace(/[^a-z0-9]/g, '')))) return false;
  return want.minVramMb === undefined || Number.parseInt(vram, 10) * 1024 + 512 >= want.minVramMb;
}

/**
 * The lowest floor among the classes a job accepts: those on the network now; with none, the catalogue's
 * classes its GPU want names, and the default floor of a class the catalogue does not know.
 */
function lowestFloor(rt: MarketDeps, spec: JobSpec, accepted: readonly string[]): { floor: number; cls: string } {
  let classes = [...accepted];
  if (classes.length === 0) {
    const want = requirementsOf({ spec, avoidNodeIds: [] }).gpu;
    classes = Object.keys(CLASS_CATALOGUE).filter((c) => c !== CPU_CLASS && catalogueFits(c, want));
    classes.push('a GPU class new to the catalogue');
  }
  let best = { floor: Number.POSITIVE_INFINITY, cls: '' };
  for (const cls of classes) {
    const floor = rt.book.floor(cls);
    if (floor < best.floor) best = { floor, cls };
  }
  return best;
}

/**
 * What a new job may cost: its cap (maxPricePerGpuHour, or the market cap: the dearest accepted class's
 * index plus one epoch's step) and the escrow to hold. undefined when the coordinator runs without a market.
 * A cap below the floor of every class the job accepts could never clear (nothing in a market runs below
 * its class floor): SPEC_INVALID on maxPricePerGpuHour naming the floor, before anything is held. So a
 * market job's hold is never 0.
 */
export function paymentFor(rt: MarketDeps, spec: JobSpec): JobPaymentRecord | undefined {
  if (!rt.config.market) return undefined;
  const asset = spec.asset ?? 'usdc';
  const accepted = acceptedClasses(rt, spec);
  let cap = spec.maxPricePerGpuHour;
  if (cap === undefined) {
    cap = marketCap(
      accepted.map((c) => rt.book.price(c)),
      rt.config.marketMaxStepBps,
    );
    if (cap === undefined) {
      throw new GpuxError('SPEC_INVALID', 'no GPU class on the network matches this job, so there is no market price for it to take', {
        problems: [{ path: 'maxPricePerGpuHour', message: 'set the most you pay per GPU-hour (minor units, 1000000 = 1.0) to queue it anyway, or change resources.gpu' }],
      });
    }
  }
  const low = lowestFloor(rt, spec, accepted);
  const per = spec.resources.gpu.count === 0 ? 'job-hour' : 'GPU-hour';
  if (cap < low.floor) {
    const floor = `${formatAmount(low.floor, asset)} (${low.floor} minor units) per ${per}`;
    throw new GpuxError('SPEC_INVALID', `maxPricePerGpuHour ${cap} is below the price floor of every class this job accepts (lowest: ${low.cls}, ${floor}); nothing in the market runs below its class floor`, {
      problems: [{ path: 'maxPricePerGpuHour', message: `at least ${low.floor} (${formatAmount(low.floor, asset)} per ${per}, the floor of ${low.cls}); see \`gpux market prices\`` }],
    });
  }
  const held = holdFor(spec, cap);
  if (held <= 0) throw new Error(`invariant: a market job holds ${held} (cap ${cap})`);
  return { asset, capPerUnitHour: cap, units: unitsOf(spec), held };
}

/** The class a placement's work is priced in: its first GPU's, or cpu. */
function classOfPlacement(rt: MarketDeps, p: Placement): string | undefined {
  const node = rt.index.get(p.nodeId);
  if (!node) return undefined;
  if (p.gpuIndices.length === 0) return CPU_CLASS;
  const g = node.gpus.find((x) => x.index === p.gpuIndices[0]);
  return g ? marketClassOf(g) : undefined;
}

/**
 * Give each placement of a market job its clearing price (core market/clearing.ts: never below the class
 * floor, the node's gross ask, or the index for a node without an ask; never above the cap) and the stake
 * it locks at that price, which the index learns in place of the placer's estimate. A placement that cannot
 * clear (the ask rose, the node lost its provider) or whose node's free stake no longer covers its lock is
 * dropped with its whole gang; the caller releases what was dropped.
 */
export function pricePlacements(rt: MarketDeps, jobs: ReadonlyMap<string, JobRecord>, placements: Placement[]): { priced: Placement[]; dropped: Placement[] } {
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
    const price = clearingPrice({
      index: rt.book.price(cls),
      floor: rt.book.floor(cls),
      ask: rt.book.ask(providerId, cls),
      cap: pay.capPerUnitHour,
      feeBps: rt.config.treasuryFeeBps,
    });
    if (price === null || price <= 0) {
      bad.add(p.jobId);
      continue;
    }
    const stakeLock = stakeToLock(price, pay.units, job.spec.timeoutSeconds);
    rt.index.setStakeLock(p.attemptId, stakeLock);
    // The reservation's lock is already counted in stakeLocked: the node must still hold stake for all of them.
    if (stakeLock <= 0 || node.stake - node.stakeLocked < 0) {
      bad.add(p.jobId);
      continue;
    }
    const record: AttemptPriceRecord = {
      asset: pay.asset,
      pricePerUnitHour: price,
      units: pay.units,
      feeBps: rt.config.treasuryFeeBps,
      providerId,
      stakeLock,
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
export function applyNodeAsks(rt: MarketDeps, nodeId: string, providerId: string | null, gpus: readonly GpuDevice[]): void {
  const a = rt.book.grossAsks(providerId, gpus);
  rt.index.setAsk(nodeId, a.gpu, a.cpu);
}

/**
 * One epoch of the index: per class, supply and demand (services/market-demand.ts: only live nodes supply,
 * only queued jobs that fit a live node and whose cap reaches the index demand, bounded per buyer), then
 * each price moves toward the target utilization. Recorded, then applied to the book and to the quotes
 * the scheduler prices nodes with.
 */
export async function runEpoch(rt: MarketDeps, now: number): Promise<PricePointRecord[]> {
  const { supply, demand } = await supplyAndDemand(rt, now);
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
  rt.index.quotes.refresh();
  return points;
}

/** Price the capacity index's nodes from the book (at start; runEpoch refreshes after each epoch). */
export function quoteFromBook(rt: MarketDeps): void {
  rt.index.quotes.setSource((cls) => ({ index: rt.book.price(cls), floor: rt.book.floor(cls) }));
}
