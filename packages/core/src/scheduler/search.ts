/**
 * The bounded candidate search: a sample of the nodes that fit a job, at a cost that depends on the sample's
 * limits, never on the number of nodes (kube-scheduler's percentageOfNodesToScore and Sparrow's sampling make the
 * same trade). The engine scores the sample and takes the best (placer.ts); when the sample holds no node the job
 * may use, the exact search (exact-search.ts) decides whether any node fits.
 *
 * GPU jobs. Levels in packing order: nodes with the fewest sufficient free GPUs first. Within a level the search
 * walks the index's live fit cells (capacity-index.ts: a pool's nodes by free GPUs and whole free cores), not its
 * nodes: cells without enough free cores, or whose memory bound is below the job's need, are passed over unvisited,
 * so nearly full nodes whose CPU or memory ran out first cost nothing (before, they used up the visits and a quarter
 * of the decisions at 50,000 nodes fell through to the exact search). It takes one node of each cell in turn (the
 * pools in turns from a random one, each pool's cells from a random one), then a second of each, and so on, and at
 * most `perGroup` usable candidates per group, a GPU class at one level: the sample spans the classes and levels
 * that can take the job instead of filling up at the lowest level. Where the groups are fewer than `minSample` ÷
 * perGroup, each group gets its share of minSample (nodes of one kind still differ in reliability, price, latency).
 * Issue 18: the pass terms (demand, the pool prior, scarcity) choose among classes, levels and free-core counts,
 * and the engine's choice was past the 16th of 128 candidates taken level by level in half the replay's decisions;
 * 2 per group (about 17 candidates per GPU job at 50,000 nodes) gives the replay's delays of those 128.
 * A level gets at most 1/8 of the visits (at least `want`), and the sample stops at `want` usable candidates or
 * `maxVisits` visits.
 *
 * CPU-only jobs: the index's buckets by whole free cores, fewest sufficient first, each from a random offset.
 *
 * With `best`, the collector scores each fitting node as it is found and keeps only the best (the first of equal
 * scores, usable before avoided): the same choice as scoring the whole sample, without a list of candidates.
 */
import type { Random } from '../ports.js';
import { CPU_BUCKETS, type CapacityIndex, type FitCell, type NodeCapacity, type Pool, type PoolSlot } from './capacity-index.js';
import { fitsFound } from './filters.js';
import type { JobRequirements } from './requirements.js';

export interface Candidate {
  node: NodeCapacity;
  /** The GPU pool slot the job takes its GPUs from; undefined for CPU-only jobs. */
  slot: PoolSlot | undefined;
  /** The job failed on this node before: used only when nothing else fits. */
  avoided: boolean;
  score: number;
}

export interface SearchLimits {
  want: number;
  maxVisits: number;
  /** Gang and replica searches need distinct nodes (a node with two GPU classes sits in two pools). */
  distinct: boolean;
  /** GPU jobs: usable candidates per GPU class and free-GPU level at most; default: no limit but `want`. */
  perGroup?: number | undefined;
  /** GPU jobs: with too few groups for this many candidates at perGroup each, each group gets its share of this. */
  minSample?: number | undefined;
  /**
   * Score each fitting node as it is found and keep only the best usable one and the best avoided one (the first of
   * equal scores), not the whole sample: what a one-node placement takes, without a candidate list to allocate.
   */
  best?: ((node: NodeCapacity, slot: PoolSlot | undefined) => number) | undefined;
}

export interface SearchResult {
  /** The fitting nodes found; with `best`, the best usable one first, then the best avoided one (each if any). */
  candidates: Candidate[];
  visits: number;
  /** Usable (not avoided) fitting nodes found. */
  found: number;
}

/**
 * Collects the fitting nodes a search visits (each once when `distinct`); `consider` answers false once `want`
 * usable candidates are found or `maxVisits` nodes were visited. Shared by the bounded and the exact search.
 */
export class CandidateCollector {
  readonly out: Candidate[] = [];
  /** Usable (not avoided) candidates found. */
  found = 0;
  visits = 0;
  private readonly seen: Set<string> | undefined;
  private readonly want: number;
  private readonly maxVisits: number;
  private readonly score: SearchLimits['best'];
  // With `best`: the best usable and the best avoided node so far, as plain fields (a Candidate is made once, in
  // result(), not on every better node).
  private usableNode: NodeCapacity | undefined;
  private usableSlot: PoolSlot | undefined;
  private usableScore = 0;
  private avoidedNode: NodeCapacity | undefined;
  private avoidedSlot: PoolSlot | undefined;
  private avoidedScore = 0;

