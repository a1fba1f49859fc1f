/** The stdout table and the JSON file of the dispatch benchmark. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname } from 'node:path';
import type { BenchArgs } from './args.js';
import type { StoreCalls } from './bench-coordinator.js';
import type { Spread, StageBreakdown } from './gpux-phase.js';
import type { PhaseResult } from './phase.js';

export interface Row {
  system: 'gpux' | 'graphile-worker';
  db: 'sqlite' | 'postgres';
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

export function formatTable(rows: readonly Row[]): string {
  const head = ['system', 'db', 'mode', 'jobs', 'done', 'jobs/s', 'run p50', 'run p99', 'done p50', 'done p99', 'cpu ms/job', 'vs baseline', 'note'];
  const body = rows.map((row) => {
    const r = row.result;
    const rt = ratioToBaseline(row, rows);
    const vs = rt === null ? '' : row.mode === 'throughput' ? `${ratio(rt)}x jobs/s` : `${ratio(rt)}x p99 run`;
    if (!r) return [row.system, row.db, row.mode, '-', '-', '-', '-', '-', '-', '-', '-', '', row.note ?? ''];
    const c = r.cpuMsPerJob;
    const cpu = [c.server, c.client, c.db].map((x) => (x === null ? '-' : ms(x))).join('/');
    return [
      row.system,
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
      row.note ?? '',
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? '').length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  const out = [line(head), line(widths.map((w) => '-'.repeat(w))), ...body.map(line)];
  out.push('latencies in ms from the client\'s submit: "run" = job startedAt, "done" = job finishedAt; "!" = phase timed out');
  out.push('cpu ms/job: server/client/db = coordinator process / this process (gpux: agents + submitters; graphile-worker: worker + adders) / PostgreSQL backends');
  return out.join('\n');
}

export interface PhaseDiagnostics {
  stages: StageBreakdown | null;
  spread: Spread;
  /** By Store method, over the system's life (startup included), with --diagnose. */
  storeCalls: Record<string, { perJob: number; meanMs: number }> | null;
  /** The coordinator's event-loop delay, with --diagnose. */
  eventLoopDelayMs: { p50: number; p99: number; max: number } | null;
}

export function storeCallSummary(calls: Record<string, StoreCalls>, jobs: number): Record<string, { perJob: number; meanMs: number }> {
  const round = (x: number) => Math.round(x * 100) / 100;
  return Object.fromEntries(
    Object.entries(calls)
      .sort((a, b) => b[1].totalMs - a[1].totalMs)
      .map(([k, c]) => [k, { perJob: round(c.calls / Math.max(1, jobs)), meanMs: round(c.totalMs / Math.max(1, c.calls)) }]),
  );
}

export function formatStages(diag: Record<string, PhaseDiagnostics>): string {
  const out = ['where the time goes (gpux, a sample of up to 100 jobs per phase, p50/p99 ms):'];
  for (const [phase, { stages: s, spread, storeCalls: calls, eventLoopDelayMs: loop }] of Object.entries(diag)) {
    const parts = s ? (['accept', 'place', 'claim', 'commit'] as const).map((k) => `${k} ${ms(s[k].p50)}/${ms(s[k].p99)}`) : ['no sample'];
    out.push(`  ${phase.padEnd(20)} ${parts.join('  ')}  (agents used ${spread.agentsUsed}, busiest ran ${(100 * spread.busiestShare).toFixed(0)}%)`);
    if (calls) {
      const top = Object.entries(calls).slice(0, 8);
      out.push(`  ${''.padEnd(20)} store calls per job x mean ms: ${top.map(([k, v]) => `${k} ${v.perJob}x${v.meanMs}`).join(', ')}`);
    }
    if (loop) out.push(`  ${''.padEnd(20)} coordinator event-loop delay p50/p99/max ms: ${loop.p50}/${loop.p99}/${loop.max}`);
  }
  return out.join('\n');
}

export function writeJson(path: string, args: BenchArgs, rows: readonly Row[], extra: Record<string, unknown>): void {
  const doc = {
    benchmark: 'dispatch',
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model ?? null, memoryGb: Math.round(totalmem() / 2 ** 30), node: process.version, platform: process.platform },
    parameters: args,
    rows: rows.map((r) => ({ ...r, ratioToBaseline: ratioToBaseline(r, rows) })),
    ...extra,
  };
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(doc, null, 2)}\n`);
}
