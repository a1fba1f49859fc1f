/**
 * Run-time predictions learned online from the network's own finished runs (issue 17). Nothing is trained
 * ahead: every finished run is observed once, after it ended, and a prediction only ever uses runs observed
 * before it, so it never sees the future.
 *
 * A job's run time is read from the most specific group of earlier runs that has enough of them:
 *   family       same buyer, image, job name and resources (a job resubmitted, a sweep's siblings)
 *   buyer-image  same buyer and image
 *   image        same image and job name, any buyer
 *   shape        same GPU count, CPU and memory sizes and priority
 *   fleet        every run
 * Each group keeps the last `window` run times; the prediction is their median and 90th percentile (so the
 * figure is explainable: "median of the last 32 runs of this family"). A buyer's own estimate is used when no
 * group of the job's own runs (family, buyer-image) has enough, scaled by how that buyer's estimates compared
 * with their runs so far.
 *
 * GPU classes differ in speed per workload (what heterogeneity-aware schedulers such as Gavel measure): a run
 * on class c is also kept under (family, c), and the ratio of its time to the family's median so far under c
 * for the whole fleet; a prediction for c uses the family's own runs on c when it has enough, else the family's
 * figure times the class's learned ratio.
 */
import type { JobSpec } from '@gpux/protocol';
import { BoundedMap, Recent } from './recent.js';

export interface RunFeatures {
  buyerId: string;
  image: string;
  /** The job's name: how buyers name a family of runs ("train-resnet"). */
  name: string;
  gpuCount: number;
  cpuCores: number;
  memoryGb: number;
  priority: 'high' | 'normal' | 'low';
  /** The buyer's own estimate of the run time, ms, if they gave one. */
  estimateMs?: number | null;
}

export type PredictionBasis = 'family' | 'buyer-image' | 'image' | 'shape' | 'fleet' | 'estimate' | 'none';

export interface RunTimePrediction {
  /** Median and 90th percentile of the run time, ms; NaN when basis is 'none'. */
  medianMs: number;
  p90Ms: number;
  /** Which earlier runs the figure comes from, and how many. */
  basis: PredictionBasis;
  samples: number;
  /** The GPU class the figure is for; null: whichever class the job lands on. */
  gpuClass: string | null;
}

export interface PredictionAccuracy {
  /** Runs predicted before they were observed. */
  runs: number;
  /** Median of |actual ÷ predicted median| in ratio terms (1.25: typically off by 25%); NaN with no runs. */
  medianErrorRatio: number;
  /** Share of runs that ended within the predicted p90 (0.9 when calibrated); NaN with no runs. */
  p90Coverage: number;
}

export interface RunTimeModelOptions {
  /** Run times kept per group. Default 32. */
  window?: number;
  /** Runs a group needs before it is believed. Default 3. */
  minSamples?: number;
  /** Groups kept, least recently used forgotten. Default 100,000 (a few tens of MB at most). */
  maxGroups?: number;
}

const FLEET = 'fleet';

export class RunTimeModel {
  private readonly window: number;
  private readonly minSamples: number;
  /** Log run times per group (quantiles of logs are logs of quantiles, and ratios become differences). */
  private readonly groups: BoundedMap<string, Recent>;
  /** Per GPU class: ln(run time on the class ÷ the family's median before it), over the fleet. */
  private readonly classRatio: BoundedMap<string, Recent>;
  /** Per buyer: ln(actual ÷ the buyer's estimate). */
  private readonly estimateRatio: BoundedMap<string, Recent>;
  /** Per buyer and for everyone ('*'): |ln(actual ÷ predicted median)| and whether the run ended within p90. */
  private readonly errors: BoundedMap<string, { absLog: Recent; within: Recent; runs: number }>;

  constructor(opts: RunTimeModelOptions = {}) {
    this.window = opts.window ?? 32;
    this.minSamples = opts.minSamples ?? 3;
    const max = opts.maxGroups ?? 100_000;
    this.groups = new BoundedMap(max);
    this.classRatio = new BoundedMap(1_000);
    this.estimateRatio = new BoundedMap(max);
    this.errors = new BoundedMap(max);
  }

  /** A run of a job with these features ended after `durationMs` on `gpuClass` (null: no GPU). */
  observe(f: RunFeatures, gpuClass: string | null, durationMs: number): void {
    if (!(durationMs > 0) || !Number.isFinite(durationMs)) return;
    const x = Math.log(durationMs);
    this.scoreBeforeLearning(f, gpuClass, durationMs);
    const keys = keysOf(f);
    const family = this.groups.peek(keys[0]);
    if (gpuClass !== null && family && family.size >= this.minSamples) {
      this.classRatio.getOrCreate(gpuClass, () => new Recent(256)).add(x - family.quantile(0.5));
    }
    if (f.estimateMs && f.estimateMs > 0) this.estimateRatio.getOrCreate(f.buyerId, () => new Recent(this.window)).add(x - Math.log(f.estimateMs));
    for (const key of keys) this.groups.getOrCreate(key, () => new Recent(this.window)).add(x);
    if (gpuClass !== null) this.groups.getOrCreate(classKey(keys[0], gpuClass), () => new Recent(this.window)).add(x);
    this.groups.getOrCreate(FLEET, () => new Recent(this.window * 8)).add(x);
  }

