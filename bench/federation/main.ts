/**
 * npm run bench:federation (issue 15): three regions on loopback, arrivals skewed to the smallest. Two runs on fresh
 * data dirs in the same invocation, with the same seeded arrivals: "alone" (not peered, GPUX_FORWARD=off: each region
 * only has its own GPUs) and "federated" (peered over latency-injecting proxies, forwarding on). Reports the job wait
 * (submit → running at home) per home region and overall, federated ÷ alone; where forwarded jobs ran; the extra
 * latency of a forwarded attempt (job.forwarded → running at home) beside a local one (job.assigned → running), same
 * run; and coordinator CPU per job. The extra CPU per forwarded job comes from a probe at the end of the federated run
 * (cpuProbe): the same steady load on one node, submitted there, then forwarded to it. Prints tables, writes
 * bench/results/federation.json. See bench/README.md.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { machine, parseFlags } from '../replay/report-util.js';
import { type LoopbackRegions, startLoopbackRegions } from './regions.js';
import { type CpuFigures, cpuSummary, cpuTable, latencyTable, placements, type ProbeFigures, type ProbeHalf, probeTable, type RunFigures, waitSummary, waitTable } from './report.js';
import { runWorkload, schedule, steady, type WorkloadOptions } from './workload.js';

const FLAGS = {
  jobs: 'jobs per run (default 90)',
  seconds: 'mean arrival span, s: the Poisson rate is jobs ÷ this (default 30)',
  skew: 'share of jobs submitted to the first region (default 0.8; the rest split evenly)',
  regions: 'region names, the hot one first (default us-west,us-east,eu-central)',
  gpus: 'GPUs of each region\'s one simulated node (default 2,6,6)',
  delays: 'one-way link delay ms, first–second, first–third, second–third (default 5,40,120)',
  'sim-seconds': 'how long each job runs on its simulated node (default 3)',
  seed: 'random seed of the arrivals (default 1)',
  mode: 'both, alone or federated (default both)',
  'forward-after-s': 'GPUX_FORWARD_AFTER_S of the federated run (default 1)',
  'forward-poll-ms': 'GPUX_FORWARD_POLL_MS (default 200)',
  'peer-summary-ms': 'GPUX_PEER_SUMMARY_MS (default 300)',
  'idle-s': 'seconds of idle CPU measured before each run\'s first job (default 5)',
  'probe-jobs': 'jobs in each half of the federated run\'s CPU probe (default 24; 0: no probe)',
  'probe-rate': 'jobs/s of the probe, within the second region\'s GPUs (default 1.5)',
  'timeout-s': 'longest a run may take after its first submit (default 600)',
  out: 'result file (default bench/results/federation.json)',
  help: 'this list',
};

/** A job's price cap (10 USDC per GPU-hour, far above the simulated class's index) and timeout: escrow and stake follow. */
const CAP_PER_GPU_HOUR = 10_000_000;
const TIMEOUT_SECONDS = 60;

const log = (msg: string) => process.stderr.write(`[bench:federation] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const f = parseFlags(process.argv.slice(2), FLAGS);
if (f.help) {
  process.stdout.write(`npm run bench:federation -- [flags]\n${Object.entries(FLAGS).map(([k, v]) => `  --${k}  ${v}`).join('\n')}\n`);
  process.exit(0);
}
const str = (k: keyof typeof FLAGS, d: string) => (typeof f[k] === 'string' ? (f[k] as string) : d);
const num = (k: keyof typeof FLAGS, d: number) => {
  const v = Number(str(k, String(d)));
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${k} takes a number ≥ 0, got ${f[k]}`);
  return v;
};
const list = (k: keyof typeof FLAGS, d: string) => str(k, d).split(',');

