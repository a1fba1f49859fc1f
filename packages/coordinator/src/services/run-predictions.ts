/**
 * Run-time predictions for buyers (issue 17): core's RunTimeModel fed with the store's succeeded runs in finish
 * order. Each replica follows the store itself (a cursor over finished runs), so every replica predicts alike and
 * nothing depends on which replica a result reached. The model is refreshed when a prediction is asked for, at
 * most every `refreshMs`, and a refresh reads at most `maxRunsPerRefresh` runs (a long history is caught up over
 * several asks, never in one slow request). At start it reads back `lookbackMs` of history.
 */
import { type Clock, type JobRecord, type RunCursor, type RunHistoryPort, RunTimeModel, runFeaturesOf } from '@gpux/core';
import { type RunPrediction, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

export interface RunPredictionsOptions {
  /** How much history a fresh process reads back. Default 30 days. */
  lookbackMs?: number;
  /** A refresh runs at most this often. Default 5 s. */
  refreshMs?: number;
  /** Runs one refresh reads at most. Default 5,000. */
  maxRunsPerRefresh?: number;
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
export type PredictedJob = Pick<JobRecord, 'buyerId' | 'spec' | 'state' | 'startedAt'>;

/** The job's prediction for an answer: absent with predictions off, and for a job that has ended. */
export async function predictionOf(rt: Needs<'predictions'>, job: PredictedJob): Promise<{ prediction?: RunPrediction }> {
  if (!rt.predictions || TERMINAL_JOB_STATES.includes(job.state)) return {};
  return { prediction: await rt.predictions.forJob(job) };
}

export class RunPredictions {
  private readonly model = new RunTimeModel();
  private cursor: RunCursor | null = null;
  private lastRefresh = Number.NEGATIVE_INFINITY;
  private refreshing: Promise<void> | null = null;
  private readonly lookbackMs: number;
  private readonly refreshMs: number;
  private readonly maxRuns: number;

  constructor(
    private readonly store: RunHistoryPort,
    private readonly clock: Clock,
    opts: RunPredictionsOptions = {},
  ) {
    this.lookbackMs = opts.lookbackMs ?? 30 * 24 * 3_600_000;
    this.refreshMs = opts.refreshMs ?? 5_000;
    this.maxRuns = opts.maxRunsPerRefresh ?? 5_000;
  }

  /** What the network's finished runs say of this job's run time, and how past predictions fared for its buyer. */
  async forJob(job: PredictedJob): Promise<RunPrediction> {
    await this.refresh();
    const p = this.model.predict(runFeaturesOf(job.buyerId, job.spec));
    const known = p.basis !== 'none';
    const acc = this.model.accuracy(job.buyerId);
    const started = job.state === 'running' && job.startedAt !== null ? job.startedAt : null;
    return {
      runTimeMs: known ? { median: Math.round(p.medianMs), p90: Math.round(p.p90Ms) } : null,
      basis: p.basis,
      samples: p.samples,
      basisText: BASIS_TEXT[p.basis],
      // A running job: its start plus the run time, and never before now (it has not ended yet).
      finishAt:
        known && started !== null
          ? { median: Math.max(this.clock.now(), Math.round(started + p.medianMs)), p90: Math.max(this.clock.now(), Math.round(started + p.p90Ms)) }
          : null,
      buyerAccuracy: { runs: acc.runs, medianErrorRatio: finiteOrNull(acc.medianErrorRatio), p90Coverage: finiteOrNull(acc.p90Coverage) },
    };
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
