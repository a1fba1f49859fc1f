/**
 * Dispatch benchmark, end to end: no-op jobs through coordinator + agents over loopback HTTP on SQLite and
 * PostgreSQL, with the market on (escrow, paid placement, settlement) and off, beside graphile-worker on the
 * same PostgreSQL cluster in the same run. See bench/README.md.
 */
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { type BenchArgs, type Db, type Market, parseBenchArgs } from './args.js';
import type { CoordinatorDiagnostics } from './bench-coordinator.js';
import { type GpuxPhaseResult, runGpuxPhase } from './gpux-phase.js';
import { startGpuxSystem } from './gpux-system.js';
import { startGraphile } from './graphile-baseline.js';
import { type BenchPg, openBenchPg } from './pg.js';
import { describePhase, type Phase, type PhaseResult } from './phase.js';
import { formatStages, formatTable, type PhaseDiagnostics, perJob, type Row, sqlSummary, storeCallSummary, writeJson } from './report.js';

const PROF_DIR = join('bench', 'results', 'prof');
const log = (msg: string) => process.stderr.write(`[bench:dispatch] ${msg}\n`);

function phasesOf(args: BenchArgs): Phase[] {
  const phases: Phase[] = [{ kind: 'throughput', jobs: args.jobs, concurrency: args.concurrency }];
  if (args.rate > 0 && args.rateSeconds > 0) phases.push({ kind: 'rate', rate: args.rate, seconds: args.rateSeconds });
  return phases;
}

/** What the table should say about a phase beside its figures: failed submits, a timeout, an overload. */
function phaseNote(phase: Phase, r: PhaseResult): string | null {
  if (r.load.failed) return `${r.load.failed} submits failed: ${r.load.firstError}`;
  if (r.timedOut) return `timed out: ${r.completed} of ${r.jobs} done`;
  // A fixed-rate phase the system could not keep up with: its latencies measure the backlog.
  if (phase.kind === 'rate' && r.doneRate < 0.9 * phase.rate) return `overloaded: finished ${r.doneRate.toFixed(0)}/s < offered ${phase.rate}/s`;
  return null;
}

function deadlineOf(args: BenchArgs, phase: Phase): number {
  return Date.now() + (args.phaseTimeoutS + (phase.kind === 'rate' ? phase.seconds : 0)) * 1000;
}

/** One gpux phase on a system of its own, started and stopped here. */
async function gpuxPhase(args: BenchArgs, db: Db, market: Market, replicas: number, pg: BenchPg | null, phase: Phase): Promise<{ result: PhaseResult; diag: PhaseDiagnostics }> {
  // '{dir}' is the system's own temp dir (see startGpuxSystem).
  const dbUrl = db === 'sqlite' ? 'sqlite:{dir}/bench.db' : await pg!.createDatabase('gpux_bench');
  const sys = await startGpuxSystem({
    db: dbUrl,
    agents: args.agents,
    replicas,
    market: market === 'on',
    coordinator: args.coordinator,
    cpuProfDir: args.cpuProf ? PROF_DIR : null,
    sqliteSynchronous: args.sqliteSync,
    pgPool: args.pgPool,
    diagnostics: args.diagnose,
    providers: args.providers,
  });
  let result: GpuxPhaseResult;
  let coord: CoordinatorDiagnostics | null = null;
  try {
    const dbCpu = async () => (db === 'postgres' ? pg!.backendCpuMs(dbUrl) : null);
    const watch = args.diagnose && db === 'postgres' ? () => pg!.watchWaits(dbUrl) : null;
    result = await runGpuxPhase(sys, phase, deadlineOf(args, phase), `${db}-${market}-${phase.kind}-${process.pid}`, dbCpu, watch);
  } finally {
    coord = await sys.stop();
  }
  const { stages, spread, money, dbWaits, ...rest } = result;
  const diag: PhaseDiagnostics = {
    stages,
    spread,
    money,
    dbWaits,
    storeCalls: coord && storeCallSummary(coord.storeCalls, rest.jobs),
    eventLoopDelayMs: coord?.eventLoopDelayMs ?? null,
    httpRequests: coord?.httpRequests ? perJob(coord.httpRequests, rest.jobs) : null,
    sql: coord?.sql ? sqlSummary(coord.sql, rest.jobs) : null,
  };
  return { result: rest, diag };
}

/** Replica counts measured on a database: `--replicas` on PostgreSQL; SQLite is one process. */
const replicaCountsOf = (args: BenchArgs, db: Db): number[] => (db === 'postgres' ? args.replicas : [1]);

/**
 * Rows of one database: per phase and replica count, the market on then off, each on a system of its own, back
 * to back.
 */
