/**
 * In-memory capacity index: every node's free GPUs, CPU and memory, indexed so a placement never scans all
 * nodes. A cache, never the truth: updated incrementally on placement (reserve), completion (release),
 * heartbeat, registration and node loss (upsertNode / setSchedulable / setStatus), rebuilt from the store
 * at start. The market's view lives here too: each node's asks, stake and stake locks, and per class the
 * quote (index price and floor) the filters price nodes with.
 *
 * Layout. GPUs are grouped into pools: one per (GPU class, region). A pool keeps its schedulable nodes in
 * buckets by how many GPUs of that class are free on the node, so a job needing k GPUs looks only at buckets
 * k, k+1, … of the pools whose class it accepts (fewest sufficient first: best fit, which keeps whole nodes
 * free for multi-GPU jobs). CPU-only jobs use a second structure: schedulable nodes in buckets by whole free
 * cores. Buckets are arrays with swap-remove, so every move is O(1) and a search can start at a random offset.
 * A node with GPUs of two classes sits in two pools; a job takes all its GPUs from one class.
 *
 * "No fit" without scanning (issue 18). Beside the free-GPU buckets, every pool keeps its nodes in cells by
 * (free GPUs, whole free cores), and every cell (and every CPU bucket) an upper bound of its nodes' free
 * memory (exact after a scan of the cell, raised on insert, left on removal). A node with k free GPUs, c free
 * cores and m free MiB lies in a cell at level >= k, core bucket >= floor(c), with bound >= m: the exact
 * search (exact-search.ts) looks only there, so it finds a node whenever one fits, and a job that fits
 * nowhere costs a walk over the cells (a few thousand numbers, independent of the fleet) once bounds are tight.
 * Each level also lists its non-empty cells (Pool.live, a bit per level in Pool.liveMask), kept on every move:
 * the bounded search (search.ts) samples from them without looking at empty or too small cells.
 */
import type { GpuDevice, GpuVendor, NodeAdminState, NodeStatus } from '@gpux/protocol';
import { CPU_CLASS, marketClassOf } from '../market/classes.js';
import type { ClassQuote } from '../market/clearing.js';
import type { NodeProofRecord, NodeRecord } from '../records.js';
import { emptyReputation, type ReputationState } from '../trust/reputation.js';
import { classRejection, type GpuClassInfo, gpuClassOf } from './gpu-class.js';
import { emptyNodeStats, type NodeStats } from './node-stats.js';
import { QuoteBook } from './quotes.js';
import type { JobRequirements, TrustTier } from './requirements.js';

export interface Pool {
  key: string;
  cls: GpuClassInfo;
  region: string | undefined;
  /** buckets[f]: slots of schedulable nodes with exactly f free GPUs of this class. */
  buckets: PoolSlot[][];
  /** The largest node ever seen in the pool: a job bigger than this skips the pool without looking. */
  maxCpuCores: number;
  maxMemoryMb: number;
  /** The most GPUs of this class on one node ever seen: a job wanting more fits no node of the pool. */
  maxGpus: number;
  /** The market class its GPUs are priced in (core market/classes.ts), named once. */
  marketClass: string;
  /** A small number per GPU class in this index (the regions' pools of one class share it): the bounded search's groups. */
  classIdx: number;
  /** cells[f][b]: the slots of buckets[f] whose node has b whole free cores (see cpuBucketOf); made on first use. */
  cells: FitCell[][];
  /** cellTop[f]: no cell of level f above this core bucket holds a slot (an upper bound, lowered by the searches). */
  cellTop: number[];
  /** live[f]: the cells of level f that hold a slot, in no order (kept on every move): what the bounded search samples. */
  live: FitCell[][];
  /** Bit f (f < 31) set while live[f] is not empty: the search skips empty levels without looking at their lists. */
  liveMask: number;
  /** GPUs of this class on the pool's schedulable nodes, and how many of them are free (kept on every move; scarcity.ts). */
  gpus: number;
  freeGpus: number;
  /**
   * The pool's schedulable nodes by size, for the rare-size prior (scarcity.ts): counts by whole cores (cpuBucketOf)
   * and by memory (memSizeBucketOf) of the node's total, kept when a node joins or leaves the pool's schedulable set.
   */
  nodes: number;
  byCores: number[];
  byMemory: number[];
  /** Suffix sums of byCores and byMemory (nodes at least this large), rebuilt on the next read after a change. */
  coresAtLeast: number[];
  memoryAtLeast: number[];
  sizesDirty: boolean;
}

