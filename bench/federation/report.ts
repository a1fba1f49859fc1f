/** Figures of the federation bench: job wait per home region, forwarding latency, coordinator CPU, as tables. */
import { mean, percentile, table } from '../replay/report-util.js';
import type { JobOutcome } from './workload.js';

export interface Dist {
  n: number;
  mean: number;
  p50: number;
  p95: number;
  max: number;
}

export function dist(xs: number[]): Dist {
  return { n: xs.length, mean: mean(xs), p50: percentile(xs, 50), p95: percentile(xs, 95), max: xs.length ? Math.max(...xs) : Number.NaN };
}

export interface CpuFigures {
  /** Per coordinator: CPU ms per second while idle (regions up, peered in the federated run, no job yet). */
  idleMsPerS: Record<string, number>;
  /** Per coordinator: CPU ms from the first submit to the last job's end. */
  busyMs: Record<string, number>;
  /** The run's wall time, first submit → last end, s. */
  seconds: number;
  /** Σ busyMs. */
  totalMs: number;
  /** Σ (busyMs − idle rate × seconds): the work the jobs themselves caused, the background's cost taken out. */
  totalOverIdleMs: number;
}

export interface RunFigures {
  mode: 'alone' | 'federated';
  jobs: JobOutcome[];
  seconds: number;
  timedOut: boolean;
  cpu: CpuFigures | null;
  /** The federated run's CPU probe (main.ts cpuProbe); null in the alone run or without /proc. */
  probe?: ProbeFigures | null;
}

export interface ProbeHalf {
  /** Where the jobs were submitted. */
  home: string;
  jobs: JobOutcome[];
  seconds: number;
  timedOut: boolean;
  /** Per coordinator: CPU ms from the first submit to the last end. */
  cpuMs: Record<string, number>;
  /** Σ over coordinators of cpuMs − idle rate × seconds. */
  overIdleMs: number;
}

export interface ProbeFigures {
  /** The region whose node ran every probe job. */
  target: string;
  local: ProbeHalf;
  forwarded: ProbeHalf;
}

export const waitsOf = (jobs: JobOutcome[]) => jobs.flatMap((j) => (j.waitMs === null ? [] : [j.waitMs]));

/** Wait distributions (ms) per home region and overall: what the JSON keeps beside the jobs. */
export function waitSummary(regions: string[], jobs: JobOutcome[]): Record<string, Dist> {
  return Object.fromEntries([...regions, 'all'].map((home) => [home, dist(waitsOf(home === 'all' ? jobs : jobs.filter((j) => j.home === home)))]));
}

/** Where each region's jobs ran: { home: { ranAt: count } }. */
export function placements(jobs: JobOutcome[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const j of jobs) {
    const at = j.ranAt ?? 'never ran';
    const row = out[j.home] ?? {};
    row[at] = (row[at] ?? 0) + 1;
    out[j.home] = row;
  }
  return out;
}

const s = (ms: number) => (Number.isFinite(ms) ? (ms / 1000).toFixed(2) : '-');
const ratio = (a: number, b: number) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? `${(a / b).toFixed(2)}x` : '-');

/** Wait (submit → running) per home region and overall, each run, with federated ÷ alone. */
export function waitTable(regions: string[], runs: RunFigures[]): string {
  const alone = runs.find((r) => r.mode === 'alone');
  const fed = runs.find((r) => r.mode === 'federated');
  const rows: Array<Array<string | number>> = [];
  for (const home of [...regions, 'all']) {
    const pick = (r: RunFigures | undefined) => (r ? dist(waitsOf(home === 'all' ? r.jobs : r.jobs.filter((j) => j.home === home))) : null);
    const a = pick(alone);
    const f = pick(fed);
    for (const [mode, d] of [
      ['alone', a],
      ['federated', f],
    ] as const) {
      if (!d) continue;
      const run = mode === 'alone' ? alone : fed;
      const jobs = (run?.jobs ?? []).filter((j) => home === 'all' || j.home === home);
      const where = Object.entries(countBy(jobs.filter((j) => j.forwarded).map((j) => j.ranAt ?? '?')))
        .map(([k, v]) => `${v}→${k}`)
        .join(' ');
      const vs = mode === 'federated' && a ? `${ratio(d.mean, a.mean)} / ${ratio(d.p95, a.p95)}` : '';
      rows.push([home, mode, `${d.n}/${jobs.length}`, s(d.mean), s(d.p50), s(d.p95), s(d.max), where || '-', vs]);
    }
  }
  return table(['home region', 'run', 'ran/jobs', 'wait mean s', 'p50 s', 'p95 s', 'max s', 'forwarded', 'fed/alone (mean / p95)'], rows);
}