async function gpuxRows(args: BenchArgs, db: Db, pg: BenchPg | null, diagnostics: Record<string, PhaseDiagnostics>): Promise<Row[]> {
  const rows: Row[] = [];
  for (const phase of phasesOf(args)) {
    for (const replicas of replicaCountsOf(args, db)) {
      for (const market of args.markets) {
        const row: Row = { system: 'gpux', market, db, replicas, mode: phase.kind, result: null, note: null };
        rows.push(row);
        if (db === 'postgres' && !pg) {
          row.note = 'no PostgreSQL';
          continue;
        }
        const onReplicas = replicas > 1 ? `, ${replicas} replicas` : '';
        log(`gpux on ${db}${onReplicas}, market ${market}: ${describePhase(phase)}, ${args.agents} agents`);
        try {
          const { result, diag } = await gpuxPhase(args, db, market, replicas, pg, phase);
          row.result = result;
          row.note = phaseNote(phase, result) ?? moneyNote(diag);
          diagnostics[`${db}${replicas > 1 ? ` x${replicas}` : ''}/market ${market}/${phase.kind}`] = diag;
        } catch (err) {
          row.note = `failed: ${err instanceof Error ? err.message : String(err)}`;
          log(row.note);
        }
      }
    }
  }
  return rows;
}

/** A market phase whose books did not close: escrow left after every job finished, or an unbalanced ledger. */
function moneyNote(diag: PhaseDiagnostics): string | null {
  const m = diag.money;
  if (!m) return null;
  if (!m.balanced) return 'ledger NOT balanced';
  return m.escrow > 0 ? `${m.escrow} left in escrow` : null;
}

async function baselineRows(args: BenchArgs, pg: BenchPg | null): Promise<Row[]> {
  const rows: Row[] = phasesOf(args).map((p) => ({ system: 'graphile-worker', market: null, db: 'postgres', replicas: null, mode: p.kind, result: null, note: pg ? null : 'no PostgreSQL' }));
  if (!pg) return rows;
  let gw: Awaited<ReturnType<typeof startGraphile>> | undefined;
  try {
    const url = await pg.createDatabase('graphile_bench');
    gw = await startGraphile(url, () => pg.backendCpuMs(url), 10, args.concurrency);
    for (const [i, phase] of phasesOf(args).entries()) {
      log(`graphile-worker: ${describePhase(phase)}, concurrency 10`);
      const result = await gw.runPhase(phase, deadlineOf(args, phase));
      rows[i]!.result = result;
      rows[i]!.note = phaseNote(phase, result);
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
  const systems = args.dbs.reduce((n, db) => n + replicaCountsOf(args, db).length, 0);
  const phaseCount = phasesOf(args).length * (systems * args.markets.length + (args.baseline ? 1 : 0));
  const watchdogMs = (phaseCount * (args.phaseTimeoutS + args.rateSeconds + 30) + 120) * 1000;
  setTimeout(() => {
    log(`watchdog: still running after ${watchdogMs / 1000} s, giving up`);
    process.exit(3);
  }, watchdogMs).unref();

  let pg: BenchPg | null = null;
  let pgNote: string | null = null;
  if (args.dbs.includes('postgres') || args.baseline) {
    try {
      pg = await openBenchPg(process.env, args.pgVia);
      log(`PostgreSQL from ${pg.source}`);
    } catch (err) {
      pgNote = `no PostgreSQL (${err instanceof Error ? err.message : String(err)}); set GPUX_BENCH_PG_URL`;
      log(pgNote);
    }
  }
  const rows: Row[] = [];
  const diagnostics: Record<string, PhaseDiagnostics> = {};
  const started = Date.now();
  // Other work on the machine moves wall-clock figures; the report says how busy it was.
  const loadAtStart = Math.round(loadavg()[0]! * 100) / 100;
  try {
    for (const db of args.dbs) rows.push(...(await gpuxRows(args, db, pg, diagnostics)));
    if (args.baseline) rows.push(...(await baselineRows(args, pg)));
  } finally {
    await pg?.stop().catch((err) => log(`stopping PostgreSQL: ${err}`));
  }
  const load = `load average ${loadAtStart} at start, ${Math.round(loadavg()[0]! * 100) / 100} at end`;
  console.log(`\ndispatch: ${args.agents} agents, coordinator ${args.coordinator === 'child' ? 'in a child process' : 'in-process'}, ${availableParallelism()} CPUs, node ${process.version}, ${load}`);
  console.log(formatTable(rows));
  console.log(`\n${formatStages(diagnostics)}`);
  writeJson(args.out, args, rows, { diagnostics, postgres: pg ? pg.source : pgNote, loadAvg1mAtStart: loadAtStart, elapsedS: Math.round((Date.now() - started) / 1000) });
  console.log(`\nwrote ${args.out}`);
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
