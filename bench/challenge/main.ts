/**
 * npm run bench:challenge — proof of hardware (issue 12) for 1,000 nodes joining at once.
 *  1. The coordinator's check per challenge, measured with core's real functions (regenerate A's rows and B,
 *     Merkle paths, Freivalds k = 2) for n = 256 … 8192: ms per GPU and ns per n² (flat: O(n²)); beside it,
 *     checking the same blocks by recomputing their rows.
 *  2. Time until all 1,000 are proven: modelled honest runs (class table, start-up, hashing, jitter) arrive at
 *     a coordinator with C check workers, each check costing what (1) measured.
 *  3. False rejections of honest nodes under injected timing jitter (goal 0 at sigma ≤ 0.3 with 1% 2× stalls),
 *     beside a tight tolerance (1.25×) on the same timings.
 *  4. Catch rates: CPU claiming a GPU class (time), wrong products (Freivalds), honest digests with fake
 *     reveals and the reverse (Merkle), k identities on one GPU (time) — each beside honest nodes' pass rate.
 * Prints tables, writes bench/results/challenge.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CHALLENGE_CLASSES, DEFAULT_FREIVALDS_ROUNDS, expectedComputeMs, GPU_TOLERANCE, seededRandom } from '@gpux/core';
import { machine, parseFlags, percentile, table } from '../replay/report-util.js';
import { type CheckCost, measureCheckCost } from './check-cost.js';
import { expectedCatch, type ProductCheat, runProductCheat } from './cheats.js';
import { buildFleet, honestTiming, type Jitter, type NodeModel, sizingOf, verdictOf } from './fleet.js';

const FLAGS = {
  nodes: 'nodes joining at once (default 1000)',
  trials: 'challenges per product cheat (default 300)',
  'max-n': 'largest n measured for the check cost (default 8192)',
  seed: 'random seed (default 1)',
  out: 'result file (default bench/results/challenge.json)',
  help: 'this list',
};

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const s1 = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

function main(): void {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `  --${k}  ${v}`).join('\n'));
    return;
  }
  const num = (k: string, d: number) => (typeof f[k] === 'string' ? Number(f[k]) : d);
  const nodes = num('nodes', 1000);
  const trials = num('trials', 300);
  const maxN = num('max-n', 8192);
  const seed = num('seed', 1);
  const here = dirname(fileURLToPath(import.meta.url));
  const out = typeof f.out === 'string' ? f.out : join(here, '..', 'results', 'challenge.json');
  const m = machine();
  const began = performance.now();
  console.log(`challenge benchmark: ${nodes} nodes joining at once, seed ${seed}`);
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.node}, load ${m.loadavg1}\n`);

  // 1. Check cost.
  measureCheckCost(128, 2); // JIT warm-up
  const costs: CheckCost[] = [];
  for (const n of [256, 512, 1024, 2048, 4096, 8192].filter((x) => x <= maxN)) costs.push(measureCheckCost(n, n >= 4096 ? 1 : 3));
  console.log('1. coordinator check per GPU (2 products × 2 blocks, Freivalds k = 2), core functions, one core');
  console.log(table(['n', 'rowBlock', 'check ms', 'ns / n²', 'direct rows ms (baseline)'], costs.map((c) => [String(c.n), String(c.rowBlock), c.checkMs.toFixed(1), c.nsPerEntry.toFixed(1), c.directMs.toFixed(1)])));
  const costAt = (n: number, direct = false) => {
    const c = costs.find((x) => x.n === n) ?? costs[costs.length - 1]!;
    const scale = (n / c.n) ** 2; // beyond the measured sizes: O(n²)
    return (direct ? c.directMs : c.checkMs) * scale;
  };

  // 2. Time until all proven.
  const fleet = buildFleet(nodes, seededRandom(seed));
  const jitter: Jitter = { sigma: 0.3, stallP: 0.01 };
  const rnd = seededRandom(seed + 1);
  const arrivals = fleet.map((node) => {
    const s = sizingOf(node);
    return { at: honestTiming(node, s, rnd, jitter).elapsedMs, n: s.n, gpus: Math.max(1, node.gpus) };
  });
  const provenAfter = (workers: number, direct: boolean) => {
    const free = new Array(workers).fill(0);
    const done: number[] = [];
    for (const a of [...arrivals].sort((x, y) => x.at - y.at)) {
      const i = free.indexOf(Math.min(...free));
      const start = Math.max(free[i], a.at);
      free[i] = start + a.gpus * costAt(a.n, direct);
      done.push(free[i]);
    }
    return { allMs: Math.max(...done), p50Ms: percentile(done, 50), checkCpuMs: arrivals.reduce((t, a) => t + a.gpus * costAt(a.n, direct), 0) };
  };
  const queue = [1, 4, 16].map((w) => ({ workers: w, ours: provenAfter(w, false), direct: provenAfter(w, true) }));
  const gpuChecks = arrivals.reduce((t, a) => t + (a.n > 256 ? a.gpus : 0), 0);
  console.log(`\n2. ${nodes} nodes join at once (${fleet.filter((x) => x.gpus === 0).length} CPU, ${gpuChecks} GPUs to check): time until all are proven`);
  console.log(
    table(
      ['check workers', 'all proven', 'median node', 'coordinator CPU', 'baseline (direct rows): all proven'],
      queue.map((q) => [String(q.workers), s1(q.ours.allMs), s1(q.ours.p50Ms), s1(q.ours.checkCpuMs), s1(q.direct.allMs)]),
    ),
  );

  // 3. False rejections under jitter.
  const tight = { ...GPU_TOLERANCE, maxSlowdown: 1.25, warmupMs: 0 };
  const jitters: Jitter[] = [
    { sigma: 0, stallP: 0 },
    { sigma: 0.15, stallP: 0.01 },
    { sigma: 0.3, stallP: 0.01 },
    { sigma: 0.5, stallP: 0.02 },
  ];
  const falseRejections = jitters.map((j) => {
    const r = seededRandom(seed + 2);
    let ours = 0;
    let base = 0;
    for (const node of fleet) {
      const s = sizingOf(node);
      const t = honestTiming(node, s, r, j);
      if (verdictOf(node, s, t).outcome !== 'passed') ours++;
      if (verdictOf(node, { ...s, tolerance: { ...s.tolerance, ...(node.gpus ? tight : { maxSlowdown: 1.25, warmupMs: 0 }) } }, t).outcome !== 'passed') base++;
    }
    return { sigma: j.sigma, stallP: j.stallP, rejected: ours, rate: ours / fleet.length, baselineTight: base };
  });
  console.log('\n3. honest nodes rejected under timing jitter (log-normal sigma, plus 2× stalls)');
  console.log(table(['sigma', '2× stalls', 'rejected (ours)', 'baseline: tolerance 1.25×'], falseRejections.map((x) => [String(x.sigma), pct(x.stallP), `${x.rejected} (${pct(x.rate)})`, x.baselineTight])));

  // 4. Cheats.
  const r4 = seededRandom(seed + 3);
  const gpuNodes = fleet.filter((x) => x.gpus > 0);
  const rate = (xs: boolean[]) => xs.filter(Boolean).length / Math.max(1, xs.length);
  const cpuCheat = (lie: boolean, cpuGflops?: number) =>
    rate(
      gpuNodes.map((node) => {
        const s = sizingOf(node);
        const cpuSpeed = cpuGflops ?? CHALLENGE_CLASSES.cpu!.gflops * (0.6 + r4.next() * 1.4);
        const computeMs = (Math.max(1, node.gpus) * s.products * 2 * s.n ** 3) / (cpuSpeed * 1e6);
        const t = { computeMs, elapsedMs: 500 + computeMs };
        return verdictOf(node, s, t, lie ? expectedComputeMs(node.classKey, s.n, s.products) : computeMs).outcome !== 'passed';
      }),
    );
  const sybil = (k: number, lie: boolean) =>
    rate(
      gpuNodes.map((node) => {
        const s = sizingOf(node);
        const t = honestTiming(node, s, r4, jitter, k);
        return verdictOf(node, s, t, lie ? t.computeMs / k : t.computeMs).outcome !== 'passed';
      }),
    );
  const honestPass = rate(gpuNodes.map((node) => verdictOf(node, sizingOf(node), honestTiming(node, sizingOf(node), r4, jitter)).outcome === 'passed'));
  const productCheats: ProductCheat[] = ['honest', 'all-garbage', 'half-products-garbage', 'one-block-wrong-per-product', 'honest-digests-fake-reveals', 'garbage-digests-honest-rows-on-request'];
  const r5 = seededRandom(seed + 4);
  const productRows = productCheats.map((c) => ({ cheat: c, caught: rate(Array.from({ length: trials }, () => runProductCheat(c, r5))), expected: expectedCatch(c) }));
  const cheats = [
    { cheat: 'CPU (cpu runner) claims the GPU class, reports honestly', by: 'time', caught: cpuCheat(false) },
    { cheat: 'CPU (cpu runner) claims the GPU class, reports the GPU time', by: 'deadline', caught: cpuCheat(true) },
    { cheat: 'server CPU with BLAS (2 TFLOP/s) claims the GPU class', by: 'time', caught: cpuCheat(false, 2000) },
    ...[2, 4, 8].flatMap((k) => [
      { cheat: `${k} identities on one GPU, report honestly`, by: 'time', caught: sybil(k, false) },
      { cheat: `${k} identities on one GPU, report 1/${k} of the time`, by: 'deadline', caught: sybil(k, true) },
    ]),
  ];
  console.log(`\n4. catch rate per challenge (GPU nodes; honest GPU nodes pass: ${pct(honestPass)}, jitter sigma ${jitter.sigma})`);
  console.log(table(['cheat', 'caught by', 'caught'], cheats.map((c) => [c.cheat, c.by, pct(c.caught)])));
  console.log(`\n   product cheats through core's checks (${trials} challenges each, reveal 2 of 8 products × 2 of 16 blocks, Freivalds k = ${DEFAULT_FREIVALDS_ROUNDS})`);
  console.log(table(['cheat', 'caught', 'expected from the reveal counts'], productRows.map((c) => [c.cheat, pct(c.caught), pct(c.expected)])));

  const json = {
    benchmark: 'challenge',
    when: new Date().toISOString(),
    machine: m,
    seed,
    nodes,
    runSeconds: (performance.now() - began) / 1000,
    notes: [
      'Check costs are measured (core functions, one core). Node timings are modelled from the class table (GPU rows: vendor fp32 peak × 0.5, estimated, not measured), start-up 2–15 s (GPU) or 0.05–1 s (CPU), hashing 4–20 GB/s, and the jitter given.',
      'Goal: 0 honest rejections at sigma ≤ 0.3 with 1% 2× stalls.',
      'k identities on one GPU are caught when k × the work exceeds the tolerance (3× + warm-up) or the deadline: 2 identities on a card faster than its class row can pass.',
      'A CPU fast enough (BLAS on many cores) can pass for a slow GPU class: the time proves throughput, not the model.',
    ],
    checkCost: costs,
    provenAfter: queue,
    falseRejections,
    honestGpuPassRate: honestPass,
    cheats,
    productCheats: productRows,
  };
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`\nwrote ${out} in ${json.runSeconds.toFixed(0)} s`);
}

main();
export type { NodeModel };