/** Attempt created → running at home: forwarded (per peer) beside placed on a local node, same run. */
export function latencyTable(runs: RunFigures[]): string {
  const rows: Array<Array<string | number>> = [];
  for (const run of runs) {
    const local = run.jobs.filter((j) => !j.forwarded && j.assignToRunMs !== null);
    const add = (label: string, js: JobOutcome[]) => {
      const d = dist(js.map((j) => j.assignToRunMs as number));
      if (d.n) rows.push([run.mode, label, String(d.n), d.mean.toFixed(0), d.p50.toFixed(0), d.p95.toFixed(0), d.max.toFixed(0)]);
    };
    add('local node (job.assigned → running)', local);
    const fwd = run.jobs.filter((j) => j.forwarded && j.assignToRunMs !== null);
    for (const peer of [...new Set(fwd.map((j) => j.ranAt as string))].sort()) add(`forwarded to ${peer} (job.forwarded → running at home)`, fwd.filter((j) => j.ranAt === peer));
    if (fwd.length) add('forwarded, all', fwd);
  }
  return table(['run', 'attempt', 'n', 'mean ms', 'p50 ms', 'p95 ms', 'max ms'], rows);
}

export interface CpuSummary {
  /** From the probe: (forwarded half − local half) ÷ jobs, each half's idle background taken out. The figure to read. */
  probeExtraMsPerForwardedJob: number | null;
  /** The same per coordinator (home and peer pay different parts). */
  probeExtraMsByCoordinator: Record<string, number> | null;
  aloneMsPerJob: number | null;
  federatedMsPerJob: number | null;
  forwarded: number;
  /** (federated − alone) ÷ forwarded jobs, raw: includes the summary exchange and polling for the whole run. */
  extraMsPerForwardedJob: number | null;
  /** The same with each coordinator's idle rate × the run's length taken out of both runs first. */
  extraOverIdleMsPerForwardedJob: number | null;
}

export function cpuSummary(runs: RunFigures[]): CpuSummary {
  const alone = runs.find((r) => r.mode === 'alone');
  const fed = runs.find((r) => r.mode === 'federated');
  const perJob = (r: RunFigures | undefined) => (r?.cpu ? r.cpu.totalMs / r.jobs.length : null);
  const forwarded = fed?.jobs.filter((j) => j.forwarded).length ?? 0;
  const extra = (k: 'totalMs' | 'totalOverIdleMs') => (alone?.cpu && fed?.cpu && forwarded > 0 ? (fed.cpu[k] - alone.cpu[k]) / forwarded : null);
  const p = fed?.probe;
  const idle = fed?.cpu?.idleMsPerS ?? {};
  const byCoordinator = p
    ? Object.fromEntries(
        Object.keys(p.local.cpuMs).map((n) => {
          const over = (h: ProbeHalf) => (h.cpuMs[n] ?? 0) - (idle[n] ?? 0) * h.seconds;
          return [n, (over(p.forwarded) - over(p.local)) / p.forwarded.jobs.length];
        }),
      )
    : null;
  return {
    probeExtraMsPerForwardedJob: p ? (p.forwarded.overIdleMs - p.local.overIdleMs) / p.forwarded.jobs.length : null,
    probeExtraMsByCoordinator: byCoordinator,
    aloneMsPerJob: perJob(alone),
    federatedMsPerJob: perJob(fed),
    forwarded,
    extraMsPerForwardedJob: extra('totalMs'),
    extraOverIdleMsPerForwardedJob: extra('totalOverIdleMs'),
  };
}

export function cpuTable(regions: string[], runs: RunFigures[]): string {
  const rows: Array<Array<string | number>> = [];
  for (const run of runs) {
    if (!run.cpu) continue;
    const c = run.cpu;
    for (const name of regions) rows.push([run.mode, name, (c.idleMsPerS[name] ?? Number.NaN).toFixed(1), (c.busyMs[name] ?? Number.NaN).toFixed(0), '', '']);
    rows.push([run.mode, 'all', '', c.totalMs.toFixed(0), (c.totalMs / run.jobs.length).toFixed(1), (c.totalOverIdleMs / run.jobs.length).toFixed(1)]);
  }
  return table(['run', 'coordinator', 'idle cpu ms/s', 'cpu ms (run)', 'cpu ms/job', 'over idle ms/job'], rows);
}

/** The probe's two halves: same jobs on the same node, submitted there or forwarded to it. */
export function probeTable(p: ProbeFigures): string {
  const rows: Array<Array<string | number>> = [];
  for (const [label, h] of [
    [`local: submitted at ${p.target}`, p.local],
    [`forwarded: submitted at ${p.forwarded.home}`, p.forwarded],
  ] as const) {
    const wait = dist(waitsOf(h.jobs));
    const run = dist(h.jobs.flatMap((j) => (j.assignToRunMs === null ? [] : [j.assignToRunMs])));
    const cpu = Object.entries(h.cpuMs)
      .map(([n, ms]) => `${n} ${ms.toFixed(0)}`)
      .join(', ');
    rows.push([label, `${wait.n}/${h.jobs.length}`, wait.p50.toFixed(0), wait.p95.toFixed(0), run.p50.toFixed(0), cpu, (h.overIdleMs / h.jobs.length).toFixed(1)]);
  }
  return table(['probe half', 'ran/jobs', 'wait p50 ms', 'p95 ms', 'created→running p50 ms', 'coordinator cpu ms', 'over idle ms/job'], rows);
}

function countBy(xs: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
