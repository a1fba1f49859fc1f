/** The stdout table and the JSON file of the dispatch benchmark. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { BenchArgs, Market } from './args.js';
import type { StoreCalls } from './bench-coordinator.js';
import type { MoneyCheck, Spread, StageBreakdown } from './gpux-phase.js';
import type { DbWaits } from './pg-waits.js';
import type { PhaseResult } from './phase.js';

export interface Row {
  system: 'gpux' | 'graphile-worker';
  /** gpux with its market on or off; null for graphile-worker. */
  market: Market | null;
  db: 'sqlite' | 'postgres';
  /** gpux's coordinator processes on the one database (above 1: replicas on PostgreSQL); null for graphile-worker. */
  replicas: number | null;
  mode: 'throughput' | 'rate';
  result: PhaseResult | null;
  /** Why the row has no result, or anything odd about it. */
  note: string | null;
}

const ms = (x: number) => (Number.isNaN(x) ? '-' : x < 10 ? x.toFixed(1) : x.toFixed(0));
const ratio = (x: number) => (!Number.isFinite(x) || x === 0 ? '-' : x >= 10 ? x.toFixed(0) : x.toFixed(2));

function baselineOf(rows: readonly Row[], mode: Row['mode']): PhaseResult | null {
  return rows.find((r) => r.system === 'graphile-worker' && r.mode === mode)?.result ?? null;
}

/**
 * Throughput rows: jobs/s ÷ baseline jobs/s (above 1 is better than the baseline). Fixed-rate rows: p99
 * submit→running ÷ baseline p99 add→start (below 1 is better).
 */
export function ratioToBaseline(row: Row, rows: readonly Row[]): number | null {
  const base = baselineOf(rows, row.mode);
  if (!row.result || !base || row.system !== 'gpux') return null;
  return row.mode === 'throughput' ? row.result.jobsPerSec / base.jobsPerSec : row.result.toRunning.p99 / base.toRunning.p99;
}

/** The same system without its market, in the same run: the row a market-on row is compared with. */
function marketOffOf(row: Row, rows: readonly Row[]): PhaseResult | null {
  if (row.system !== 'gpux' || row.market !== 'on') return null;
  return rows.find((r) => r.system === 'gpux' && r.market === 'off' && r.db === row.db && r.replicas === row.replicas && r.mode === row.mode)?.result ?? null;
}

/**
 * What the market costs, as a ratio to the same system without it in the same run (market-on rows only):
 * throughput rows jobs/s on ÷ off (below 1: the market is slower), fixed-rate rows p99 submit→running on ÷ off.
 */
export function ratioToMarketOff(row: Row, rows: readonly Row[]): number | null {
  const off = marketOffOf(row, rows);
  if (!off || !row.result) return null;
  return row.mode === 'throughput' ? row.result.jobsPerSec / off.jobsPerSec : row.result.toRunning.p99 / off.toRunning.p99;
}

/** CPU ms per job of every process measured (server + client + db), market on ÷ off: steadier than wall clock on a busy machine. */
export function cpuRatioToMarketOff(row: Row, rows: readonly Row[]): number | null {
  const off = marketOffOf(row, rows);
  if (!off || !row.result) return null;
  const sum = (c: PhaseResult['cpuMsPerJob']) => (c.server ?? 0) + c.client + (c.db ?? 0);
  return sum(row.result.cpuMsPerJob) / sum(off.cpuMsPerJob);
}

/** `gpux, market on`; with replicas in the run, its PostgreSQL rows also say how many (`gpux, market on, 3 replicas`). */
function systemName(row: Row, rows: readonly Row[]): string {
  if (row.market === null) return row.system;
  const withReplicas = row.db === 'postgres' && row.replicas !== null && rows.some((r) => (r.replicas ?? 1) > 1);
  return `${row.system}, market ${row.market}${withReplicas ? `, ${row.replicas} replica${row.replicas === 1 ? '' : 's'}` : ''}`;
}

