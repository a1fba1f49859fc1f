/**
 * Reservations and backfill (issue 17), EASY-style, inside one pass. When a job of the pass's fair order does not
 * fit (a gang: N distinct nodes, all or nothing), it gets a reservation: the N eligible nodes where, by the
 * predicted ends of what runs on them, it could start soonest, and that start. Later jobs of the pass may still use
 * a reserved node when they are predicted to end before the reservation starts, or when what they take leaves the
 * reserved job its room at that start (the node's spare). So a gang or an 8-GPU job is no longer starved by a stream
 * of 1-GPU jobs that each fit the room it waits for.
 *
 * Which estimate: a job jumps ahead only if its p90 ends before the start (an underestimate delays the reserved job,
 * which is what this guards against; an overestimate only loses one chance to backfill); the start itself is read
 * from the running attempts' predicted medians (the best guess, recomputed every pass). A job with no prediction
 * may only take the spare.
 *
 * Stateless across passes: every pass recomputes the reservation from the running attempts' predicted ends, so a run
 * that overruns its prediction moves the start, never strands the reservation. What makes the same job the one
 * reserved for pass after pass is the order (fairness.ts: with predictions, a job that has waited agingMs goes
 * before the rest of its class, oldest first).
 *
 * Cost, only with a predictor and only for a job that did not fit: a walk over the nodes of its pools (at most
 * `maxScan`, those with the most free GPUs first), each with a sort of its running attempts; per scored candidate of
 * the pass, one map read.
 */
import type { JobRecord } from '../records.js';
import type { CapacityIndex, NodeCapacity, Pool, PoolSlot } from './capacity-index.js';
import { fitsWhenIdle } from './filters.js';
import type { JobRequirements } from './requirements.js';
import type { PlacementPredictor, RunningAttempt } from './types.js';

/** A reserved node: the room left over at the start (what later jobs may take and still leave the job its room). */
interface Held {
  jobId: string;
  startsAt: number;
  /** The pool the reserved job takes its GPUs from; undefined for a CPU-only job. */
  pool: Pool | undefined;
  spareGpus: number;
  spareCpu: number;
  spareMemoryMb: number;
}

export interface ReservationView {
  jobId: string;
  startsAt: number;
  nodeIds: string[];
}

/** Nodes of a blocked job's pools looked at, at most (the emptiest first). */
export const DEFAULT_RESERVATION_SCAN = 512;

export class Backfill {
  private readonly held = new Map<string, Held>();
  /** Attempts this pass placed, per node: the predictor only knows those placed before the pass. */
  private readonly added = new Map<string, RunningAttempt[]>();
  readonly reservations: ReservationView[] = [];

  constructor(
    private readonly predictor: PlacementPredictor,
    private readonly now: number,
    private readonly maxScan = DEFAULT_RESERVATION_SCAN,
  ) {}

  /** Nodes reserved so far in this pass. */
  get size(): number {
    return this.held.size;
  }

  isHeld(nodeId: string): boolean {
    return this.held.has(nodeId);
  }

