/**
 * Run-time predictions for buyers (issue 17): core's RunTimeModel fed with the store's succeeded runs in finish
 * order. Each replica follows the store itself (a cursor over finished runs), so every replica predicts alike and
 * nothing depends on which replica a result reached. The model is refreshed when a prediction is asked for, at
 * most every `refreshMs`, and a refresh reads at most `maxRunsPerRefresh` runs (a long history is caught up over
 * several asks, never in one slow request). At start it reads back `lookbackMs` of history.
 */
import { Backfill, type CapacityIndex, type Clock, NodeUptimeModel, type JobRecord, type PlacementPredictor, type RunCursor, type RunHistoryPort, type RunningAttempt, type RunTimeEstimate, requirementsOf, RunTimeModel, runFeaturesOf } from '@gpux/core';
import { type RunPrediction, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

export interface RunPredictionsOptions {
  /** How much history a fresh process reads back. Default 30 days. */
  lookbackMs?: number;
  /** A refresh runs at most this often. Default 5 s. */
  refreshMs?: number;
  /** Runs one refresh reads at most. Default 5,000. */
  maxRunsPerRefresh?: number;
  /** How often a pass looks at which nodes are online, for the uptime model. Default 60 s. */
  nodesEveryMs?: number;
}

const PAGE = 1000;

/** The basis in words, as `gpux job get` and the dashboard print it after the count of runs. */
const BASIS_TEXT: Record<RunPrediction['basis'], string> = {
  family: 'runs of this job family (same image, name and resources)',
  'buyer-image': 'of your runs of this image',
  image: "of everyone's runs of this image and name",
  shape: 'runs of jobs this size',
  fleet: 'runs on this coordinator',
  estimate: 'of your runs, read against your own estimate',
  none: '',
};

/** What a prediction reads of a job (a record or its view). */
export type PredictedJob = Pick<JobRecord, 'id' | 'buyerId' | 'spec' | 'state' | 'startedAt'> & Partial<Pick<JobRecord, 'avoidNodeIds' | 'payment'>>;

/** The job's prediction for an answer: absent with predictions off, and for a job that has ended. */
export async function predictionOf(rt: Needs<'index' | 'predictions'>, job: PredictedJob): Promise<{ prediction?: RunPrediction }> {
  if (!rt.predictions || TERMINAL_JOB_STATES.includes(job.state)) return {};
  return { prediction: await rt.predictions.forJob(job, rt.index) };
}

export class RunPredictions {
  private readonly model = new RunTimeModel();
  private cursor: RunCursor | null = null;
  private lastRefresh = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<void> | null = null;
  private readonly lookbackMs: number;
  private readonly refreshMs: number;
  private readonly maxRuns: number;
  private readonly nodesEveryMs: number;
  /** Predicted ends (median and p90) of the attempts this replica reserved, by attempt id (dropped when they end). */
  private readonly ends = new Map<string, { median: number; p90: number }>();
  /** The nodes' comings and goings as this replica's passes saw them (observeNodes). */
  private readonly uptime = new NodeUptimeModel();
  private readonly upNow = new Set<string>();
  private nodesSeenAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly store: RunHistoryPort,
    private readonly clock: Clock,
    opts: RunPredictionsOptions = {},
  ) {
    this.lookbackMs = opts.lookbackMs ?? 30 * 24 * 3_600_000;
    this.refreshMs = opts.refreshMs ?? 5_000;
    this.maxRuns = opts.maxRunsPerRefresh ?? 5_000;
    this.nodesEveryMs = opts.nodesEveryMs ?? 60_000;
  }

  /** What the network's finished runs say of this job's run time, and how past predictions fared for its buyer. */
  async forJob(job: PredictedJob, index?: CapacityIndex): Promise<RunPrediction> {
    await this.refresh();
    const now = this.clock.now();
    const p = this.model.predict(runFeaturesOf(job.buyerId, job.spec));
    const known = p.basis !== 'none';
    const acc = this.model.accuracy(job.buyerId);
    const startAt = job.state === 'queued' && index ? this.startOf(job, index, now) : null;
    const running = job.state === 'running' && job.startedAt !== null ? job.startedAt : null;
    const startedAt = running !== null ? { median: running, p90: running } : startAt;
    const runTimeMs = known ? { median: Math.round(p.medianMs), p90: Math.round(p.p90Ms) } : null;
    return {
      runTimeMs,
      basis: p.basis,
      samples: p.samples,
      basisText: BASIS_TEXT[p.basis],
      startAt,
      // Its start (or predicted start: median, and its p90 for the late bound) plus the run time shown, never before
      // now. Whole ms added to whole ms: rounding the sum instead (1.8e12 + 5022.4999…) could show one ms more.
      finishAt: runTimeMs && startedAt !== null ? { median: Math.max(now, startedAt.median + runTimeMs.median), p90: Math.max(now, startedAt.p90 + runTimeMs.p90) } : null,
      buyerAccuracy: { runs: acc.runs, medianErrorRatio: finiteOrNull(acc.medianErrorRatio), p90Coverage: finiteOrNull(acc.p90Coverage) },
    };
  }

  /** The job's run time (on GPUs of `gpuClass`, a market class, when given) as the placement engine reads it; undefined when nothing is known of its kind. */
  runTime(job: Pick<JobRecord, 'buyerId' | 'spec'>, gpuClass: string | null = null): RunTimeEstimate | undefined {
    const p = this.model.predict(runFeaturesOf(job.buyerId, job.spec), gpuClass);
    return p.basis === 'none' ? undefined : { medianMs: p.medianMs, p90Ms: p.p90Ms };
  }

  /**
   * An attempt this replica reserved with its job in hand (its placement, or an index rebuild): its predicted end is
   * its start (or now, when not started yet) plus the job's median (and p90), fixed then. Unknown kinds are not kept.
   */
  noteAttempt(attemptId: string, job: Pick<JobRecord, 'buyerId' | 'spec'>, startedAt: number): void {
    const t = this.runTime(job);
    if (t) this.ends.set(attemptId, { median: startedAt + t.medianMs, p90: startedAt + t.p90Ms });
  }

  /**
   * A queued job's predicted start: when room for it frees up on nodes it fits, by the predicted ends of what runs
   * there, as the scheduling pass would reserve it (core backfill.ts), if no job ahead takes that room first: by their
   * median ends, and by their p90 ends (the late bound). Null when some of that room holds an attempt of unknown end,
   * or no node fits it.
   */
  private startOf(job: PredictedJob, index: CapacityIndex, now: number): { median: number; p90: number } | null {
    const record = { avoidNodeIds: [], ...job } as JobRecord;
    const at = (q: 'median' | 'p90') => {
      const b = new Backfill(this.predictor(index, q), now);
      return b.reserve(record, requirementsOf(record), index) ? Math.round(b.reservations[0]?.startsAt ?? now) : null;
    };
    const median = at('median');
    const p90 = median === null ? null : at('p90');
    return median === null || p90 === null ? null : { median, p90: Math.max(median, p90) };
  }

  /** Run times, and each node's attempts with their predicted ends (Infinity: unknown, so nothing is planned on their room). */
  private predictor(index: CapacityIndex, q: 'median' | 'p90' = 'median'): PlacementPredictor {
    const ends = this.ends;
    return {
      runTime: (job) => this.runTime(job),
      runTimeOn: (job, marketClass) => this.runTime(job, marketClass),
      *running(nodeId): Iterable<RunningAttempt> {
        for (const r of index.reservationsOn(nodeId)) yield { endsAt: ends.get(r.attemptId)?.[q] ?? Number.POSITIVE_INFINITY, gpuIndices: r.gpuIndices, cpu: r.cpu, memoryMb: r.memoryMb };
      },
    };
  }

  /**
   * What a scheduling pass gives the placement engine (issue 17). Refreshed first, so the pass sees the runs that
   * ended since the last one.
   */
  async forPass(index: CapacityIndex): Promise<PlacementPredictor> {
    await this.refresh();
    const now = this.clock.now();
    this.observeNodes(index, now);
    const uptime = this.uptime;
    return { ...this.predictor(index), pStaysUp: (nodeId, horizonMs) => uptime.pStaysUp(nodeId, now, horizonMs) };
  }

  /**
   * Feed the uptime model (core NodeUptimeModel: a departure rate per hour of day, pulled toward the fleet's) from
   * the index, at most every `nodesEveryMs`: online nodes book their time, nodes online at the last look and not now
   * (offline, removed) are departures. Learned from when this process started passing: a restart starts again from
   * nothing (every node then judged as the fleet's average, which is how a new node is judged anyway).
   */
  private observeNodes(index: CapacityIndex, now: number): void {
    if (now - this.nodesSeenAt < this.nodesEveryMs) return;
    this.nodesSeenAt = now;
    // Ends missed by attemptEnded (an index rebuilt after a bus gap) go here, at this cadence, not in every pass.
    for (const id of this.ends.keys()) if (!index.hasReservation(id)) this.ends.delete(id);
    const up = new Set<string>();
    for (const n of index.allNodes()) {
      if (n.status !== 'online') continue;
      up.add(n.nodeId);
      this.uptime.online(n.nodeId, now);
    }
    for (const id of this.upNow) if (!up.has(id)) this.uptime.offline(id, now);
    this.upNow.clear();
    for (const id of up) this.upNow.add(id);
  }

  /**
   * An attempt ended (here, or on another replica by the bus): its predicted end is dropped, and the next ask reads
   * the runs that ended, whatever the refresh interval.
   */
  attemptEnded(attemptId: string): void {
    this.ends.delete(attemptId);
    this.lastRefresh = Number.NEGATIVE_INFINITY;
  }

  /** Read the runs finished since the last refresh (shared by concurrent asks). */
  refresh(): Promise<void> {
    const now = this.clock.now();
    if (this.refreshing) return this.refreshing;
    if (now - this.lastRefresh < this.refreshMs) return Promise.resolve();
    this.lastRefresh = now;
    this.refreshing = this.readRuns(now).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async readRuns(now: number): Promise<void> {
    let cursor = this.cursor ?? { finishedAt: now - this.lookbackMs, attemptId: '' };
    for (let read = 0; read < this.maxRuns; ) {
      const limit = Math.min(PAGE, this.maxRuns - read);
      const page = await this.store.listFinishedRuns(cursor, limit);
      for (const r of page.runs) this.model.observe(runFeaturesOf(r.buyerId, r.spec), r.gpuClass, r.finishedAt - r.startedAt);
      if (page.last) cursor = this.cursor = page.last;
      read += page.rows;
      if (page.rows < limit) break;
    }
    this.cursor = cursor;
  }
}

const finiteOrNull = (v: number) => (Number.isFinite(v) ? v : null);
