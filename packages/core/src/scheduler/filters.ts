/**
 * The filters: whether a node may take a job. One set of functions serves placement (over the index's
 * buckets, where state, GPU class, free GPUs and region are already structural), explain and the naive
 * placer (over every node, in funnel order), so what explain reports is what placement does.
 */
import { type ClassQuote, clearAt, lowestPrice } from '../market/clearing.js';
import { stakeToLock } from '../market/settlement.js';
import type { NodeCapacity, PoolSlot } from './capacity-index.js';
import { classRejection } from './gpu-class.js';
import { type JobRequirements, TRUST_RANK } from './requirements.js';

export type FilterName =
  | 'state'
  | 'proof'
  | 'gpuVendor'
  | 'gpuModel'
  | 'gpuVram'
  | 'gpuCount'
  | 'region'
  | 'labels'
  | 'trust'
  | 'cpu'
  | 'memory'
  | 'price'
  | 'stake'
  | 'operator'
  | 'failedBefore'
  | 'busy';

/** The funnel order: a node is counted at the first filter that rejects it. */
export const FILTER_ORDER: readonly FilterName[] = [
  'state',
  'proof',
  'gpuVendor',
  'gpuModel',
  'gpuVram',
  'gpuCount',
  'region',
  'labels',
  'trust',
  'cpu',
  'memory',
  'price',
  'stake',
  'operator',
  'failedBefore',
  'busy',
];

const CLASS_DEPTH = { gpuVendor: 0, gpuModel: 1, gpuVram: 2 } as const;

/** The node's slots whose class the job accepts, or the GPU filter that rejects them all. */
export function acceptableSlots(req: JobRequirements, node: NodeCapacity): PoolSlot[] | 'gpuVendor' | 'gpuModel' | 'gpuVram' | 'gpuCount' {
  if (node.slots.length === 0) return 'gpuCount';
  const ok: PoolSlot[] = [];
  let furthest: 'gpuVendor' | 'gpuModel' | 'gpuVram' = 'gpuVendor';
  for (const s of node.slots) {
    const why = classRejection(s.pool.cls, req.gpu);
    if (why === null) ok.push(s);
    else if (CLASS_DEPTH[why] > CLASS_DEPTH[furthest]) furthest = why;
  }
  return ok.length > 0 ? ok : furthest;
}

export function labelsMatch(req: JobRequirements, node: NodeCapacity): boolean {
  for (const [k, v] of req.labels) if (node.labels[k] !== v) return false;
  return true;
}

export function trustOk(req: JobRequirements, node: NodeCapacity): boolean {
  return TRUST_RANK[node.trustTier] >= req.minTrust;
}

/** The node's gross ask for this job's kind of work (GPU-hour or job-hour), undefined when it has none. */
export function askFor(req: JobRequirements, node: NodeCapacity): number | undefined {
  return req.gpuCount === 0 ? node.askPerJobHour : node.askPerGpuHour;
}

/** The quote (index, floor) of the class this job's work on the node is priced in: its GPU class, or cpu. */
export function quoteFor(req: JobRequirements, node: NodeCapacity): ClassQuote | undefined {
  return req.gpuCount === 0 ? node.cpuQuote : node.gpuQuote;
}

/**
 * A market job's clearing price on this node (core market/clearing.ts: at least the class floor and the
 * node's gross ask, or the index when it has none; at most the cap), or null when it cannot clear there.
 */
export function priceAt(req: JobRequirements, node: NodeCapacity): number | null {
  const q = quoteFor(req, node);
  if (!q || req.maxPrice === undefined) return null;
  return clearAt({ index: q.index, floor: q.floor, grossAsk: askFor(req, node), cap: req.maxPrice });
}

/**
 * A market job clears on the node only when its lower bound (floor, gross ask or index) is within the cap.
 * Without a market: a node without an ask, or a job without a cap, passes; else the gross ask must be within the cap.
 */
export function priceOk(req: JobRequirements, node: NodeCapacity): boolean {
  const ask = askFor(req, node);
  if (req.paid) {
    const q = quoteFor(req, node);
    return q !== undefined && req.maxPrice !== undefined && lowestPrice({ index: q.index, floor: q.floor, grossAsk: ask }) <= req.maxPrice;
  }
  return req.maxPrice === undefined || ask === undefined || ask <= req.maxPrice;
}

/** The stake an attempt of a market job locks on this node: 20× its longest charge at the node's clearing price (0: cannot clear). */
export function stakeLockAt(req: JobRequirements, node: NodeCapacity): number {
  const price = priceAt(req, node);
  return price === null ? 0 : stakeToLock(price, req.units, req.timeoutSeconds);
}