  constructor(
    private readonly req: JobRequirements,
    lim: { want: number; distinct?: boolean | undefined; maxVisits: number; best?: SearchLimits['best'] },
  ) {
    this.want = lim.want;
    this.maxVisits = lim.maxVisits;
    this.seen = lim.distinct ? new Set<string>() : undefined;
    this.score = lim.best;
  }

  consider(node: NodeCapacity, slot: PoolSlot | undefined): boolean {
    this.visits++;
    const req = this.req;
    if (fitsFound(req, node) && !(this.seen?.has(node.nodeId) ?? false)) {
      this.seen?.add(node.nodeId);
      const avoided = req.avoid.size > 0 && req.avoid.has(node.nodeId);
      if (!avoided) this.found++;
      if (this.score) {
        const score = this.score(node, slot);
        if (avoided) {
          if (this.avoidedNode === undefined || score > this.avoidedScore) {
            this.avoidedNode = node;
            this.avoidedSlot = slot;
            this.avoidedScore = score;
          }
        } else if (this.usableNode === undefined || score > this.usableScore) {
          this.usableNode = node;
          this.usableSlot = slot;
          this.usableScore = score;
        }
      } else this.out.push({ node, slot, avoided, score: 0 });
    }
    return this.found < this.want && this.visits < this.maxVisits;
  }

  result(): SearchResult {
    if (this.usableNode) this.out.push({ node: this.usableNode, slot: this.usableSlot, avoided: false, score: this.usableScore });
    if (this.avoidedNode) this.out.push({ node: this.avoidedNode, slot: this.avoidedSlot, avoided: true, score: this.avoidedScore });
    return { candidates: this.out, visits: this.visits, found: this.found };
  }
}

export function searchCandidates(req: JobRequirements, index: CapacityIndex, random: Random | undefined, lim: SearchLimits): SearchResult {
  const c = new CandidateCollector(req, lim);
  const r = random ? random.next() : 0;
  const levelCap = Math.max(lim.want, Math.ceil(lim.maxVisits / 8));
  if (req.gpuCount > 0) {
    sampleGpuLevels(req, index, r, lim, levelCap, c);
  } else {
    // Bucket b holds nodes with [b, b+1) cores free. For a fractional request the bucket it falls in is mixed
    // (16.5 cores: a node with 16.0 free sits beside one with 16.7), so it is tried last, not first.
    const buckets = index.cpuBuckets;
    const whole = Math.ceil(req.cpu - 1e-9);
    for (let b = whole; b < buckets.length; b++) if (!sampleCpuBucket(buckets[b] as NodeCapacity[], r, levelCap, c)) return c.result();
    if (whole > Math.floor(req.cpu + 1e-9)) sampleCpuBucket(buckets[whole - 1] as NodeCapacity[], r, levelCap, c);
  }
  return c.result();
}

/** Up to levelCap nodes of one CPU bucket from a random offset; false when the sample stopped at its limits. */
function sampleCpuBucket(arr: NodeCapacity[], r: number, levelCap: number, c: CandidateCollector): boolean {
  const len = arr.length;
  const start = Math.floor(r * len);
  for (let j = 0; j < len && j < levelCap; j++) if (!c.consider(arr[(start + j) % len] as NodeCapacity, undefined)) return false;
  return true;
}

// Scratch lists of sampleGpuLevels, reused (a search runs to its end before the next one starts). Their used part is
// counted apart, never cut by `length = 0`: that drops the list's storage, and growing it back took about 1.5 KB of
// the 6 KB a GPU decision allocated at 50,000 nodes (bench/placement README). Entries past the count are stale, never read.
const scratchPools: Pool[] = [];
const scratchRows: FitCell[][] = [];
const scratchCls: number[] = [];
const scratchLevels: number[] = [];
const scratchGot: number[] = [];
const scratchMark: number[] = [];

