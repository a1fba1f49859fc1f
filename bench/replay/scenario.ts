/**
 * One replay scenario: the pods as jobs at a given time compression and arrival load, the same node
 * failures for both schedulers, the engine and FIFO first-fit run one after the other, summaries and ratios.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_RETRY_POLICY, type NodeRecord, type RetryPolicy } from '@gpux/core';
import { seededRandom } from './fleet.js';
import { buyerPicker, jobRecord, specOf } from './jobs.js';
import { mean, percentile } from './report-util.js';
import { type SimJob, type SimResult, simulate } from './sim.js';
import type { PodRow } from './trace-csv.js';

export interface ScenarioOptions {
  name: string;
  compression: number;
  /** Arrivals this many times faster again than run times (1 = the trace's own pace). */
  load: number;
  failFraction: number;
  window: number;
  passDelayMs: number;
  agingTraceS: number;
  buyers: number;
  seed: number;
  /** Check after every pass whether a job left waiting fitted some node (sim.ts countMisses). */
  countMisses?: boolean;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 600;
}

export function jobsFor(pods: readonly PodRow[], o: ScenarioOptions): SimJob[] {
  const t0 = Math.min(...pods.map((p) => p.creation));
  const ran = pods.filter((p) => p.scheduled !== null && p.deletion !== null).map((p) => (p.deletion as number) - (p.scheduled as number));
  const typical = median(ran);
  const pick = buyerPicker(o.buyers, seededRandom(o.seed));
  return pods.map((p, i) => {
    const arrival = Math.round(((p.creation - t0) * 1000) / (o.compression * o.load));
    const traceRun = p.scheduled !== null && p.deletion !== null ? Math.max(0, p.deletion - p.scheduled) : typical;
    const spec = specOf(p);
    return {
      rec: jobRecord(`pod-${String(i).padStart(5, '0')}`, spec, pick(), arrival),
      arrival,
      duration: Math.max(1, Math.round((traceRun * 1000) / o.compression)),
      gpus: spec.resources.gpu.count,
      firstStart: null,
      end: null,
      attempt: null,
    };
  });
}

const ms = (v: number) => Math.round(v * 10) / 10;
const dist = (v: Float64Array) => ({ jobs: v.length, meanMs: ms(mean(v)), p99Ms: ms(percentile(v, 99)), maxMs: ms(percentile(v, 100)) });

export function summary(r: SimResult) {
  return {
    jobs: r.jobs,
    completed: r.completed,
    jobsLost: r.lost,
    unplaceable: r.unplaceable,
    attemptsLost: r.lostAttempts,
    misses: r.misses,
    queueDelayMs: { mean: ms(mean(r.queueDelayMs)), p50: ms(percentile(r.queueDelayMs, 50)), p99: ms(percentile(r.queueDelayMs, 99)), max: ms(percentile(r.queueDelayMs, 100)) },
    jctMs: { mean: ms(mean(r.jctMs)), p99: ms(percentile(r.jctMs, 99)) },
    queueDelayByGroup: Object.fromEntries(Object.entries(r.delayByClass).map(([k, v]) => [k, dist(v)])),
    gpuAllocation: Math.round(r.gpuAllocation * 10000) / 10000,
    gpuAllocationWhileWaiting: Math.round(r.gpuAllocationWhileWaiting * 10000) / 10000,
    waitingMs: Math.round(r.waitingMs),
    passes: r.passes,
    placements: r.placements,
    schedulerMs: Math.round(r.schedulerMs),
    autoCordoned: r.autoCordoned,
    reserved: r.reserved,
    backfilled: r.backfilled,
    simEndMs: r.simEndMs,
  };
}
export type Summary = ReturnType<typeof summary>;

/** The nodes that fail for good and when (the same for every scheduler of a scenario): a share of the fleet, during the arrivals. */
export function failuresFor(fleet: readonly NodeRecord[], jobs: readonly SimJob[], o: ScenarioOptions): Map<string, number> {
  const first = Math.min(...jobs.map((j) => j.arrival));
  const last = Math.max(...jobs.map((j) => j.arrival));
  const rnd = seededRandom(o.seed + 1);
  const failures = new Map<string, number>();
  for (const n of fleet) if (rnd.next() < o.failFraction) failures.set(n.id, Math.round(first + rnd.next() * (last - first)));
  return failures;
}

export function runScenario(pods: readonly PodRow[], fleet: readonly NodeRecord[], o: ScenarioOptions) {
  const probe = jobsFor(pods, o);
  const first = Math.min(...probe.map((j) => j.arrival));
  const last = Math.max(...probe.map((j) => j.arrival));
  const gpus = fleet.reduce((s, n) => s + n.advertisement.gpus.length, 0);
  const gpuMs = probe.reduce((s, j) => s + j.gpus * j.duration, 0);
  const failures = failuresFor(fleet, probe, o);
  const results: Record<string, Summary> = {};
  const wallMs: Record<string, number> = {};
  for (const policy of ['engine', 'fifo-first-fit'] as const) {
    const t = performance.now();
    const r = simulate(fleet, jobsFor(pods, o), { policy, window: o.window, passDelayMs: o.passDelayMs, ...coordinatorTimes(o), failures, random: seededRandom(o.seed + 2), countMisses: o.countMisses ?? false });
    wallMs[policy] = Math.round(performance.now() - t);
    results[policy] = summary(r);
  }
  const e = results.engine as Summary;
  const b = results['fifo-first-fit'] as Summary;
  const div = (x: number, y: number) => (y === 0 ? (x === 0 ? 1 : null) : Math.round((x / y) * 1000) / 1000);
  return {
    scenario: o,
    arrivalsSpanMs: last - first,
    /** GPU·time of all pods over (GPUs × arrival span). */
    offeredLoad: Math.round((gpuMs / (gpus * Math.max(1, last - first))) * 1000) / 1000,
    failingNodes: failures.size,
    results,
    wallMs,
    ratio: {
      meanQueueDelay: div(e.queueDelayMs.mean, b.queueDelayMs.mean),
      p99QueueDelay: div(e.queueDelayMs.p99, b.queueDelayMs.p99),
      meanJct: div(e.jctMs.mean, b.jctMs.mean),
      gpuAllocation: div(e.gpuAllocation, b.gpuAllocation),
      gpuAllocationWhileWaiting: div(e.gpuAllocationWhileWaiting, b.gpuAllocationWhileWaiting),
      attemptsLost: div(e.attemptsLost, b.attemptsLost),
    },
  };
}

/**
 * The coordinator's own periods in simulated time, compressed like the trace's run times: the aging of a queued job
 * (agingTraceS of trace time) and the backoff before a job whose node was lost is placed again (core lifecycle's 2 s,
 * doubling, at most 5 min). Uncompressed, a 2 s backoff would stand for 33 minutes of trace time at 1000×, and a job
 * lost to a failing node would wait far past the burst.
 */
export function coordinatorTimes(o: Pick<ScenarioOptions, 'agingTraceS' | 'compression'>): { agingMs: number; retryPolicy: RetryPolicy } {
  return {
    agingMs: (o.agingTraceS * 1000) / o.compression,
    retryPolicy: { baseBackoffMs: DEFAULT_RETRY_POLICY.baseBackoffMs / o.compression, maxBackoffMs: DEFAULT_RETRY_POLICY.maxBackoffMs / o.compression },
  };
}
