/**
 * What predictions change in one pass of the placement engine (issue 17; placer.ts holds one while a pass with
 * PlacementContext.predict runs): each job's run time asked once, the order's work, the reservations and the
 * backfill test (backfill.ts), and the stability term of the score.
 */
import type { JobRecord } from '../records.js';
import { Backfill } from './backfill.js';
import type { CapacityIndex, NodeCapacity, PoolSlot } from './capacity-index.js';
import type { JobRequirements } from './requirements.js';
import type { PlacementPredictor, RunTimeEstimate } from './types.js';

/** Jobs a pass looks for a reservation for at most: a job no node could ever take finds none, at the cost of a walk. */
export const MAX_RESERVE_TRIES = 4;

export class PredictedPass {
  private readonly estimates = new Map<JobRecord, RunTimeEstimate | undefined>();
  private readonly backfill: Backfill | undefined;
  /** The job being placed: its p90 end (may it backfill?) and its median run time (the uptime horizon). */
  private endsBy: number | undefined;
  private medianMs: number | undefined;
  private job: JobRecord | undefined;
  /** The aimed job's predicted median per market class (NaN: unknown), asked once per class. */
  private readonly classMs = new Map<string, number>();
  private tries = 0;
  reserved = 0;
  backfilled = 0;

  constructor(
    private readonly predict: PlacementPredictor,
    private readonly now: number,
    private readonly maxReservations: number,
  ) {
    this.backfill = maxReservations > 0 ? new Backfill(predict, now) : undefined;
  }

  /** The job's predicted run time (median), for the order; undefined when unknown. */
  work(job: JobRecord): number | undefined {
    return this.estimateOf(job)?.medianMs;
  }

  /** The job about to be placed. */
  aim(job: JobRecord): void {
    this.job = job;
    this.classMs.clear();
    const e = this.estimateOf(job);
    this.endsBy = e && Number.isFinite(e.p90Ms) ? this.now + e.p90Ms : undefined;
    this.medianMs = e && Number.isFinite(e.medianMs) ? e.medianMs : undefined;
  }

  /** Whether the aimed job may take room on the node (not another job's reserved room it would not leave). */
  allows(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined): boolean {
    return !this.backfill || this.backfill.allows(req, node, slot, this.endsBy);
  }

  /** 1 − the chance the node stays up for the aimed job's predicted run: the share of it likely lost; 0 when unknown. */
  stabilityLoss(nodeId: string): number {
    if (this.medianMs === undefined || !this.predict.pStaysUp) return 0;
    const p = this.predict.pStaysUp(nodeId, this.medianMs);
    return p === undefined || !(p >= 0) ? 0 : 1 - Math.min(1, p);
  }

  /**
   * How much slower (positive) or faster (negative) the aimed job is predicted to run on the slot's GPU class than
   * its median over all classes, as ln(class ÷ median) within ±1: the engine sends a job where it finishes soonest
   * (the price cap is a filter, so only classes it may pay for are candidates). 0 when either is unknown.
   */
  speedLoss(slot: PoolSlot | undefined): number {
    if (!slot || this.medianMs === undefined || !this.predict.runTimeOn || !this.job) return 0;
    const cls = slot.pool.marketClass;
    let ms = this.classMs.get(cls);
    if (ms === undefined) {
      ms = this.predict.runTimeOn(this.job, cls)?.medianMs ?? Number.NaN;
      this.classMs.set(cls, ms);
    }
    if (!(ms > 0) || !(this.medianMs > 0)) return 0;
    return Math.max(-1, Math.min(1, Math.log(ms / this.medianMs)));
  }

  /** The aimed job did not fit: the first to (MAX_RESERVE_TRIES tries, `maxReservations` kept) get a reservation. */
  notPlaced(job: JobRecord, req: JobRequirements, index: CapacityIndex): void {
    if (!this.backfill || this.reserved >= this.maxReservations || this.tries >= MAX_RESERVE_TRIES) return;
    this.tries++;
    if (this.backfill.reserve(job, req, index)) this.reserved++;
  }

  /** The aimed job took room on the node: held until its predicted median end (unknown: for good). */
  placed(req: JobRequirements, node: NodeCapacity, slot: PoolSlot | undefined, gpuIndices: readonly number[]): void {
    if (!this.backfill) return;
    if (this.backfill.isHeld(node.nodeId)) this.backfilled++;
    const endsAt = this.medianMs === undefined ? Number.POSITIVE_INFINITY : this.now + this.medianMs;
    this.backfill.placed(req, node, slot, gpuIndices, endsAt, this.endsBy);
  }

  private estimateOf(job: JobRecord): RunTimeEstimate | undefined {
    if (this.estimates.has(job)) return this.estimates.get(job);
    const e = this.predict.runTime(job);
    this.estimates.set(job, e);
    return e;
  }
}