const names = list('regions', 'us-west,us-east,eu-central');
const gpus = list('gpus', '2,6,6').map(Number);
const delays = list('delays', '5,40,120').map(Number);
if (names.length !== 3 || gpus.length !== 3 || delays.length !== 3) throw new Error('--regions, --gpus and --delays take three values each');
const [a, b, c] = names as [string, string, string];
const links: Array<[string, string, number]> = [
  [a, b, delays[0] as number],
  [a, c, delays[1] as number],
  [b, c, delays[2] as number],
];
const workload: WorkloadOptions = {
  jobs: num('jobs', 90),
  seconds: num('seconds', 30),
  skew: num('skew', 0.8),
  simSeconds: num('sim-seconds', 3),
  capPerGpuHour: CAP_PER_GPU_HOUR,
  timeoutSeconds: TIMEOUT_SECONDS,
  seed: num('seed', 1),
};
const mode = str('mode', 'both');
if (!['both', 'alone', 'federated'].includes(mode)) throw new Error(`--mode takes both, alone or federated, got ${mode}`);
const modes = (mode === 'both' ? ['alone', 'federated'] : [mode]) as Array<'alone' | 'federated'>;
const settings = { peerSummaryMs: num('peer-summary-ms', 300), forwardPollMs: num('forward-poll-ms', 200), forwardAfterS: num('forward-after-s', 1) };
const idleS = num('idle-s', 5);
const probeJobs = num('probe-jobs', 24);
const probeRate = num('probe-rate', 1.5);
const timeoutS = num('timeout-s', 600);
if (probeJobs > 0 && probeRate <= 0) throw new Error('--probe-rate must be above 0');
const here = dirname(fileURLToPath(import.meta.url));
const out = str('out', join(here, '..', 'results', 'federation.json'));

const arrivals = schedule(workload, names);