/** The GPU branch of searchCandidates (see the top of the file); false when the sample stopped at its limits. */
function sampleGpuLevels(req: JobRequirements, index: CapacityIndex, r: number, lim: SearchLimits, levelCap: number, c: CandidateCollector): boolean {
  const all = index.poolsFor(req);
  const p0 = Math.floor(r * all.length);
  // The pools in turns from a random one, but a pool whose largest node is too small is skipped outright.
  const pools = scratchPools;
  let np = 0;
  let top = 0;
  for (let pi = 0; pi < all.length; pi++) {
    const p = all[(pi + p0) % all.length] as Pool;
    if (p.maxCpuCores < req.cpu - 1e-9 || p.maxMemoryMb < req.memoryMb) continue;
    pools[np++] = p;
    top = Math.max(top, p.buckets.length - 1);
  }
  // The core bucket a fitting node is in at the least (a fractional need shares it with nodes just short).
  const firstCb = Math.min(CPU_BUCKETS - 1, Math.floor(req.cpu + 1e-9));
  const maxChecks = 4 * lim.maxVisits;
  // The rows (a pool's live cells at one level) that may hold a fitting node, level by level, the pools in turns from
  // a random one; and the groups (GPU class, level) they make.
  const rows = scratchRows;
  const rowCls = scratchCls;
  const levels = scratchLevels;
  const got = scratchGot;
  const mark = scratchMark;
  let nRows = 0;
  let nLevels = 0;
  while (got.length < index.classCount) got.push(0);
  while (mark.length < index.classCount) mark.push(-1);
  mark.fill(-1);
  let groups = 0;
  for (let f = req.gpuCount; f <= top; f++) {
    levels[nLevels++] = nRows;
    const bit = f < 31 ? 1 << f : 0;
    for (let pi = 0; pi < np; pi++) {
      const pool = pools[pi] as Pool;
      // An empty level is skipped by the pool's mask; a level whose nodes all have fewer whole free cores than the
      // job needs, unseen (its fit cells say so).
      if (bit !== 0 && (pool.liveMask & bit) === 0) continue;
      const live = pool.live[f];
      if (!live || live.length === 0 || coresTop(pool, f) < firstCb) continue;
      rows[nRows] = live;
      rowCls[nRows++] = pool.classIdx;
      if (mark[pool.classIdx] !== f) {
        mark[pool.classIdx] = f;
        groups++;
      }
    }
  }
  levels[nLevels++] = nRows;
  // Candidates per group: perGroup, or more when there are too few groups to make minSample.
  const quota = Math.max(lim.perGroup ?? Number.POSITIVE_INFINITY, Math.ceil((lim.minSample ?? 0) / Math.max(1, groups)));
  let checks = 0;
  for (let li = 0; li + 1 < nLevels; li++) {
    const from = levels[li] as number;
    const to = levels[li + 1] as number;
    if (from === to) continue;
    let longest = 0;
    for (let ri = from; ri < to; ri++) longest = Math.max(longest, (rows[ri] as FitCell[]).length);
    got.fill(0);
    let seen = 0;
    for (let pass = 0; seen < levelCap && checks < maxChecks; pass++) {
      let visited = false;
      let open = true;
      for (let j = 0; j < longest && open && seen < levelCap && checks < maxChecks; j++) {
        open = false;
        for (let ri = from; ri < to; ri++) {
          const g = rowCls[ri] as number;
          if ((got[g] as number) >= quota) continue;
          open = true;
          const live = rows[ri] as FitCell[];
          const len = live.length;
          if (j >= len) continue;
          checks++;
          const cell = live[(Math.floor(r * len) + j) % len] as FitCell;
          if (cell.cores < firstCb || cell.memMax < req.memoryMb) continue;
          const n = cell.slots.length;
          if (pass >= n) continue;
          visited = true;
          seen++;
          const slot = cell.slots[(Math.floor(r * n) + pass) % n] as PoolSlot;
          const before = c.found;
          if (!c.consider(slot.node, slot)) return false;
          if (c.found > before) got[g] = (got[g] as number) + 1;
        }
      }
      if (!visited) break;
    }
  }
  return true;
}

/**
 * The highest core bucket holding a slot of the pool's level `f` (its fit cells, capacity-index.ts): no node of
 * that level has more whole free cores. The bound is lowered here past emptied cells, as the exact search does.
 */
export function coresTop(pool: Pool, f: number): number {
  const row = pool.cells[f];
  let top = pool.cellTop[f] ?? 0;
  if (!row) return top;
  // livePos < 0: the cell is empty (read on the cell itself, not its slot list).
  while (top > 0 && (row[top]?.livePos ?? -1) < 0) top--;
  pool.cellTop[f] = top;
  return top;
}
