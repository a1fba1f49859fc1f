/**
 * Issue 17 in the replay: the window in order of predicted run time, shortest first within a priority class,
 * aged (a job's predicted time counts less the longer it waited). "learned": predictions from core's
 * RunTimeModel, fed each run as it finishes (so only the past is known); "oracle": the trace's true run times,
 * the upper bound of what ordering by run time can do. Jobs nothing is known of yet keep their arrival order
 * behind the predicted ones of their class.
 */
import { isDue, type JobRecord, priorityRank, type RunFeatures, type RunTimeEstimate, RunTimeModel, runFeaturesOf } from '@gpux/core';
import type { SimJob, SimPredictions } from './sim.js';

export type PredictedKind = 'learned' | 'oracle';

/** The trace's pods as the model sees them: buyer, resources, priority (image and a name are the same for every pod: pod names are unique). */
const featuresOf = (j: SimJob): RunFeatures => ({ ...runFeaturesOf(j.rec.buyerId, j.rec.spec), name: 'trace-pod' });

export interface PredictionError {
  /** Runs that had a prediction when they started. */
  predicted: number;
  /** Median |actual − predicted median|, simulated ms. */
  medianAbsErrorMs: number;
  /** Share of predicted runs that ended within the predicted p90. */
  p90Coverage: number;
}

/**
 * Run-time predictions as the engine is given them (sim.ts SimPredictions): learned (RunTimeModel, only runs that
 * had ended; undefined while nothing is known) or the oracle (the true run time as median and p90). `error()` judges
 * each run's last prediction before it started.
 */
export function runTimePredictions(kind: PredictedKind): SimPredictions & { error(): PredictionError } {
  const model = new RunTimeModel();
  /** Each job's prediction as it was when last asked for: what the error is judged on. */
  const made = new Map<SimJob, { median: number; p90: number }>();
  const absErrors: number[] = [];
  let within = 0;
  return {
    estimate(j: SimJob): RunTimeEstimate | undefined {
      if (kind === 'oracle') return { medianMs: j.duration, p90Ms: j.duration };
      const p = model.predict(featuresOf(j));
      if (p.basis === 'none') return undefined;
      made.set(j, { median: p.medianMs, p90: p.p90Ms });
      return { medianMs: p.medianMs, p90Ms: p.p90Ms };
    },
    finished(job: SimJob, gpuClass: string | null): void {
      const p = made.get(job);
      if (p) {
        absErrors.push(Math.abs(job.duration - p.median));
        if (job.duration <= p.p90) within++;
        made.delete(job);
      }
      if (kind === 'learned') model.observe(featuresOf(job), gpuClass, job.duration);
    },
    error(): PredictionError {
      const s = [...absErrors].sort((a, b) => a - b);
      return { predicted: s.length, medianAbsErrorMs: s.length ? (s[Math.floor(s.length / 2)] as number) : Number.NaN, p90Coverage: s.length ? within / s.length : Number.NaN };
    },
  };
}

/** The window in order of predicted run time within each priority class, aged; jobs nothing is known of behind, by arrival. */
export function predictedOrder(kind: PredictedKind, agingMs: number) {
  const p = runTimePredictions(kind);
  const work = (j: SimJob, t: number) => {
    const e = p.estimate(j, t);
    return e === undefined ? Number.POSITIVE_INFINITY : e.medianMs / (1 + (t - j.arrival) / agingMs);
  };
  return {
    window(queued: readonly SimJob[], t: number, size: number): JobRecord[] {
      const keyed = queued.filter((j) => j.rec.state === 'queued' && isDue(j.rec, t)).map((j) => ({ j, rank: priorityRank(j.rec), w: work(j, t) }));
      keyed.sort((a, b) => a.rank - b.rank || (a.w === b.w ? a.j.rec.createdAt - b.j.rec.createdAt : a.w < b.w ? -1 : 1));
      return keyed.slice(0, size).map((k) => k.j.rec);
    },
    finished: p.finished,
    error: p.error,
  };
}
