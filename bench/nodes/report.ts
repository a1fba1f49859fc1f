/** The `bench:nodes` table: one row per system and step, with ratios to the baseline's row of the same node count. */
import type { LatencySummary } from '../dispatch/stats.js';
import type { Db } from './args.js';

export interface StepRow {
  nodes: number;
  /** Registered in this step (the new nodes). */
  registered: number;
  registerFailed: number;
  registerPerS: number;
  /** Nodes the database says are online after the window (null: the baseline has none). */
  online: number | null;
  offeredPerS: number;
  answeredPerS: number;
  sent: number;
  errors: number;
  errorKinds: Record<string, number>;
  skipped: number;
  latencyMs: LatencySummary;
  generatorLagP99Ms: number;
  /** CPU of the coordinator processes (all replicas) over the window, % of one core. */
  serverCpuPct: number;
  pgCpuPct: number | null;
  generatorCpuPct: number;
  serverRssMb: number;
  serverRssGrowthMbPer10k: number;
  loadAvg1: number;
}

export interface Placement {
  jobs: number;
  placed: number;
  submitMs: number;
  /** First submit → every job placed. */
  placedMs: number;
  /** Last submit accepted → every job placed: the scheduling passes' share. */
  afterSubmitMs: number;
  /** Per job: created → first attempt (queue wait + the pass that placed it), from the database. */
  delayMs: LatencySummary;
}

export interface SystemResult {
  label: string;
  kind: 'baseline' | 'gpux';
  db: Db | null;
  replicas: number;
  rows: StepRow[];
  placement: Placement | null;
  ceiling: string | null;
}

const n0 = (x: number) => x.toLocaleString('en-US', { maximumFractionDigits: 0 });
const n1 = (x: number) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: x < 10 ? 1 : 0 }) : '-');
/** CPU ms per answered heartbeat from a CPU share (% of one core) and a rate. */
const msPerHb = (pct: number | null, perS: number) => (pct === null || perS <= 0 ? null : (pct * 10) / perS);
const ms2 = (x: number | null) => (x === null ? '-' : x.toFixed(2));

/**
 * Nodes that `cores` could carry at the interval if the coordinator and PostgreSQL had them to themselves:
 * cores × 1000 ÷ (their CPU ms per heartbeat) heartbeats/s, × the interval in s. A projection from CPU alone.
 */
export function projectedNodes(row: StepRow, cores: number, intervalMs: number): number | null {
  const server = msPerHb(row.serverCpuPct, row.answeredPerS);
  if (server === null) return null;
  const perHb = server + (msPerHb(row.pgCpuPct, row.answeredPerS) ?? 0);
  return Math.round(((cores * 1000) / perHb) * (intervalMs / 1000));
}

const dbName = (d: Db | null) => (d === 'postgres' ? 'PostgreSQL' : d === 'sqlite' ? 'SQLite' : '-');

export function printReport(r: { params: { intervalMs: number }; machine: { cpus: number; model: string; node: string; loadAvgStart: number[]; loadAvgEnd: number[] }; seconds: number; results: SystemResult[] }): void {
  const m = r.machine;
  console.log(`\nbench:nodes, ${r.seconds} s on ${m.cpus} CPUs (${m.model}), Node ${m.node}, load average ${m.loadAvgStart[0]} → ${m.loadAvgEnd[0]}`);
  console.log('generator, coordinators, PostgreSQL and baseline share these CPUs.\n');
  const baseline = r.results.find((s) => s.kind === 'baseline');
  const head = ['system', 'db', 'nodes', 'online', 'hb/s', 'p50 / p99 / max ms', 'errors', 'server CPU %', 'per 10k', 'PG CPU %', 'gen CPU %', 'RSS MB', '+MB/10k', 'CPU ms/hb server / PG / gen', 'vs baseline p99 / CPU'];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`);
  for (const s of r.results) {
    for (const row of s.rows) {
      const b = baseline && s !== baseline ? baseline.rows.find((x) => x.nodes === row.nodes) : undefined;
      const l = row.latencyMs;
      const vs = b ? `${(l.p99 / b.latencyMs.p99).toFixed(1)}x / ${(row.serverCpuPct / Math.max(0.1, b.serverCpuPct)).toFixed(1)}x` : '—';
      console.log(
        `| ${[
          s.label,
          dbName(s.db),
          n0(row.nodes),
          row.online === null ? '-' : n0(row.online),
          `${n0(row.answeredPerS)} of ${n0(row.offeredPerS)}`,
          `${n1(l.p50)} / ${n1(l.p99)} / ${n1(l.max)}`,
          row.errors ? `${n0(row.errors)} (${Object.entries(row.errorKinds).map(([k, v]) => `${k}: ${v}`).join(', ')})` : '0',
          n1(row.serverCpuPct),
          n1(row.serverCpuPct / (row.nodes / 10_000)),
          row.pgCpuPct === null ? '-' : n1(row.pgCpuPct),
          n1(row.generatorCpuPct),
          n0(row.serverRssMb),
          n1(row.serverRssGrowthMbPer10k),
          `${ms2(msPerHb(row.serverCpuPct, row.answeredPerS))} / ${ms2(msPerHb(row.pgCpuPct, row.answeredPerS))} / ${ms2(msPerHb(row.generatorCpuPct, row.answeredPerS))}`,
          vs,
        ].join(' | ')} |`,
      );
    }
  }
  for (const s of r.results) {
    const parts: string[] = [];
    const reg = s.rows.filter((x) => x.registered > 0);
    if (reg.length) parts.push(`registration ${reg.map((x) => `${n0(x.registerPerS)}/s`).join(', ')}`);
    const lag = Math.max(0, ...s.rows.map((x) => x.generatorLagP99Ms));
    parts.push(`generator lag p99 ≤ ${n1(lag)} ms`);
    const skipped = s.rows.reduce((a, x) => a + x.skipped, 0);
    if (skipped) parts.push(`${n0(skipped)} heartbeats skipped (previous one unanswered)`);
    if (s.placement) parts.push(`${s.placement.placed}/${s.placement.jobs} one-GPU jobs placed ${n0(s.placement.afterSubmitMs)} ms after the last submit (${n0(s.placement.placedMs)} ms after the first), created → placed p50 ${n1(s.placement.delayMs.p50)} / p99 ${n1(s.placement.delayMs.p99)} ms`);
    if (s.ceiling) parts.push(s.ceiling);
    // From the last step below the ceiling: past it, the CPU per answered heartbeat measures the backlog.
    const last = s.ceiling && s.rows.length > 1 ? s.rows[s.rows.length - 2] : s.rows[s.rows.length - 1];
    const projected = last ? projectedNodes(last, m.cpus, r.params.intervalMs) : null;
    if (projected !== null) parts.push(`CPU alone (at ${n0(last!.nodes)} nodes) would carry about ${n0(projected)} nodes on ${m.cpus} cores with nothing else on them`);
    console.log(`\n${s.label} (${dbName(s.db)}): ${parts.join('; ')}`);
  }
}