export function formatTable(rows: readonly Row[]): string {
  const head = ['system', 'db', 'mode', 'jobs', 'done', 'jobs/s', 'run p50', 'run p99', 'done p50', 'done p99', 'cpu ms/job', 'vs baseline', 'vs market off', 'note'];
  const vsText = (row: Row, x: number | null) => (x === null ? '' : row.mode === 'throughput' ? `${ratio(x)}x jobs/s` : `${ratio(x)}x p99 run`);
  const body = rows.map((row) => {
    const r = row.result;
    const vs = vsText(row, ratioToBaseline(row, rows));
    const cpuOff = cpuRatioToMarketOff(row, rows);
    const vsOff = vsText(row, ratioToMarketOff(row, rows)) + (cpuOff === null ? '' : `, ${ratio(cpuOff)}x cpu`);
    if (!r) return [systemName(row, rows), row.db, row.mode, '-', '-', '-', '-', '-', '-', '-', '-', '', '', row.note ?? ''];
    const c = r.cpuMsPerJob;
    const cpu = [c.server, c.client, c.db].map((x) => (x === null ? '-' : ms(x))).join('/');
    return [
      systemName(row, rows),
      row.db,
      row.mode,
      String(r.jobs),
      String(r.completed) + (r.timedOut ? '!' : ''),
      r.jobsPerSec.toFixed(0),
      ms(r.toRunning.p50),
      ms(r.toRunning.p99),
      ms(r.toDone.p50),
      ms(r.toDone.p99),
      cpu,
      vs,
      vsOff,
      row.note ?? '',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)];
  out.push('latencies in ms from the client\'s submit: "run" = job startedAt, "done" = job finishedAt; "!" = phase timed out');
  out.push('cpu ms/job: server/client/db = coordinator process (summed over its replicas) / this process (gpux: agents + submitters; graphile-worker: worker + adders) / PostgreSQL backends');
  out.push('vs market off: the same phase and database without the market, in this run; "cpu" = (server + client + db) cpu ms/job on ÷ off');
  return out.join('\n');
}

export interface PhaseDiagnostics {
  stages: StageBreakdown | null;
  spread: Spread;
  /** The books after the phase (market on only). */
  money: MoneyCheck | null;
  /** By Store method, over the system's life (startup included), with --diagnose. */
  storeCalls: Record<string, { perJob: number; meanMs: number }> | null;
  /** The coordinator's event-loop delay, with --diagnose. */
  eventLoopDelayMs: { p50: number; p99: number; max: number } | null;
  /** HTTP requests per job by method and route, over the system's life, with --diagnose. */
  httpRequests: Record<string, number> | null;
  /** PostgreSQL with --diagnose: mean connections per state while the jobs went through (pg-waits.ts). */
  dbWaits: DbWaits | null;
  /** SQL statements per job and their ms per job (sqlSummary), with --diagnose. */
  sql: SqlSummary | null;
}

/** Statements per job, ms per job (SQLite: executing; PostgreSQL: round trips), and the statements that take most. */
export interface SqlSummary {
  perJob: number;
  msPerJob: number;
  top: { sql: string; perJob: number; meanUs: number; msPerJob: number }[];
}

/** Two decimals, for per-job figures. */
const round2 = (x: number) => Math.round(x * 100) / 100;

export function sqlSummary(calls: Record<string, StoreCalls>, jobs: number, topN = 12): SqlSummary {
  const n = Math.max(1, jobs);
  const all = Object.entries(calls);
  const top = all
    .sort((a, b) => b[1].totalMs - a[1].totalMs)
    .slice(0, topN)
    .map(([sql, c]) => ({ sql, perJob: round2(c.calls / n), meanUs: Math.round((1000 * c.totalMs) / Math.max(1, c.calls)), msPerJob: Math.round((1000 * c.totalMs) / n) / 1000 }));
  return { perJob: round2(all.reduce((s, [, c]) => s + c.calls, 0) / n), msPerJob: Math.round((1000 * all.reduce((s, [, c]) => s + c.totalMs, 0)) / n) / 1000, top };
}

export function perJob(counts: Record<string, number>, jobs: number): Record<string, number> {
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  return Object.fromEntries(entries.map(([k, n]) => [k, round2(n / Math.max(1, jobs))]));
}

export function storeCallSummary(calls: Record<string, StoreCalls>, jobs: number): Record<string, { perJob: number; meanMs: number }> {
  return Object.fromEntries(
    Object.entries(calls)
      .sort((a, b) => b[1].totalMs - a[1].totalMs)
      .map(([k, c]) => [k, { perJob: round2(c.calls / Math.max(1, jobs)), meanMs: round2(c.totalMs / Math.max(1, c.calls)) }]),
  );
}

export function formatStages(diag: Record<string, PhaseDiagnostics>): string {
  const out = ['where the time goes (gpux, a sample of up to 100 jobs per phase, p50/p99 ms):'];
  const w = Math.max(20, ...Object.keys(diag).map((k) => k.length));
  for (const [phase, { stages: s, spread, money, storeCalls: calls, eventLoopDelayMs: loop, httpRequests: http, dbWaits, sql }] of Object.entries(diag)) {
    const parts = s ? (['accept', 'place', 'claim', 'commit'] as const).map((k) => `${k} ${ms(s[k].p50)}/${ms(s[k].p99)}`) : ['no sample'];
    out.push(`  ${phase.padEnd(w)} ${parts.join('  ')}  (agents used ${spread.agentsUsed}, busiest ran ${(100 * spread.busiestShare).toFixed(0)}%)`);
    if (money) out.push(`  ${''.padEnd(w)} books after: escrow left ${money.escrow}, treasury fees ${money.treasury} (USDC minor units), ledger ${money.balanced ? 'balanced' : 'NOT balanced'}`);
    if (calls) {
      const top = Object.entries(calls).slice(0, 8);
      out.push(`  ${''.padEnd(w)} store calls per job x mean ms: ${top.map(([k, v]) => `${k} ${v.perJob}x${v.meanMs}`).join(', ')}`);
    }
    if (http) {
      const total = Object.values(http).reduce((a, b) => a + b, 0);
      const top = Object.entries(http).slice(0, 8);
      out.push(`  ${''.padEnd(w)} HTTP requests per job ${total.toFixed(2)}: ${top.map(([k, v]) => `${k} ${v}`).join(', ')}`);
    }
    if (sql) {
      const what = phase.startsWith('sqlite') ? 'executing' : 'round trips';
      const top = sql.top.slice(0, 4).map((t) => `${t.sql.slice(0, 60)} ${t.perJob}x${t.meanUs} µs`);
      out.push(`  ${''.padEnd(w)} SQL statements per job ${sql.perJob}, ${sql.msPerJob} ms per job ${what}; most: ${top.join('; ')}`);
    }
    if (loop) out.push(`  ${''.padEnd(w)} coordinator event-loop delay p50/p99/max ms: ${loop.p50}/${loop.p99}/${loop.max}`);
    if (dbWaits) {
      const top = dbWaits.mean.slice(0, 5).map((x) => `${x.what} ${x.connections}`);
      out.push(`  ${''.padEnd(w)} PostgreSQL connections, mean of ${dbWaits.samples} samples: ${top.join(', ')}`);
    }
  }
  return out.join('\n');
}

export function writeJson(path: string, args: BenchArgs, rows: readonly Row[], extra: Record<string, unknown>): void {
  const doc = {
    benchmark: 'dispatch',
    date: new Date().toISOString(),
    machine: {
      cpus: cpus().length,
      cpuModel: cpus()[0]?.model ?? null,
      memoryGb: Math.round(totalmem() / 2 ** 30),
      node: process.version,
      platform: process.platform,
      // How busy the machine was besides the bench: 1-minute load average at the end of the run.
      loadAvg1mAtEnd: Math.round(loadavg()[0]! * 100) / 100,
    },
    parameters: args,
    rows: rows.map((r) => ({ ...r, ratioToBaseline: ratioToBaseline(r, rows), ratioToMarketOff: ratioToMarketOff(r, rows), cpuRatioToMarketOff: cpuRatioToMarketOff(r, rows) })),
    ...extra,
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`);
}