/** Nodes of one (pool, free GPUs, whole free cores) cell, or of one CPU bucket, with a bound on their free memory. */
export interface FitCell {
  slots: PoolSlot[];
  /** No slot in the cell has more free memory than this (exact after a full scan; raised on insert, kept on removal). */
  memMax: number;
  /** The cell's core bucket (its nodes have this many whole free cores), and its place in its level's live list (-1: empty). */
  cores: number;
  livePos: number;
}

export interface PoolSlot {
  node: NodeCapacity;
  pool: Pool;
  /** Indices of the node's GPUs of this class, and how many. */
  indices: number[];
  size: number;
  free: number;
  /** Position in pool.buckets[free]; -1 while the node is not schedulable. */
  pos: number;
  /** The fit cell holding the slot, and its position there; null / -1 while not schedulable. */
  cell: FitCell | null;
  cellPos: number;
}

export interface NodeCapacity {
  nodeId: string;
  hostname: string;
  gpus: GpuDevice[];
  freeGpus: Set<number>;
  /** gpus.length and freeGpus.size, kept as plain numbers for the scores (no look into the array or the set). */
  gpuTotal: number;
  freeGpuCount: number;
  cpuCores: number;
  freeCpu: number;
  memoryMb: number;
  freeMemoryMb: number;
  region: string | undefined;
  labels: Record<string, string>;
  /** Online and active: the only nodes in the buckets. */
  schedulable: boolean;
  simulated: boolean;
  status: NodeStatus;
  adminState: NodeAdminState;
  adminReason: string | null;
  /**
   * Why dispatch is blocked until the node proves its hardware (issue 12: the challenge required and not
   * passed, or failed, or timed out), or null. A blocked node stays out of the buckets (explain: 'proof').
   */
  proofBlock: string | null;
  /** Replicas go to distinct operators: the node's provider, or the node itself when it has none. */
  operatorId: string;
  /** The account paid for the node's work; null for a node registered without a provider token. */
  providerId: string | null;
  /** From the node's record (nodes.tier): open, curated (an operator vouched) or attested (verified evidence). */
  trustTier: TrustTier;
  /**
   * The proof-of-hardware score (measured speed over the class table's, 1 = as expected) while the node is
   * proven; null otherwise. Feeds the performance score and the expected runtime (scores.ts).
   */
  provenScore: number | null;
  /** The provider's gross ask (core market/clearing.ts) per GPU-hour for the node's GPU class; undefined: no ask. */
  askPerGpuHour: number | undefined;
  /** The same for CPU-only work (class cpu), per job-hour. */
  askPerJobHour: number | undefined;
  /** The market class of the node's first GPU (what its GPU ask is for), and its quote; undefined without GPUs. */
  gpuClass: string | undefined;
  gpuQuote: ClassQuote | undefined;
  /** The quote of class cpu (CPU-only work). */
  cpuQuote: ClassQuote;
  /** Stake bonded to the node (USDC minor units), and the part its reservations lock. */
  stake: number;
  stakeLocked: number;
  stats: NodeStats;
  /** Decayed good and bad outcomes (trust/reputation.ts): the reliability score. Empty (neutral) for a new node. */
  reputation: ReputationState;
  /** Smoothed heartbeat round trip reported by the agent. */
  rttMs: number | undefined;
  activeAttempts: number;
  slots: PoolSlot[];
  cpuBucket: number;
  cpuPos: number;
  /**
   * Scores that change only with stats and reputation, recomputed at most once per SCORE_CACHE_MS (scores.ts) and
   * kept on the node itself (the scores read no other object); scoresAt −∞: recompute on the next look.
   */
  scoresAt: number;
  reliabilityScore: number;
  performanceScore: number;
}

export interface Reservation {
  attemptId: string;
  nodeId: string;
  gpuIndices: number[];
  cpu: number;
  memoryMb: number;
  buyerId?: string;
  jobId?: string;
  /** Members of a gang job share their job id here; see takeEndedGangs. */
  gang?: boolean;
  /** Stake of the node this attempt locks while it holds the reservation (market jobs). */
  stakeLock?: number;
}

