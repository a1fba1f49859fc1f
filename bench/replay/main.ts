/**
 * npm run bench:replay — the Alibaba GPU pod trace (time-compressed) on the Alibaba node list, through the
 * real placement engine in simulated time with 10% of nodes failing at random times, beside FIFO first-fit
 * on the same arrivals and failures. Two scenarios by default: "recorded" (the trace's own pace, 1000×
 * faster) and "burst" (arrivals 10,000× faster again than run times: the fleet saturates). Any files with
 * the same columns work (--pods-file, --nodes-file). Prints tables, writes bench/results/replay.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeRecord } from '@gpux/core';
import { buildFleet, seededRandom } from './fleet.js';
import { learnedRun, printLearned } from './learned-report.js';
import { machine, parseFlags, table } from './report-util.js';
import { runScenario, type ScenarioOptions, type Summary } from './scenario.js';
import { DEFAULT_NODE_FILE, DEFAULT_POD_FILE, type NodeRow, type PodRow, readNodeList, readPodList } from './trace-csv.js';
import { isVariant, makeVariant, VARIANTS, type VariantName } from './variants.js';

const FLAGS = {
  'pods-file': `pod list CSV (default ${DEFAULT_POD_FILE})`,
  'nodes-file': `node list CSV (default ${DEFAULT_NODE_FILE})`,
  compression: 'trace seconds per simulated second, for arrivals and run times alike (default 1000)',
  load: 'run one scenario with arrivals this many times faster again than run times (default: recorded = 1 and burst = 10000)',
  'fail-fraction': 'share of nodes that fail for good at a random time during the arrivals (default 0.1)',
  window: 'jobs per scheduling pass (default 1000, the coordinator default)',
  'pass-delay-ms': 'simulated ms from a change to the pass it triggers (default 10)',
  'aging-s': 'trace seconds a queued job waits per priority class it climbs (default 600)',
  buyers: 'synthetic buyers the pods are dealt to (default 20)',
  seed: 'random seed (default 1)',
  variant: `a variant of the pod list generated from it (variants.ts): ${VARIANTS.join(', ')} (default: default, the file as it is)`,
  'all-variants': 'run every variant (burst scenario unless --load is given) and print one table; writes bench/results/replay-variants.json',
  learned: 'issue 17: one scenario (burst unless --load) through FIFO first-fit, the engine, first-fit in the order of learned run-time predictions and in the order of the true run times (oracle), with the predictions\' error; writes bench/results/replay-learned.json',
  'check-misses': 'after every pass, count jobs left waiting that some node could take (scans nodes: slower)',
  out: 'result file (default bench/results/replay.json)',
  help: 'this list',
};

function print(name: string, r: ReturnType<typeof runScenario>): void {
  const e = r.results.engine as Summary;
  const b = r.results['fifo-first-fit'] as Summary;
  console.log(
    `\n== ${name}: ${r.scenario.compression}× compressed, arrivals ${r.scenario.load}× faster again over ${(r.arrivalsSpanMs / 1000).toFixed(1)} simulated s (offered load ${r.offeredLoad}); ${r.failingNodes} nodes fail`,
  );
  console.log(
    table(
      ['scheduler', 'delay mean ms', 'delay p99 ms', 'JCT mean ms', 'GPU alloc', 'alloc while waiting', 'unplaceable', 'jobs lost', 'attempts lost', 'misses', 'sched ms'],
      [e, b].map((x, i) => [
        i === 0 ? 'engine' : 'FIFO first-fit',
        x.queueDelayMs.mean,
        x.queueDelayMs.p99,
        x.jctMs.mean,
        x.gpuAllocation,
        x.gpuAllocationWhileWaiting,
        x.unplaceable,
        x.jobsLost,
        x.attemptsLost,
        r.scenario.countMisses ? x.misses : '-',
        x.schedulerMs,
      ]),
    ),
  );
  console.log(
    table(
      ['delay by group', 'jobs', 'engine mean ms', 'engine p99 ms', 'FIFO mean ms', 'FIFO p99 ms'],
      Object.keys(e.queueDelayByGroup).map((k) => {
        const x = e.queueDelayByGroup[k] as { jobs: number; meanMs: number; p99Ms: number };
        const y = b.queueDelayByGroup[k] as { jobs: number; meanMs: number; p99Ms: number };
        return [k, x.jobs, x.meanMs, x.p99Ms, y.meanMs, y.p99Ms];
      }),
    ),
  );
  const q = r.ratio;
  const f = (v: number | null) => (v === null ? '-' : `${v.toFixed(2)}x`);
  console.log(
    `engine ÷ FIFO first-fit: mean delay ${f(q.meanQueueDelay)}, p99 delay ${f(q.p99QueueDelay)}, GPU allocation ${f(q.gpuAllocation)}, while waiting ${f(q.gpuAllocationWhileWaiting)}, attempts lost ${f(q.attemptsLost)}`,
  );
}

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `--${k}  ${v}`).join('\n'));
    return;
  }
  const str = (k: string, d: string) => (typeof f[k] === 'string' ? (f[k] as string) : d);
  const podsFile = str('pods-file', DEFAULT_POD_FILE);
  const nodesFile = str('nodes-file', DEFAULT_NODE_FILE);
  const base: Omit<ScenarioOptions, 'name' | 'load'> = {
    compression: Number(str('compression', '1000')),
    failFraction: Number(str('fail-fraction', '0.1')),
    window: Number(str('window', '1000')),
    passDelayMs: Number(str('pass-delay-ms', '10')),
    agingTraceS: Number(str('aging-s', '600')),
    buyers: Number(str('buyers', '20')),
    seed: Number(str('seed', '1')),
  };
  const scenarios: ScenarioOptions[] =
    typeof f.load === 'string'
      ? [{ ...base, name: 'custom', load: Number(f.load) }]
      : [
          { ...base, name: 'recorded', load: 1 },
          { ...base, name: 'burst', load: 10_000 },
        ];
  const here = dirname(fileURLToPath(import.meta.url));
  const out = str('out', join(here, '..', 'results', 'replay.json'));
  const m = machine();
  const variant = str('variant', 'default');
  if (!isVariant(variant)) throw new Error(`unknown --variant ${variant}; one of ${VARIANTS.join(', ')}`);
  base.countMisses = f['check-misses'] === true;
  const rows = readNodeList(nodesFile);
  const filePods = readPodList(podsFile);
  if (f['all-variants']) return allVariants(filePods, rows, { ...base, name: typeof f.load === 'string' ? 'custom' : 'burst', load: typeof f.load === 'string' ? Number(f.load) : 10_000 }, podsFile, nodesFile, str('out', join(dirname(fileURLToPath(import.meta.url)), '..', 'results', 'replay-variants.json')));
  const pods = makeVariant(variant, filePods, rows, base.seed);
  const fleet = buildFleet(rows, undefined, [], seededRandom(base.seed), 0);
  if (f.learned) return learned(pods, fleet, { ...base, name: typeof f.load === 'string' ? 'custom' : 'burst', load: typeof f.load === 'string' ? Number(f.load) : 10_000 }, variant, str('out', join(dirname(fileURLToPath(import.meta.url)), '..', 'results', 'replay-learned.json')));
  const gpus = fleet.reduce((s, n) => s + n.advertisement.gpus.length, 0);
  console.log(`replay: ${pods.length.toLocaleString()} pods from ${podsFile}${variant === 'default' ? '' : ` (variant ${variant})`}`);
  console.log(`on ${fleet.length.toLocaleString()} nodes (${gpus.toLocaleString()} GPUs) from ${nodesFile}`);
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.node}, load ${m.loadavg1}`);
  const runs = scenarios.map((s) => {
    const r = runScenario(pods, fleet, s);
    print(s.name, r);
    return r;
  });
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        benchmark: 'replay',
        date: new Date().toISOString(),
        machine: m,
        loadavg1After: machine().loadavg1,
        files: { podsFile, nodesFile },
        variant,
        fleet: { nodes: fleet.length, gpus },
        notes: [
          'Times are simulated ms (× compression / 1000 for trace seconds). Queue delay = first start − arrival; it includes the pass delay (the coordinator reacting to a change).',
          'GPU allocation = time-weighted allocated GPUs / GPUs on live nodes from the first to the last arrival; "while waiting": over the time some due job waited after a pass (how well waiting work was packed).',
          'Run time = deletion_time − scheduled_time of the pod (the trace median for pods never scheduled); a shared-GPU pod takes one whole GPU; qos Guaranteed → high, LS/Burstable → normal, BE → low priority.',
          'Failing nodes go down for good at a random time during the arrivals; their attempts are lost and requeued with the coordinator backoff (maxRetries 20), away from the node. jobsLost counts jobs that never completed.',
        ],
        scenarios: runs,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${out}`);
}

/** Issue 17: one scenario through the four orders (learned-report.ts), printed and written. */
function learned(pods: PodRow[], fleet: NodeRecord[], s: ScenarioOptions, variant: VariantName, out: string): void {
  const m = machine();
  console.log(`replay --learned: ${pods.length.toLocaleString()} pods${variant === 'default' ? '' : ` (variant ${variant})`} on ${fleet.length.toLocaleString()} nodes; scenario ${s.name} (arrivals ${s.load}× faster again), seed ${s.seed}\n`);
  const r = learnedRun(pods, fleet, s);
  printLearned(r);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ benchmark: 'replay-learned', date: new Date().toISOString(), machine: m, variant, ...r }, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
}