  /** The run time of a job with these features, on `gpuClass` when given. */
  predict(f: RunFeatures, gpuClass: string | null = null): RunTimePrediction {
    const keys = keysOf(f);
    if (gpuClass !== null) {
      const own = this.believed(classKey(keys[0], gpuClass));
      if (own) return fromLogs(own, 'family', gpuClass);
    }
    const base = this.anyClass(f, keys);
    if (gpuClass === null || base.basis === 'none') return base;
    const ratio = this.classRatio.peek(gpuClass);
    if (!ratio || ratio.size < this.minSamples) return { ...base, gpuClass };
    const factor = Math.exp(ratio.quantile(0.5));
    return { ...base, medianMs: base.medianMs * factor, p90Ms: base.p90Ms * factor, gpuClass };
  }

  /** How predictions fared for this buyer ('*': everyone), judged on runs predicted before they were observed. */
  accuracy(buyerId = '*'): PredictionAccuracy {
    const e = this.errors.peek(buyerId);
    if (!e || e.runs === 0) return { runs: 0, medianErrorRatio: Number.NaN, p90Coverage: Number.NaN };
    return { runs: e.runs, medianErrorRatio: Math.exp(e.absLog.quantile(0.5)), p90Coverage: e.within.mean() };
  }

  private anyClass(f: RunFeatures, keys: readonly string[]): RunTimePrediction {
    const [family, buyerImage, image, shape] = keys as [string, string, string, string];
    for (const [key, basis] of [
      [family, 'family'],
      [buyerImage, 'buyer-image'],
    ] as const) {
      const g = this.believed(key);
      if (g) return fromLogs(g, basis, null);
    }
    if (f.estimateMs && f.estimateMs > 0) return this.fromEstimate(f.buyerId, f.estimateMs);
    for (const [key, basis] of [
      [image, 'image'],
      [shape, 'shape'],
      [FLEET, 'fleet'],
    ] as const) {
      const g = this.believed(key);
      if (g) return fromLogs(g, basis, null);
    }
    return { medianMs: Number.NaN, p90Ms: Number.NaN, basis: 'none', samples: 0, gpuClass: null };
  }

  /** The buyer's estimate, scaled by how their estimates compared with their runs; p90 twice it until known. */
  private fromEstimate(buyerId: string, estimateMs: number): RunTimePrediction {
    const r = this.estimateRatio.peek(buyerId);
    if (!r || r.size < this.minSamples) return { medianMs: estimateMs, p90Ms: estimateMs * 2, basis: 'estimate', samples: 0, gpuClass: null };
    const [m, p90] = r.quantiles([0.5, 0.9]) as [number, number];
    return { medianMs: estimateMs * Math.exp(m), p90Ms: estimateMs * Math.exp(p90), basis: 'estimate', samples: r.size, gpuClass: null };
  }

  private believed(key: string): Recent | null {
    const g = this.groups.peek(key);
    return g && g.size >= this.minSamples ? g : null;
  }

  private scoreBeforeLearning(f: RunFeatures, gpuClass: string | null, durationMs: number): void {
    const p = this.predict(f, gpuClass);
    if (p.basis === 'none') return;
    const absLog = Math.abs(Math.log(durationMs / p.medianMs));
    const within = durationMs <= p.p90Ms ? 1 : 0;
    for (const who of [f.buyerId, '*']) {
      const e = this.errors.getOrCreate(who, () => ({ absLog: new Recent(256), within: new Recent(256), runs: 0 }));
      e.absLog.add(absLog);
      e.within.add(within);
      e.runs++;
    }
  }
}

function fromLogs(g: Recent, basis: PredictionBasis, gpuClass: string | null): RunTimePrediction {
  const [m, p90] = g.quantiles([0.5, 0.9]) as [number, number];
  return { medianMs: Math.exp(m), p90Ms: Math.exp(p90), basis, samples: g.size, gpuClass };
}

/** A job's features from its spec (only the scheduling view is needed: no command, env or inputs). */
export function runFeaturesOf(buyerId: string, spec: Pick<JobSpec, 'name' | 'image' | 'resources' | 'priority'>): RunFeatures {
  return { buyerId, image: spec.image, name: spec.name, gpuCount: spec.resources.gpu.count, cpuCores: spec.resources.cpuCores ?? 0, memoryGb: spec.resources.memoryGb ?? 0, priority: spec.priority ?? 'normal' };
}

/** Powers of two for sizes, so 7 and 8 cores are one shape but 2 and 8 are not. */
const sizeBucket = (v: number) => (v > 0 ? Math.round(Math.log2(v)) : -99);

/** The group keys of a job, most specific first: family, buyer-image, image, shape. */
export function keysOf(f: RunFeatures): [string, string, string, string] {
  return [
    `f\0${f.buyerId}\0${f.image}\0${f.name}\0${f.gpuCount}\0${f.cpuCores}\0${f.memoryGb}`,
    `b\0${f.buyerId}\0${f.image}`,
    `i\0${f.image}\0${f.name}`,
    `s\0${f.gpuCount}\0${sizeBucket(f.cpuCores)}\0${sizeBucket(f.memoryGb)}\0${f.priority}`,
  ];
}

const classKey = (familyKey: string, gpuClass: string) => `c\0${gpuClass}\0${familyKey}`;