  /**
   * Reserve for a job that did not fit: false when no set of eligible nodes frees its room by the predicted ends
   * (an end unknown, or too few nodes), and nothing is held then.
   */
  reserve(job: JobRecord, req: JobRequirements, index: CapacityIndex): boolean {
    const found: Array<{ node: NodeCapacity; slot: PoolSlot | undefined; at: Free }> = [];
    let scanned = 0;
    const look = (node: NodeCapacity, slot: PoolSlot | undefined) => {
      scanned++;
      if (this.held.has(node.nodeId) || req.avoid.has(node.nodeId) || !fitsWhenIdle(req, node)) return;
      const at = this.whenFits(req, node, slot);
      if (at.t < Number.POSITIVE_INFINITY) found.push({ node, slot, at });
    };
    if (req.gpuCount > 0) {
      for (const pool of index.poolsFor(req)) {
        if (pool.maxGpus < req.gpuCount) continue;
        for (let f = pool.buckets.length - 1; f >= 0 && scanned < this.maxScan; f--) {
          for (const slot of pool.buckets[f] ?? []) {
            if (scanned >= this.maxScan) break;
            if (slot.size >= req.gpuCount) look(slot.node, slot);
          }
        }
      }
    } else {
      const buckets = index.cpuBuckets;
      for (let b = buckets.length - 1; b >= 0 && scanned < this.maxScan; b--) {
        for (const node of buckets[b] ?? []) {
          if (scanned >= this.maxScan) break;
          look(node, undefined);
        }
      }
    }
    // A node with GPUs of two accepted classes is seen once per pool: keep its soonest.
    found.sort((a, b) => a.at.t - b.at.t);
    const chosen: typeof found = [];
    const ids = new Set<string>();
    for (const c of found) {
      if (ids.has(c.node.nodeId)) continue;
      ids.add(c.node.nodeId);
      chosen.push(c);
      if (chosen.length === req.nodes) break;
    }
    if (chosen.length < req.nodes) return false;
    // A gang starts when its last member's node is free.
    const startsAt = (chosen[chosen.length - 1] as (typeof chosen)[number]).at.t;
    for (const c of chosen) {
      this.held.set(c.node.nodeId, { jobId: job.id, startsAt, pool: c.slot?.pool, spareGpus: c.at.gpus - req.gpuCount, spareCpu: c.at.cpu - req.cpu, spareMemoryMb: c.at.memoryMb - req.memoryMb });
    }
    this.reservations.push({ jobId: job.id, startsAt, nodeIds: chosen.map((c) => c.node.nodeId) });
    return true;
  }

  /**
   * Whether a job may take room on the node: the node is not reserved, or the job is predicted to end by the
   * reservation's start (`endsBy`: now + its p90; undefined when unknown), or it leaves the reserved job its room.
   */
  allows(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined, endsBy: number | undefined): boolean {
    const h = this.held.get(node.nodeId);
    if (!h) return true;
    if (endsBy !== undefined && endsBy <= h.startsAt) return true;
    return fitsSpare(h, req, slot);
  }

  /** A job of the pass was placed on the node: it runs there until `endsAt` (predicted median; Infinity: unknown). */
  placed(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined, gpuIndices: readonly number[], endsAt: number, endsBy: number | undefined): void {
    const list = this.added.get(node.nodeId) ?? [];
    list.push({ endsAt, gpuIndices, cpu: req.cpu, memoryMb: req.memoryMb });
    this.added.set(node.nodeId, list);
    const h = this.held.get(node.nodeId);
    if (!h || (endsBy !== undefined && endsBy <= h.startsAt)) return;
    if (slot && slot.pool === h.pool) h.spareGpus -= req.gpuCount;
    h.spareCpu -= req.cpu;
    h.spareMemoryMb -= req.memoryMb;
  }

  /** The soonest moment the job fits the node by the predicted ends of its attempts, and what is free then. */
  private whenFits(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined): Free {
    const free: Free = { t: this.now, gpus: slot ? slot.free : 0, cpu: node.freeCpu, memoryMb: node.freeMemoryMb };
    if (fits(free, req)) return free;
    const ends = [...this.predictor.running(node.nodeId), ...(this.added.get(node.nodeId) ?? [])].sort((a, b) => a.endsAt - b.endsAt);
    for (const a of ends) {
      if (!(a.endsAt < Number.POSITIVE_INFINITY)) break;
      if (slot) for (const i of a.gpuIndices) if (slot.indices.includes(i)) free.gpus++;
      free.cpu += a.cpu;
      free.memoryMb += a.memoryMb;
      // An attempt past its predicted end is expected to end any moment: now.
      free.t = Math.max(this.now, a.endsAt);
      if (fits(free, req)) return free;
    }
    free.t = Number.POSITIVE_INFINITY;
    return free;
  }
}

interface Free {
  t: number;
  gpus: number;
  cpu: number;
  memoryMb: number;
}

const fits = (f: Free, req: JobRequirements) => f.gpus >= req.gpuCount && f.cpu >= req.cpu - 1e-9 && f.memoryMb >= req.memoryMb;

function fitsSpare(h: Held, req: JobRequirements, slot: PoolSlot | undefined): boolean {
  const gpus = slot && slot.pool === h.pool ? req.gpuCount : 0;
  return gpus <= h.spareGpus && req.cpu <= h.spareCpu + 1e-9 && req.memoryMb <= h.spareMemoryMb;
}
