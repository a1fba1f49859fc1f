/**
 * `npm run bench:replay -- --learned` (issue 17): the burst scenario (or --load) on the same arrivals and failures
 * through FIFO first-fit, the placement engine, the engine given learned run-time predictions (core RunTimeModel,
 * fed each run as it ends: reservations and backfill, order by predicted run time, placement.ts), the engine given
 * the true run times (the oracle: the most those predictions can do), and first-fit taking the window in learned and
 * in true run-time order. Prints delays, allocation and the predictions' error; writes bench/results/replay-learned.json.
 */
import { FirstFitScheduler, type NodeRecord } from '@gpux/core';
import { seededRandom } from './fleet.js';
import { predictedOrder, runTimePredictions } from './learned.js';
import { table } from './report-util.js';
import { coordinatorTimes, failuresFor, jobsFor, type ScenarioOptions, type Summary, summary } from './scenario.js';
import { simulate } from './sim.js';
import type { PodRow } from './trace-csv.js';

export function learnedRun(pods: readonly PodRow[], fleet: readonly NodeRecord[], s: ScenarioOptions) {
  const failures = failuresFor(fleet, jobsFor(pods, s), s);
  const times = coordinatorTimes(s);
  const agingMs = times.agingMs;
  const base = { window: s.window, passDelayMs: s.passDelayMs, ...times, failures, random: seededRandom(s.seed + 2) };
  const engineLearned = runTimePredictions('learned');
  const learned = predictedOrder('learned', agingMs);
  const oracle = predictedOrder('oracle', agingMs);
  const engine = (predictions?: ReturnType<typeof runTimePredictions>) =>
    summary(simulate(fleet, jobsFor(pods, s), { ...base, policy: 'engine', random: seededRandom(s.seed + 2), ...(predictions ? { predictions } : {}) }));
  const runs: Record<string, Summary> = {
    'FIFO first-fit': summary(simulate(fleet, jobsFor(pods, s), { ...base, policy: 'fifo-first-fit' })),
    engine: engine(),
    'engine + learned predictions': engine(engineLearned),
    'engine + true run times (oracle)': engine(runTimePredictions('oracle')),
    'first-fit, learned order': summary(simulate(fleet, jobsFor(pods, s), { ...base, policy: 'fifo-first-fit', random: seededRandom(s.seed + 2), scheduler: new FirstFitScheduler(), order: learned })),
    'first-fit, oracle order': summary(simulate(fleet, jobsFor(pods, s), { ...base, policy: 'fifo-first-fit', random: seededRandom(s.seed + 2), scheduler: new FirstFitScheduler(), order: oracle })),
  };
  return { scenario: s, runs, predictionError: learned.error(), engineLearnedPredictionError: engineLearned.error() };
}

export function printLearned(r: ReturnType<typeof learnedRun>): void {
  const fifo = r.runs['FIFO first-fit'] as Summary;
  const x = (v: number, b: number) => (b === 0 ? '-' : `${(v / b).toFixed(2)}x`);
  console.log(
    table(
      ['scheduler', 'delay mean ms', '÷ FIFO', 'delay p99 ms', '÷ FIFO', 'GPU alloc', '÷ FIFO', '4+ GPU mean / max ms', 'jobs lost', 'reserved / backfilled', 'sched ms'],
      Object.entries(r.runs).map(([name, s]) => {
        const big = s.queueDelayByGroup['4+ GPUs'];
        return [
          name,
          s.queueDelayMs.mean,
          x(s.queueDelayMs.mean, fifo.queueDelayMs.mean),
          s.queueDelayMs.p99,
          x(s.queueDelayMs.p99, fifo.queueDelayMs.p99),
          s.gpuAllocation,
          x(s.gpuAllocation, fifo.gpuAllocation),
          big ? `${big.meanMs} / ${big.maxMs}` : '-',
          s.jobsLost,
          s.reserved || s.backfilled ? `${s.reserved} / ${s.backfilled}` : '-',
          s.schedulerMs,
        ];
      }),
    ),
  );
  const say = (what: string, e: typeof r.predictionError) =>
    console.log(`${what}: ${e.predicted} runs predicted before they started; median absolute error ${Math.round(e.medianAbsErrorMs)} simulated ms; ${(e.p90Coverage * 100).toFixed(0)}% ended within the predicted p90`);
  console.log('');
  say('predictions (learned online, only from runs that had ended), first-fit in learned order', r.predictionError);
  say('the same, engine + learned predictions', r.engineLearnedPredictionError);
}