/**
 * A market job needs a node with a provider to pay and free stake covering its lock at the node's clearing
 * price (TRUST.md: 20× its longest charge). The price is at least the class floor, so the lock is never 0
 * and a node with no free stake never takes a market job.
 */
export function stakeOk(req: JobRequirements, node: NodeCapacity): boolean {
  if (!req.paid) return true;
  if (node.providerId === null) return false;
  const free = node.stake - node.stakeLocked;
  if (free <= 0) return false;
  if (free >= req.stakeNeeded) return true; // the lock at the cap is the most it can be
  const lock = stakeLockAt(req, node);
  return lock > 0 && free >= lock;
}

/**
 * The checks placement still makes on a node it found in the buckets (schedulable, accepted class, enough
 * free GPUs and, for GPU jobs, the right region are given there): free CPU and memory, labels, trust, price.
 */
export function fitsFound(req: JobRequirements, node: NodeCapacity): boolean {
  return (
    node.freeCpu >= req.cpu - 1e-9 &&
    node.freeMemoryMb >= req.memoryMb &&
    (req.region === undefined || node.region === req.region) &&
    (req.labels.length === 0 || labelsMatch(req, node)) &&
    (req.minTrust === 0 || trustOk(req, node)) &&
    priceOk(req, node) &&
    stakeOk(req, node) &&
    operatorOk(req, node)
  );
}

/** A check run is never placed with an operator whose work it checks (a node without a provider is its own operator). */
export function operatorOk(req: JobRequirements, node: NodeCapacity): boolean {
  return req.avoidProviders.size === 0 || !req.avoidProviders.has(node.providerId ?? node.nodeId);
}

/** The free GPUs a job would take on this node: k of one accepted class, lowest indices first. */
export function pickGpus(req: JobRequirements, slot: PoolSlot): number[] {
  // Sized up front: the list is kept with the reservation, and a list grown from [] holds room for 17.
  const out: number[] = new Array(req.gpuCount > 0 ? Math.min(req.gpuCount, slot.indices.length) : slot.indices.length);
  const free = slot.node.freeGpus;
  let k = 0;
  for (const i of slot.indices) {
    if (k === out.length) break;
    if (free.has(i)) out[k++] = i;
  }
  out.length = k;
  return out;
}

/** The accepted slot with the fewest free GPUs that still holds the job (best fit), if any. */
export function bestSlot(req: JobRequirements, slots: readonly PoolSlot[]): PoolSlot | undefined {
  let best: PoolSlot | undefined;
  for (const s of slots) if (s.free >= req.gpuCount && (!best || s.free < best.free)) best = s;
  return best;
}

/**
 * The full check over one node, in funnel order: the first filter that rejects it, or null when the job
 * fits there now. `failedBefore` is reported, but placement treats it as a preference (see placer.ts).
 */
export function rejectNode(req: JobRequirements, node: NodeCapacity): FilterName | null {
  if (!node.schedulable) return node.proofBlock !== null && node.status === 'online' && node.adminState === 'active' ? 'proof' : 'state';
  let slots: PoolSlot[] | undefined;
  if (req.gpuCount > 0) {
    const acc = acceptableSlots(req, node);
    if (typeof acc === 'string') return acc;
    if (!acc.some((s) => s.indices.length >= req.gpuCount)) return 'gpuCount';
    slots = acc;
  }
  if (req.region !== undefined && node.region !== req.region) return 'region';
  if (!labelsMatch(req, node)) return 'labels';
  if (!trustOk(req, node)) return 'trust';
  if (node.cpuCores < req.cpu - 1e-9) return 'cpu';
  if (node.memoryMb < req.memoryMb) return 'memory';
  if (!priceOk(req, node)) return 'price';
  if (!stakeOk(req, node)) return 'stake';
  if (!operatorOk(req, node)) return 'operator';
  if (req.avoid.has(node.nodeId)) return 'failedBefore';
  if (slots && !bestSlot(req, slots)) return 'busy';
  if (node.freeCpu < req.cpu - 1e-9 || node.freeMemoryMb < req.memoryMb) return 'busy';
  return null;
}

/**
 * Whether the node could run the job once idle (every filter but failedBefore and busy): the test of market
 * demand (services/market.ts), so a queued job counts only where some live node could really take it.
 */
export function fitsWhenIdle(req: JobRequirements, node: NodeCapacity): boolean {
  const why = rejectNode(req, node);
  return why === null || why === 'busy' || why === 'failedBefore';
}
