/**
 * Explain's facts: one walk over every node, running the placement filters (filters.ts) in funnel order, that
 * counts per filter the nodes it rejected and keeps what the sentences (explain-text.ts) need to name a concrete
 * change: the fleet's GPU classes, the most GPUs, CPU and memory on one node, the prices and stakes of the nodes
 * that price or stake ruled out. Pure: amounts stay in minor units here.
 */
import { lowestPrice } from '../market/clearing.js';
import { stakeToLock } from '../market/settlement.js';
import type { CapacityIndex, NodeCapacity } from './capacity-index.js';
import { acceptableSlots, askFor, FILTER_ORDER, type FilterName, priceAt, quoteFor, rejectNode, stakeLockAt } from './filters.js';
import { classRejection, type GpuClassInfo } from './gpu-class.js';
import type { JobRequirements } from './requirements.js';

export interface ClassSeen {
  cls: GpuClassInfo;
  /** Live nodes with GPUs of the class, and the most of them on one node. */
  nodes: number;
  most: number;
}

export interface Tally {
  /** Nodes per first rejecting filter; 'fit' counts the nodes that take the job now. */
  rejected: Map<FilterName | 'fit', number>;
  /** Nodes past state and proof (online, active, proven where required). */
  live: number;
  /** Live nodes without any GPU. */
  gpuless: number;
  classes: Map<string, ClassSeen>;
  /** Among accepted classes: the most GPUs of one class on a node, and how many nodes have that many. */
  mostGpus: number;
  mostGpusNodes: number;
  /** Live nodes holding the job's GPU count of some class, accepted or not (dropping the GPU filters would use them). */
  enoughAnyClass: number;
  /** The most VRAM (GB) among classes of the job's vendor and models: what minVramGb could be lowered to. */
  mostVramGb: number;
  /** Nodes where the job failed before that have room for it now: placement uses them when no other node fits. */
  failedFree: number;
  /** Among busy nodes: most accepted GPUs free now. */
  mostFree: number;
  mostFreeNodes: number;
  regions: Map<string, number>;
  offline: number;
  cordoned: number;
  draining: number;
  mostCpu: number;
  mostMemoryMb: number;
  /** Lowest price (minor units per unit-hour) among the nodes that take the job now. */
  minFittingPrice: number | null;
  /** The least a node past the price filter would charge (its clearing price, or its ask without a market). */
  minPriceWithinCap: number | null;
  /** The lowest prices of the nodes the price filter ruled out, ascending once sorted by the caller. */
  rejectedPrices: number[];
  /** Nodes price or stake ruled out that have no provider: a market job pays someone, so no price or stake would help. */
  noProvider: number;
  /** Stake-rejected nodes with a provider: free stake, and the longest timeout whose lock that stake covers (0: none). */
  stakeShort: Array<{ free: number; timeoutFits: number; lock: number }>;
}

const FIT = 'fit' as const;
const NO_NODES: ReadonlySet<string> = new Set();
export const order = (f: FilterName) => FILTER_ORDER.indexOf(f);