/** Every variant through one scenario, one table: same-run ratios engine ÷ FIFO first-fit. */
function allVariants(filePods: PodRow[], rows: NodeRow[], s: ScenarioOptions, podsFile: string, nodesFile: string, out: string): void {
  const m = machine();
  const fleet = buildFleet(rows, undefined, [], seededRandom(s.seed), 0);
  console.log(`replay, every variant of ${podsFile} on ${fleet.length.toLocaleString()} nodes from ${nodesFile}; scenario ${s.name} (arrivals ${s.load}× faster again)`);
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.node}, load ${m.loadavg1}\n`);
  const runs: Array<{ variant: VariantName; run: ReturnType<typeof runScenario> }> = [];
  for (const v of VARIANTS) runs.push({ variant: v, run: runScenario(makeVariant(v, filePods, rows, s.seed), fleet, s) });
  const f = (v: number | null) => (v === null ? '-' : `${v.toFixed(2)}x`);
  console.log(
    table(
      ['variant', 'mean ms E', 'mean ms F', 'mean E÷F', 'p99 ms E', 'p99 ms F', 'p99 E÷F', 'GPU alloc E', 'GPU alloc F', 'alloc E÷F', 'unplaceable', 'lost E', 'lost F', 'att. lost E', 'att. lost F', 'misses E'],
      runs.map(({ variant, run }) => {
        const e = run.results.engine as Summary;
        const b = run.results['fifo-first-fit'] as Summary;
        return [variant, e.queueDelayMs.mean, b.queueDelayMs.mean, f(run.ratio.meanQueueDelay), e.queueDelayMs.p99, b.queueDelayMs.p99, f(run.ratio.p99QueueDelay), e.gpuAllocation, b.gpuAllocation, f(run.ratio.gpuAllocation), e.unplaceable, e.jobsLost, b.jobsLost, e.attemptsLost, b.attemptsLost, s.countMisses ? e.misses : '-'];
      }),
    ),
  );
  console.log('\nE = placement engine, F = FIFO first-fit; delays are queue delays of completed jobs (simulated ms); misses: job-passes left waiting while a node fitted (--check-misses).');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify({ benchmark: 'replay-variants', date: new Date().toISOString(), machine: m, loadavg1After: machine().loadavg1, files: { podsFile, nodesFile }, scenario: s, variants: runs }, null, 2)}\n`);
  console.log(`\nwrote ${out}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