async function run(m: 'alone' | 'federated'): Promise<RunFigures> {
  const dir = mkdtempSync(join(tmpdir(), `gpux-bench-fed-${m}-`));
  log(`${m}: starting ${names.length} coordinators and nodes in ${dir}`);
  const set = await startLoopbackRegions({
    regions: names.map((name, i) => ({ name, gpus: gpus[i] as number })),
    links,
    dir,
    federated: m === 'federated',
    capPerGpuHour: CAP_PER_GPU_HOUR,
    timeoutSeconds: TIMEOUT_SECONDS,
    ...settings,
  }).catch((err) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  try {
    // Background cost first: scheduling ticks, heartbeats, and in the federated run the summary exchange.
    const idle0 = set.coordinatorCpuMs();
    const idleT0 = Date.now();
    await sleep(idleS * 1000);
    const cpu0 = set.coordinatorCpuMs();
    const idleSeconds = (Date.now() - idleT0) / 1000;
    log(`${m}: ${workload.jobs} jobs over ~${workload.seconds} s`);
    const { jobs, times } = await runWorkload(workload, set.regions, arrivals, Date.now() + timeoutS * 1000);
    const cpu1 = set.coordinatorCpuMs();
    const seconds = (times.endedAt - times.startedAt) / 1000;
    log(`${m}: done in ${seconds.toFixed(1)} s${times.timedOut ? ' (timed out)' : ''}`);
    const cpu = cpuFigures(idle0, cpu0, cpu1, idleSeconds, seconds);
    const probe = m === 'federated' && probeJobs > 0 && cpu ? await cpuProbe(set, cpu.idleMsPerS) : null;
    return { mode: m, jobs, seconds, timedOut: times.timedOut, cpu, probe };
  } finally {
    await set.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

type CpuReading = Record<string, number | null>;

/**
 * The same steady load run twice on the second region's node, back to back on the federated system once idle:
 * submitted there (local), then submitted at the first region naming the second (constraints.region: forwarded at
 * once, no queue wait anywhere). The coordinators' CPU difference is what forwarding itself costs, beside a
 * baseline of the same jobs on the same node in the same run.
 */
async function cpuProbe(set: LoopbackRegions, idleMsPerS: Record<string, number>): Promise<ProbeFigures> {
  const half = async (home: string, firstIndex: number): Promise<ProbeHalf> => {
    await sleep(2000); // the run before it settles (last polls, bills)
    const c0 = set.coordinatorCpuMs();
    const { jobs, times } = await runWorkload(workload, set.regions, steady(probeJobs, 1000 / probeRate, home, b, firstIndex), Date.now() + timeoutS * 1000);
    const c1 = set.coordinatorCpuMs();
    const seconds = (times.endedAt - times.startedAt) / 1000;
    const cpuMs = Object.fromEntries(names.map((n) => [n, (c1[n] ?? 0) - (c0[n] ?? 0)]));
    const overIdleMs = names.reduce((sum, n) => sum + (cpuMs[n] as number) - (idleMsPerS[n] ?? 0) * seconds, 0);
    return { home, jobs, seconds, timedOut: times.timedOut, cpuMs, overIdleMs };
  };
  log(`federated: CPU probe, ${probeJobs} jobs at ${probeRate}/s on ${b}'s node, submitted at ${b} then forwarded from ${a}`);
  const local = await half(b, 100_000);
  const forwarded = await half(a, 200_000);
  return { target: b, local, forwarded };
}

function cpuFigures(idle0: CpuReading, cpu0: CpuReading, cpu1: CpuReading, idleSeconds: number, seconds: number): CpuFigures | null {
  const idleMsPerS: Record<string, number> = {};
  const busyMs: Record<string, number> = {};
  let totalMs = 0;
  let totalOverIdleMs = 0;
  for (const name of names) {
    const [i0, c0, c1] = [idle0[name], cpu0[name], cpu1[name]];
    if (i0 == null || c0 == null || c1 == null) return null; // /proc unreadable: no CPU figures at all
    idleMsPerS[name] = (c0 - i0) / idleSeconds;
    busyMs[name] = c1 - c0;
    totalMs += c1 - c0;
    totalOverIdleMs += c1 - c0 - (idleMsPerS[name] as number) * seconds;
  }
  return { idleMsPerS, busyMs, seconds, totalMs, totalOverIdleMs };
}

const mach = machine();
const load0 = loadavg()[0] ?? 0;
const runs: RunFigures[] = [];
for (const m of modes) runs.push(await run(m));
const load1 = loadavg()[0] ?? 0;

const cpu = cpuSummary(runs);
const fed = runs.find((r) => r.mode === 'federated');
const ms = (x: number | null) => (x === null ? '-' : `${x.toFixed(1)} ms`);
const lines = [
  `bench:federation — ${workload.jobs} one-GPU jobs of ${workload.simSeconds} s, Poisson over ~${workload.seconds} s, ${Math.round(workload.skew * 100)}% to ${a}; GPUs ${names.map((n, i) => `${n} ${gpus[i]}`).join(', ')}; links ${links.map(([x, y, d]) => `${x}↔${y} ${d} ms`).join(', ')} (one way); load ${load0.toFixed(1)} → ${load1.toFixed(1)}`,
  '',
  'job wait, submit → running at home (s):',
  waitTable(names, runs),
  '',
  'attempt created → running at home (ms):',
  latencyTable(runs),
  '',
  'coordinator CPU (idle: before the first job, same run):',
  cpuTable(names, runs),
  '',
  `CPU per job: alone ${ms(cpu.aloneMsPerJob)}, federated ${ms(cpu.federatedMsPerJob)}; (federated − alone) ÷ forwarded jobs (${cpu.forwarded}): ${ms(cpu.extraMsPerForwardedJob)}, ${ms(cpu.extraOverIdleMsPerForwardedJob)} with each run's idle rate taken out`,
  '  (includes the summary exchange and forward polling over the whole run; the runs differ in length, and the alone run holds a long queue: read the probe)',
];
if (fed?.probe) {
  const by = Object.entries(cpu.probeExtraMsByCoordinator ?? {})
    .map(([n, x]) => `${n} ${x.toFixed(1)}`)
    .join(', ');
  lines.push('', `CPU probe on ${fed.probe.target}'s node (same jobs, same run):`, probeTable(fed.probe), `extra coordinator CPU per forwarded job: ${ms(cpu.probeExtraMsPerForwardedJob)} (${by} ms)`);
}
for (const r of runs) {
  const bad = [...r.jobs, ...(r.probe ? [...r.probe.local.jobs, ...r.probe.forwarded.jobs] : [])].filter((j) => j.state !== 'succeeded');
  if (bad.length || r.timedOut) lines.push(`note: ${r.mode}: ${bad.length} jobs did not succeed (${[...new Set(bad.map((j) => j.submitError ?? j.state))].join('; ')})${r.timedOut ? ', timed out' : ''}`);
}
if (fed && cpu.forwarded === 0) lines.push('note: the federated run forwarded no job (is forwarding in this build?)');
process.stdout.write(`${lines.join('\n')}\n`);

mkdirSync(dirname(out), { recursive: true });
const result = {
  at: new Date().toISOString(),
  machine: mach,
  loadavg: [load0, load1],
  workload,
  regions: names.map((n, i) => ({ name: n, gpus: gpus[i] })),
  links: links.map(([x, y, delayMs]) => ({ between: [x, y], delayMs })),
  settings,
  runs: runs.map((r) => ({ mode: r.mode, seconds: r.seconds, timedOut: r.timedOut, cpu: r.cpu, waitMs: waitSummary(names, r.jobs), placements: placements(r.jobs), jobs: r.jobs, probe: r.probe ?? null })),
  cpu,
};
writeFileSync(out, `${JSON.stringify(result, null, 2)}\n`);
process.stdout.write(`wrote ${out}\n`);