export function tally(req: JobRequirements, index: CapacityIndex): Tally {
  const t: Tally = {
    rejected: new Map(),
    live: 0,
    gpuless: 0,
    classes: new Map(),
    mostGpus: 0,
    mostGpusNodes: 0,
    enoughAnyClass: 0,
    mostVramGb: 0,
    failedFree: 0,
    mostFree: 0,
    mostFreeNodes: 0,
    regions: new Map(),
    offline: 0,
    cordoned: 0,
    draining: 0,
    mostCpu: 0,
    mostMemoryMb: 0,
    minFittingPrice: null,
    minPriceWithinCap: null,
    rejectedPrices: [],
    noProvider: 0,
    stakeShort: [],
  };
  for (const n of index.allNodes()) {
    const why = rejectNode(req, n);
    t.rejected.set(why ?? FIT, (t.rejected.get(why ?? FIT) ?? 0) + 1);
    if (why === 'state' || why === 'proof') {
      if (n.status === 'offline') t.offline++;
      else if (n.adminState === 'cordoned') t.cordoned++;
      else if (n.adminState === 'draining') t.draining++;
      continue;
    }
    t.live++;
    noteClasses(req, n, t);
    if (req.gpuCount > 0) noteGpus(req, n, t, why);
    const past = (f: FilterName) => why === null || order(why) >= order(f);
    if (past('region')) t.regions.set(n.region ?? '(none)', (t.regions.get(n.region ?? '(none)') ?? 0) + 1);
    if (past('cpu')) {
      t.mostCpu = Math.max(t.mostCpu, n.cpuCores);
      t.mostMemoryMb = Math.max(t.mostMemoryMb, n.memoryMb);
    }
    if ((why === 'price' || why === 'stake') && req.paid && n.providerId === null) t.noProvider++;
    else if (why === 'price') {
      const low = lowestAsk(req, n);
      if (low !== undefined) t.rejectedPrices.push(low);
    } else if (past('stake')) {
      const p = chargeAt(req, n);
      if (p !== undefined) t.minPriceWithinCap = Math.min(t.minPriceWithinCap ?? Number.POSITIVE_INFINITY, p);
      if (why === null && p !== undefined) t.minFittingPrice = Math.min(t.minFittingPrice ?? Number.POSITIVE_INFINITY, p);
    }
    if (why === 'stake') noteStake(req, n, t);
    if (why === 'failedBefore' && rejectNode({ ...req, avoid: NO_NODES }, n) === null) t.failedFree++;
  }
  return t;
}

/** What the node asks of this job: in a market its lowest clearing price (floor, gross ask, or the index without an ask). */
function lowestAsk(req: JobRequirements, n: NodeCapacity): number | undefined {
  const ask = askFor(req, n);
  const q = quoteFor(req, n);
  return req.paid && q ? lowestPrice({ index: q.index, floor: q.floor, grossAsk: ask }) : ask;
}

/** What a node within the cap would charge: the clearing price in a market, else its ask (undefined: none). */
function chargeAt(req: JobRequirements, n: NodeCapacity): number | undefined {
  return req.paid ? (priceAt(req, n) ?? undefined) : askFor(req, n);
}

function noteClasses(req: JobRequirements, n: NodeCapacity, t: Tally): void {
  if (n.slots.length === 0) t.gpuless++;
  let enough = false;
  for (const s of n.slots) {
    const c = t.classes.get(s.pool.cls.key) ?? { cls: s.pool.cls, nodes: 0, most: 0 };
    c.nodes++;
    c.most = Math.max(c.most, s.indices.length);
    t.classes.set(s.pool.cls.key, c);
    if (req.gpuCount > 0 && s.indices.length >= req.gpuCount) enough = true;
    if (classRejection(s.pool.cls, { ...req.gpu, minVramMb: undefined }) === null) t.mostVramGb = Math.max(t.mostVramGb, s.pool.cls.vramGb);
  }
  if (enough) t.enoughAnyClass++;
}

function noteGpus(req: JobRequirements, n: NodeCapacity, t: Tally, why: FilterName | null): void {
  const acc = acceptableSlots(req, n);
  if (typeof acc === 'string') return;
  const total = Math.max(...acc.map((s) => s.indices.length));
  if (total > t.mostGpus) [t.mostGpus, t.mostGpusNodes] = [total, 1];
  else if (total === t.mostGpus) t.mostGpusNodes++;
  if (why === 'busy') {
    const free = Math.max(...acc.map((s) => s.free));
    if (free > t.mostFree) [t.mostFree, t.mostFreeNodes] = [free, 1];
    else if (free === t.mostFree) t.mostFreeNodes++;
  }
}

function noteStake(req: JobRequirements, n: NodeCapacity, t: Tally): void {
  if (n.providerId === null) return;
  const free = Math.max(0, n.stake - n.stakeLocked);
  const price = priceAt(req, n);
  t.stakeShort.push({ free, lock: stakeLockAt(req, n), timeoutFits: price === null ? 0 : longestTimeoutCovered(price, req.units, req.timeoutSeconds, free) });
}

/** The longest timeout (1 s up to the job's) whose stake lock at `price` fits in `free`; 0 when not even 1 s does. */
function longestTimeoutCovered(price: number, units: number, timeoutSeconds: number, free: number): number {
  if (free <= 0 || stakeToLock(price, units, 1) > free) return 0;
  let [lo, hi] = [1, timeoutSeconds];
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (stakeToLock(price, units, mid) <= free) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}
