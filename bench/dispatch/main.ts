/**
 * Dispatch benchmark, end to end: no-op jobs through coordinator + agents over loopback HTTP on SQLite and
 * PostgreSQL, beside graphile-worker on the same PostgreSQL cluster in the same run. See bench/README.md.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { type BenchArgs, type Db, parseBenchArgs } from './args.js';
import { type BenchPg, openBenchPg } from './pg.js';
import { type GpuxPhaseResult, runGpuxPhase } from './gpux-phase.js';
import { startGpuxSystem } from './gpux-system.js';
import { startGraphile } from './graphile-baseline.js';
import { describePhase, type Phase, type PhaseResult } from './phase.js';
import { formatStages, formatTable, type PhaseDiagnostics, type Row, writeJson } from './report.js';

const log = (msg: string) => process.stderr.write(`[bench:dispatch] ${msg}\n`);

function phasesOf(args: BenchArgs): Phase[] {
  const phases: Phase[] = [{ kind: 'throughput', jobs: args.jobs, concurrency: args.concurrency }];
  if (args.rate > 0 && args.rateSeconds > 0) phases.push({ kind: 'rate', rate: args.rate, seconds: args.rateSeconds });
  return phases;
}

/** A fixed-rate phase the system could not keep up with: its latencies measure the backlog. */
function overloadNote(phase: Phase, result: PhaseResult): string | null {
  if (phase.kind !== 'rate' || result.doneRate >= 0.9 * phase.rate) return null;
  return `overloaded: finished ${result.doneRate.toFixed(0)}/s < offered ${phase.rate}/s`;
}

function deadlineOf(args: BenchArgs, phase: Phase): number {
  return Date.now() + (args.phaseTimeoutS + (phase.kind === 'rate' ? phase.seconds : 0)) * 1000;
}

async function gpuxRows(args: BenchArgs, db: Db, pg: BenchPg | null, stages: Record<string, PhaseDiagnostics>): Promise<Row[]> {
  const rows: Row[] = [];
  for (const phase of phasesOf(args)) {
    const row: Row = { system: 'gpux', db, mode: phase.kind, result: null, note: null };
    rows.push(row);
    if (db === 'postgres' && !pg) {
      row.note = 'no PostgreSQL';
      continue;
    }
    log(`gpux on ${db}: ${describePhase(phase)}, ${args.agents} agents`);
    try {
      const dbUrl = db === 'sqlite' ? 'sqlite:{dir}/bench.db' : await pg!.createDatabase('gpux_bench');
      const cpuProfDir = args.cpuProf ? join('bench', 'results', 'prof') : null;
      const sys = await startGpuxSystem({ db: dbUrl, agents: args.agents, coordinator: args.coordinator, cpuProfDir, sqliteSynchronous: args.sqliteSync, countStoreCalls: args.storeCalls });
      let result: GpuxPhaseResult;
      let calls: Record<string, number> | null = null;
      try {
        result = await runGpuxPhase(sys, phase, deadlineOf(args, phase), `${db}-${phase.kind}-${process.pid}`);
      } finally {
        calls = await sys.stop();
      }
      const { stages: st, spread, ...rest } = result;
      row.result = rest;
      const perJob = calls && Object.fromEntries(Object.entries(calls).map(([k, v]) => [k, Math.round((100 * v) / Math.max(1, rest.jobs)) / 100]));
      stages[`${db}/${phase.kind}`] = { stages: st, spread, storeCallsPerJob: perJob };
      row.note = result.load.failed ? `${result.load.failed} submits failed: ${result.load.firstError}` : overloadNote(phase, rest);
    } catch (err) {
      row.note = `failed: ${err instanceof Error ? err.message : String(err)}`;
      log(row.note);
    }
  }
  return rows;
}

async function baselineRows(args: BenchArgs, pg: BenchPg | null): Promise<Row[]> {
  const rows: Row[] = phasesOf(args).map((p) => ({ system: 'graphile-worker', db: 'postgres', mode: p.kind, result: null, note: pg ? null : 'no PostgreSQL' }));
  if (!pg) return rows;
  let gw: Awaited<ReturnType<typeof startGraphile>> | undefined;
  try {
    gw = await startGraphile(await pg.createDatabase('graphile_bench'), 10, args.concurrency);
    for (const [i, phase] of phasesOf(args).entries()) {
      log(`graphile-worker: ${describePhase(phase)}, concurrency 10`);
      const result = await gw.runPhase(phase, deadlineOf(args, phase));
      rows[i]!.result = result;
      rows[i]!.note = result.load.failed ? `${result.load.failed} adds failed: ${result.load.firstError}` : overloadNote(phase, result);
    }
  } catch (err) {
    const note = `failed: ${err instanceof Error ? err.message : String(err)}`;
    for (const r of rows) if (!r.result) r.note = note;
    log(note);
  } finally {
    await gw?.close().catch(() => {});
  }
  return rows;
}

async function main() {
  const args = parseBenchArgs(process.argv.slice(2));
  // Bounded whatever happens: every phase has a deadline, and this is the last resort.
  const phaseCount = phasesOf(args).length * (args.dbs.length + (args.baseline ? 1 : 0));
  const watchdogMs = (phaseCount * (args.phaseTimeoutS + args.rateSeconds + 30) + 120) * 1000;
  setTimeout(() => {
    log(`watchdog: still running after ${watchdogMs / 1000} s, giving up`);
    process.exit(3);
  }, watchdogMs).unref();

  let pg: BenchPg | null = null;
  let pgNote: string | null = null;
  if (args.dbs.includes('postgres') || args.baseline) {
    try {
      pg = await openBenchPg(process.env);
      log(`PostgreSQL from ${pg.source}`);
    } catch (err) {
      pgNote = `no PostgreSQL (${err instanceof Error ? err.message : String(err)}); set GPUX_BENCH_PG_URL`;
      log(pgNote);
    }
  }
  const rows: Row[] = [];
  const stages: Record<string, PhaseDiagnostics> = {};
  const started = Date.now();
  try {
    for (const db of args.dbs) rows.push(...(await gpuxRows(args, db, pg, stages)));
    if (args.baseline) rows.push(...(await baselineRows(args, pg)));
  } finally {
    await pg?.stop().catch((err) => log(`stopping PostgreSQL: ${err}`));
  }
  console.log(`\ndispatch: ${args.agents} agents, coordinator ${args.coordinator === 'child' ? 'in a child process' : 'in-process'}, ${availableParallelism()} CPUs, node ${process.version}`);
  console.log(formatTable(rows));
  console.log(`\n${formatStages(stages)}`);
  writeJson(args.out, args, rows, { stages, postgres: pg ? pg.source : pgNote, elapsedS: Math.round((Date.now() - started) / 1000) });
  console.log(`\nwrote ${args.out}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