/** Free CPU buckets: whole cores, the last bucket holding everything above. */
export const CPU_BUCKETS = 257;
export const cpuBucketOf = (free: number) => (free <= 0 ? 0 : Math.min(CPU_BUCKETS - 1, Math.floor(free + 1e-9)));

/** Memory size buckets (Pool.byMemory): quarter octaves of GiB, 1 GiB to 64 TiB. */
export const MEM_SIZE_BUCKETS = 65;
export const memSizeBucketOf = (mb: number) => (mb < 1024 ? 0 : Math.min(MEM_SIZE_BUCKETS - 1, Math.floor(4 * Math.log2(mb / 1024) + 1e-9)));

/** A node joins (+1) or leaves (−1) its pools' schedulable sets: their size counts. */
function countSizes(n: NodeCapacity, sign: 1 | -1): void {
  const cb = cpuBucketOf(n.cpuCores);
  const mb = memSizeBucketOf(n.memoryMb);
  for (const s of n.slots) {
    const p = s.pool;
    p.nodes += sign;
    p.byCores[cb] = (p.byCores[cb] as number) + sign;
    p.byMemory[mb] = (p.byMemory[mb] as number) + sign;
    p.sizesDirty = true;
  }
}

/**
 * Schedulable nodes of the pool at least this large in cores and at least this large in memory, each counted alone,
 * the smaller count (whole cores, quarter octaves of memory): how rare room of this size is in the pool. O(1) but
 * after a node joined or left the pool (one walk over its size buckets).
 */
export function nodesAtLeast(pool: Pool, cores: number, memoryMb: number): number {
  if (pool.sizesDirty) {
    for (let b = CPU_BUCKETS - 1; b >= 0; b--) pool.coresAtLeast[b] = (pool.coresAtLeast[b + 1] as number) + (pool.byCores[b] as number);
    for (let b = MEM_SIZE_BUCKETS - 1; b >= 0; b--) pool.memoryAtLeast[b] = (pool.memoryAtLeast[b + 1] as number) + (pool.byMemory[b] as number);
    pool.sizesDirty = false;
  }
  return Math.min(pool.coresAtLeast[cpuBucketOf(cores)] as number, pool.memoryAtLeast[memSizeBucketOf(memoryMb)] as number);
}

export class CapacityIndex {
  private readonly nodes = new Map<string, NodeCapacity>();
  private readonly reservations = new Map<string, Reservation>();
  private readonly heldByNode = new Map<string, Set<string>>();
  private readonly pools = new Map<string, Pool>();
  private readonly poolCache = new Map<string, Pool[]>();
  private readonly classIdx = new Map<string, number>();
  readonly cpuBuckets: NodeCapacity[][] = Array.from({ length: CPU_BUCKETS }, () => []);
  /** cpuMemMax[b]: an upper bound of the free memory of the nodes in cpuBuckets[b] (as FitCell.memMax). */
  readonly cpuMemMax: number[] = Array.from({ length: CPU_BUCKETS }, () => 0);
  private readonly usageByBuyer = new Map<string, number>();
  private readonly endedGangs = new Set<string>();
  /** Index price and floor per market class (core market/clearing.ts); nodes point at their class's quote. */
  readonly quotes = new QuoteBook();
  /** GPUX_CHALLENGE=required: only nodes whose proof state is 'proven' are schedulable. Set before nodes are added. */
  requireProof = false;

  /** Add or refresh a node from its record; keeps reservations already held on it, its stats and reputation. */
  upsertNode(node: NodeRecord, stats?: NodeStats): NodeCapacity {
    const ad = node.advertisement;
    const old = this.nodes.get(node.id);
    if (old) {
      if (old.schedulable) countSizes(old, -1);
      this.unbucket(old);
    }
    const first = ad.gpus[0];
    const gpuClass = first ? marketClassOf(first) : undefined;
    const n: NodeCapacity = {
      nodeId: node.id,
      hostname: ad.hostname,
      gpus: ad.gpus,
      freeGpus: new Set(ad.gpus.map((g) => g.index)),
      gpuTotal: ad.gpus.length,
      freeGpuCount: ad.gpus.length,
      cpuCores: ad.cpuCores,
      freeCpu: ad.cpuCores,
      memoryMb: ad.memoryMb,
      freeMemoryMb: ad.memoryMb,
      region: ad.region,
      labels: ad.labels,
      schedulable: false, // set below, once held reservations are applied
      simulated: node.simulated,
      status: node.status,
      adminState: node.adminState,
      adminReason: node.adminReason ?? null,
      proofBlock: this.proofBlockOf(node.proof),
      operatorId: node.providerId ?? node.id,
      providerId: node.providerId,
      trustTier: node.tier ?? 'open',
      provenScore: provenScoreOf(node),
      askPerGpuHour: old?.askPerGpuHour,
      askPerJobHour: old?.askPerJobHour,
      gpuClass,
      gpuQuote: gpuClass === undefined ? undefined : this.quotes.of(gpuClass),
      cpuQuote: this.quotes.of(CPU_CLASS),
      stake: old?.stake ?? 0,
      stakeLocked: 0,
      stats: stats ?? old?.stats ?? emptyNodeStats(node.registeredAt),
      reputation: old?.reputation ?? emptyReputation(node.registeredAt),
      rttMs: old?.rttMs,
      activeAttempts: 0,
      slots: [],
      cpuBucket: 0,
      cpuPos: -1,
      scoresAt: Number.NEGATIVE_INFINITY,
      reliabilityScore: 0,
      performanceScore: 0,
    };
    const byClass = new Map<string, number[]>();
    for (const g of ad.gpus) {
      const key = gpuClassOf(g).key;
      const list = byClass.get(key) ?? [];
      list.push(g.index);
      byClass.set(key, list);
    }
    for (const [, indices] of byClass) {
      const g = ad.gpus.find((x) => x.index === indices[0]) as GpuDevice;
      const pool = this.poolOf(gpuClassOf(g), ad.region);
      pool.maxCpuCores = Math.max(pool.maxCpuCores, ad.cpuCores);
      pool.maxMemoryMb = Math.max(pool.maxMemoryMb, ad.memoryMb);
      pool.maxGpus = Math.max(pool.maxGpus, indices.length);
      n.slots.push({ node: n, pool, indices, size: indices.length, free: indices.length, pos: -1, cell: null, cellPos: -1 });
    }
    this.nodes.set(node.id, n);
    for (const id of this.heldByNode.get(node.id) ?? []) {
      const r = this.reservations.get(id);
      if (r) this.take(n, r, -1);
    }
    if (node.status === 'online' && node.adminState === 'active' && n.proofBlock === null) {
      n.schedulable = true;
      this.bucket(n);
      countSizes(n, 1);
    }
    return n;
  }

  setSchedulable(nodeId: string, schedulable: boolean): void {
    const n = this.nodes.get(nodeId);
    if (!n || n.schedulable === schedulable) return;
    if (schedulable) {
      n.schedulable = true;
      this.bucket(n);
      countSizes(n, 1);
    } else {
      this.unbucket(n);
      countSizes(n, -1);
      n.schedulable = false;
    }
  }

  /**
   * A status change the index learned from the store (the expiry pass marked the node offline): the node
   * leaves the buckets and, being offline, every count of supply, until a heartbeat brings it back.
   */
  setStatus(nodeId: string, status: NodeStatus): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.status = status;
    this.setSchedulable(nodeId, status === 'online' && n.adminState === 'active' && n.proofBlock === null);
  }

  /** An admin-state change the index learned from the store (auto-cordon) rather than from a record. */
  setAdminState(nodeId: string, state: NodeAdminState, reason: string | null): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.adminState = state;
    n.adminReason = reason;
    this.setSchedulable(nodeId, n.status === 'online' && state === 'active' && n.proofBlock === null);
  }

  /** A proof-of-hardware verdict the index learned from the store (challenge passed, failed or timed out). */
  setProof(nodeId: string, proof: NodeProofRecord | undefined): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.proofBlock = this.proofBlockOf(proof);
    // The measured score feeds the performance score (scores.ts): recomputed on the next look.
    n.provenScore = provenScoreOf({ proof });
    n.scoresAt = Number.NEGATIVE_INFINITY;
    this.setSchedulable(nodeId, n.status === 'online' && n.adminState === 'active' && n.proofBlock === null);
  }

  /** Why a node with this proof takes no job (null: it may), when the challenge is required. */
  private proofBlockOf(proof: NodeProofRecord | undefined): string | null {
    if (!this.requireProof || proof?.state === 'proven') return null;
    if (proof?.state === 'failed') return proof.reason ?? 'the proof-of-hardware challenge failed';
    return proof?.state === 'challenging' ? 'the proof-of-hardware challenge is running' : 'not yet proven by the proof-of-hardware challenge';
  }

  setStats(nodeId: string, stats: NodeStats): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.stats = stats;
    n.scoresAt = Number.NEGATIVE_INFINITY;
  }

  /** The node's reputation as the store last wrote it (the scheduling pass reads changes, like stats). */
  setReputation(nodeId: string, reputation: ReputationState): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.reputation = reputation;
    n.scoresAt = Number.NEGATIVE_INFINITY;
  }

  /** Smooth the agent's reported round trip (EWMA, 30% weight on the newest). */
  noteRtt(nodeId: string, rttMs: number): void {
    const n = this.nodes.get(nodeId);
    if (!n || !Number.isFinite(rttMs) || rttMs < 0) return;
    n.rttMs = n.rttMs === undefined ? rttMs : n.rttMs * 0.7 + rttMs * 0.3;
  }

  /** Market hook: the node's gross asks (integer minor units per GPU-hour, per job-hour for CPU work), or undefined for none. */
  setAsk(nodeId: string, askPerGpuHour: number | undefined, askPerJobHour?: number): void {
    const n = this.nodes.get(nodeId);
    if (!n) return;
    n.askPerGpuHour = askPerGpuHour;
    n.askPerJobHour = askPerJobHour;
  }

  /** Market hook: the stake bonded to the node (the store's balance of stake:<node>). */
  setStake(nodeId: string, stake: number): void {
    const n = this.nodes.get(nodeId);
    if (n) n.stake = stake;
  }

  get(nodeId: string): NodeCapacity | undefined {
    return this.nodes.get(nodeId);
  }

  /** Every node (explain and statistics use this; placement never does). */
  allNodes(): IterableIterator<NodeCapacity> {
    return this.nodes.values();
  }

  /** Nodes with GPUs of `vendor` (undefined: every node; 'none': every node). Kept for readers of the old index. */
  *candidates(vendor: GpuVendor | undefined | 'none'): Iterable<NodeCapacity> {
    for (const n of this.nodes.values()) if (vendor === undefined || vendor === 'none' || n.gpus.some((g) => g.vendor === vendor)) yield n;
  }

  /** The pools whose GPU class a job accepts (and in its region, if it names one). Cached per GPU shape. */
  poolsFor(req: JobRequirements): Pool[] {
    const key = req.poolKey;
    let list = this.poolCache.get(key);
    if (!list) {
      list = [...this.pools.values()].filter((p) => classRejection(p.cls, req.gpu) === null && (req.region === undefined || p.region === req.region));
      this.poolCache.set(key, list);
    }
    return list;
  }

  /** How many GPU classes the index has seen (Pool.classIdx is below it). */
  get classCount(): number {
    return this.classIdx.size;
  }

  private classIndexOf(key: string): number {
    let i = this.classIdx.get(key);
    if (i === undefined) {
      i = this.classIdx.size;
      this.classIdx.set(key, i);
    }
    return i;
  }

  allPools(): IterableIterator<Pool> {
    return this.pools.values();
  }

  reserve(r: Reservation): void {
    if (this.reservations.has(r.attemptId)) return;
    this.reservations.set(r.attemptId, r);
    let held = this.heldByNode.get(r.nodeId);
    if (!held) {
      held = new Set();
      this.heldByNode.set(r.nodeId, held);
    }
    held.add(r.attemptId);
    if (r.buyerId !== undefined) this.usageByBuyer.set(r.buyerId, (this.usageByBuyer.get(r.buyerId) ?? 0) + usageOf(r));
    const n = this.nodes.get(r.nodeId);
    if (n) this.take(n, r, -1);
  }

  /** Give a reservation's capacity back. Returns it, or undefined if there was none (release is idempotent). */
  release(attemptId: string): Reservation | undefined {
    const r = this.reservations.get(attemptId);
    if (!r) return undefined;
    this.reservations.delete(attemptId);
    this.heldByNode.get(r.nodeId)?.delete(attemptId);
    if (r.buyerId !== undefined) {
      const left = (this.usageByBuyer.get(r.buyerId) ?? 0) - usageOf(r);
      if (left <= 1e-9) this.usageByBuyer.delete(r.buyerId);
      else this.usageByBuyer.set(r.buyerId, left);
    }
    if (r.gang && r.jobId !== undefined) this.endedGangs.add(r.jobId);
    const n = this.nodes.get(r.nodeId);
    if (n) this.take(n, r, +1);
    return r;
  }

  /** Market hook: the stake a held reservation locks, once its clearing price is known (placements are priced after placing). */
  setStakeLock(attemptId: string, stakeLock: number): void {
    const r = this.reservations.get(attemptId);
    if (!r) return;
    const n = this.nodes.get(r.nodeId);
    if (n) n.stakeLocked += stakeLock - (r.stakeLock ?? 0);
    r.stakeLock = stakeLock;
  }

  hasReservation(attemptId: string): boolean {
    return this.reservations.has(attemptId);
  }

  /** Ids of the attempts holding room on the node. */
  reservedOn(nodeId: string): string[] {
    return [...(this.heldByNode.get(nodeId) ?? [])];
  }

  /** The reservations holding room on the node (issue 17: what runs there, for reservations' predicted starts). */
  *reservationsOn(nodeId: string): IterableIterator<Reservation> {
    for (const id of this.heldByNode.get(nodeId) ?? []) {
      const r = this.reservations.get(id);
      if (r) yield r;
    }
  }

  /**
   * Jobs of gang members released since the last call. When one member ends, the store may end its siblings
   * in the same transaction; the scheduling pass reads those jobs' attempts back and releases the ended ones.
   */
  takeEndedGangs(): string[] {
    const out = [...this.endedGangs];
    this.endedGangs.clear();
    return out;
  }

  /** What a buyer holds now: GPUs, plus 1% per attempt so CPU-only buyers are ordered too. */
  buyerUsage(buyerId: string): number {
    return this.usageByBuyer.get(buyerId) ?? 0;
  }

  usage(nodeId: string): { gpusBusy: number; activeAttempts: number } {
    const n = this.nodes.get(nodeId);
    return { gpusBusy: n ? n.gpus.length - n.freeGpus.size : 0, activeAttempts: this.heldByNode.get(nodeId)?.size ?? 0 };
  }

  get size(): number {
    return this.nodes.size;
  }

  // ---- bookkeeping ----

  private poolOf(cls: GpuClassInfo, region: string | undefined): Pool {
    const key = `${cls.key}@${region ?? ''}`;
    let p = this.pools.get(key);
    if (!p) {
      p = {
        key,
        cls,
        region,
        buckets: [],
        maxCpuCores: 0,
        maxMemoryMb: 0,
        maxGpus: 0,
        marketClass: marketClassOf({ vendor: cls.vendor, model: cls.model, vramMb: cls.vramGb * 1024 }),
        classIdx: this.classIndexOf(cls.key),
        cells: [],
        cellTop: [],
        live: [],
        liveMask: 0,
        gpus: 0,
        freeGpus: 0,
        nodes: 0,
        byCores: new Array<number>(CPU_BUCKETS).fill(0),
        byMemory: new Array<number>(MEM_SIZE_BUCKETS).fill(0),
        coresAtLeast: new Array<number>(CPU_BUCKETS + 1).fill(0),
        memoryAtLeast: new Array<number>(MEM_SIZE_BUCKETS + 1).fill(0),
        sizesDirty: false,
      };
      this.pools.set(key, p);
      this.poolCache.clear();
    }
    return p;
  }

  /** Apply a reservation to a node: sign -1 takes, +1 gives back. */
  private take(n: NodeCapacity, r: Reservation, sign: -1 | 1): void {
    const bucketed = n.schedulable;
    if (bucketed) this.unbucket(n);
    for (const i of r.gpuIndices) {
      if (sign < 0) n.freeGpus.delete(i);
      else n.freeGpus.add(i);
    }
    n.freeGpuCount = n.freeGpus.size;
    for (const s of n.slots) s.free = freeOf(s.indices, n.freeGpus);
    n.freeCpu += sign * r.cpu;
    n.freeMemoryMb += sign * r.memoryMb;
    n.activeAttempts += sign < 0 ? 1 : -1;
    n.stakeLocked -= sign * (r.stakeLock ?? 0);
    if (bucketed) this.bucket(n);
  }

  private bucket(n: NodeCapacity): void {
    const cb = cpuBucketOf(n.freeCpu);
    for (const s of n.slots) {
      const p = s.pool;
      const b = p.buckets;
      while (b.length <= s.free) {
        b.push([]);
        p.cells.push([]);
        p.cellTop.push(0);
        p.live.push([]);
      }
      const arr = b[s.free] as PoolSlot[];
      s.pos = arr.length;
      arr.push(s);
      const row = p.cells[s.free] as FitCell[];
      let cell = row[cb];
      if (!cell) {
        cell = { slots: [], memMax: 0, cores: cb, livePos: -1 };
        row[cb] = cell;
      }
      s.cell = cell;
      s.cellPos = cell.slots.length;
      cell.slots.push(s);
      if (cell.livePos < 0) {
        const live = p.live[s.free] as FitCell[];
        cell.livePos = live.length;
        live.push(cell);
        if (s.free < 31) p.liveMask |= 1 << s.free;
      }
      if (n.freeMemoryMb > cell.memMax) cell.memMax = n.freeMemoryMb;
      if (cb > (p.cellTop[s.free] as number)) p.cellTop[s.free] = cb;
      p.gpus += s.indices.length;
      p.freeGpus += s.free;
    }
    n.cpuBucket = cb;
    const arr = this.cpuBuckets[cb] as NodeCapacity[];
    n.cpuPos = arr.length;
    arr.push(n);
    if (n.freeMemoryMb > (this.cpuMemMax[cb] as number)) this.cpuMemMax[cb] = n.freeMemoryMb;
  }

  private unbucket(n: NodeCapacity): void {
    for (const s of n.slots) {
      if (s.pos < 0) continue;
      const arr = s.pool.buckets[s.free] as PoolSlot[];
      const last = arr.pop() as PoolSlot;
      if (last !== s) {
        arr[s.pos] = last;
        last.pos = s.pos;
      }
      s.pos = -1;
      const cell = s.cell as FitCell;
      const lastInCell = cell.slots.pop() as PoolSlot;
      if (lastInCell !== s) {
        cell.slots[s.cellPos] = lastInCell;
        lastInCell.cellPos = s.cellPos;
      }
      if (cell.slots.length === 0) {
        const live = s.pool.live[s.free] as FitCell[];
        const lastLive = live.pop() as FitCell;
        if (lastLive !== cell) {
          live[cell.livePos] = lastLive;
          lastLive.livePos = cell.livePos;
        }
        cell.livePos = -1;
        if (live.length === 0 && s.free < 31) s.pool.liveMask &= ~(1 << s.free);
      }
      s.cell = null;
      s.cellPos = -1;
      s.pool.gpus -= s.indices.length;
      s.pool.freeGpus -= s.free;
    }
    if (n.cpuPos >= 0) {
      const arr = this.cpuBuckets[n.cpuBucket] as NodeCapacity[];
      const last = arr.pop() as NodeCapacity;
      if (last !== n) {
        arr[n.cpuPos] = last;
        last.cpuPos = n.cpuPos;
      }
      n.cpuPos = -1;
    }
  }
}

/** A proven node's measured score (finite, positive), else null: a failed or stale proof says nothing about speed. */
export function provenScoreOf(node: Pick<NodeRecord, 'proof'>): number | null {
  const p = node.proof;
  if (p?.state !== 'proven' || p.score === null || !Number.isFinite(p.score) || p.score <= 0) return null;
  return p.score;
}

/** How many of these GPU indices are free (a loop, not reduce: reserve and release run it on every placement). */
function freeOf(indices: readonly number[], free: ReadonlySet<number>): number {
  let k = 0;
  for (let j = 0; j < indices.length; j++) if (free.has(indices[j] as number)) k++;
  return k;
}

function usageOf(r: Reservation): number {
  return r.gpuIndices.length + 0.01;
}
