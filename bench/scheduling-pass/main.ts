/**
 * npm run bench:pass — the coordinator's scheduling pass (SchedulingLoop.pass: fair claim, placement, the
 * assign transaction) over 10,000 queued jobs whose specs are the largest the schema allows, on SQLite and
 * PostgreSQL, beside the old claim (every claimed row read whole and its spec JSON-parsed) in the same run.
 * Reports pass times against the pass budget (GPUX_SCHEDULE_PASS_MS, 250 ms); writes
 * bench/results/scheduling-pass.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AttemptRecord, Store } from '@gpux/core';
import { systemClock } from '@gpux/core';
import { createKyselyStore, createLogger, type Database, loadCoordinatorConfig } from '@gpux/coordinator';
import { sampleAdvertisement } from '@gpux/testing';
import BetterSqlite3 from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from 'kysely';
import pg from 'pg';
import { rebuildIndex } from '../../packages/coordinator/src/loops/capacity.js';
import { cryptoRandom } from '../../packages/coordinator/src/random.js';
import { createRuntime, type Runtime } from '../../packages/coordinator/src/runtime.js';
import { openBenchPg } from '../dispatch/pg.js';
import { machine, mean, parseFlags, percentile, table } from '../replay/report-util.js';
import { oldClaimQueuedFair } from './old-claim.js';
import { seedQueue, textPool } from './seed.js';

const FLAGS = {
  jobs: 'queued jobs (default 10000)',
  buyers: 'buyers the jobs are dealt to (default 10)',
  passes: 'measured passes per path and scenario (default 10)',
  'placeable-every': 'one job in N fits a node (1 GPU), the rest ask 16 GPUs on one node (default 10)',
  'inputs-kib': 'inline inputs per job, KiB (default 0; the schema allows 1024)',
  nodes: 'nodes of 8 H100 in the placeable scenario (default 5)',
  db: 'sqlite, postgres or both (default both)',
  quick: 'smoke run: 2,000 jobs, 3 passes',
  out: 'result file (default bench/results/scheduling-pass.json)',
  help: 'this list',
};

/** better-sqlite3 behind Kysely with prepared statements reused, as the coordinator's openSqliteStore does. */
function cached(db: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => db.close(),
    prepare(sql: string) {
      let s = cache.get(sql);
      if (!s) {
        s = db.prepare(sql);
        cache.set(sql, s);
      }
      return s;
    },
  };
}

interface Target {
  name: string;
  db: Kysely<Database>;
  store: Store;
  /** CPU ms used so far by the database server for this database (PostgreSQL backends); null for SQLite (in process). */
  dbCpuMs(): Promise<number | null>;
  close(): Promise<void>;
}

async function sqliteTarget(dir: string): Promise<Target> {
  const raw = new BetterSqlite3(join(dir, 'bench.db'));
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = NORMAL'); // seeding speed only: the pass reads
  raw.pragma('busy_timeout = 5000');
  raw.pragma('foreign_keys = ON');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: cached(raw) }) });
  const store = createKyselyStore(db, { dialect: 'sqlite', relaxedCommit: { before: null, inside: null, after: null } });
  await store.migrate();
  return { name: 'SQLite', db, store, dbCpuMs: async () => null, close: () => db.destroy() };
}

async function postgresTarget(url: string, cpu: (url: string) => Promise<number | null>): Promise<Target> {
  const INT8 = 20;
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') => (oid === INT8 && format !== 'binary' ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)),
  } as pg.CustomTypesConfig;
  const pool = new pg.Pool({ connectionString: url, max: 10, types });
  pool.on('connect', (c) => void c.query('set synchronous_commit = off')); // seeding speed only
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const store = createKyselyStore(db, { dialect: 'postgres' });
  await store.migrate();
  return { name: 'PostgreSQL', db, store, dbCpuMs: () => cpu(url), close: () => db.destroy() };
}

interface PathRun {
  rt: Runtime;
  claimMs: number[];
  passMs: number[];
  /** CPU ms of this process during each pass, and of the PostgreSQL backends (empty on SQLite). */
  cpuMs: number[];
  dbCpuMs: number[];
  claimed: number[];
  placed: number[];
  /** Attempts written by the last pass: their room is given back to the index before the next one. */
  lastAssigned: AttemptRecord[];
}

/** A runtime over `store`, its claim timed; `old` swaps in the claim from before the change. */
async function pathRun(t: Target, old: boolean, dataDir: string): Promise<PathRun> {
  const run: PathRun = { rt: undefined as unknown as Runtime, claimMs: [], passMs: [], cpuMs: [], dbCpuMs: [], claimed: [], placed: [], lastAssigned: [] };
  const store: Store = {
    ...t.store,
    async claimQueuedFair(now, limit, from) {
      const t0 = performance.now();
      const jobs = old ? await oldClaimQueuedFair(t.db, now, limit, from) : await t.store.claimQueuedFair(now, limit, from);
      run.claimMs.push(performance.now() - t0);
      run.claimed.push(jobs.length);
      return jobs;
    },
    async assign(placements, now) {
      const a = await t.store.assign(placements, now);
      run.lastAssigned = a;
      return a;
    },
  };
  const config = loadCoordinatorConfig({}, { db: 'sqlite::memory:', dataDir, market: false, logLevel: 'warn' });
  run.rt = createRuntime({ store, config, clock: systemClock, random: cryptoRandom, logger: createLogger('warn') });
  await rebuildIndex(run.rt);
  return run;
}

async function measure(run: PathRun, t: Target): Promise<void> {
  for (const a of run.lastAssigned) run.rt.index.release(a.id);
  run.lastAssigned = [];
  const db0 = await t.dbCpuMs();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await run.rt.scheduling.pass();
  run.passMs.push(performance.now() - t0);
  const c = process.cpuUsage(c0);
  run.cpuMs.push((c.user + c.system) / 1000);
  const db1 = await t.dbCpuMs();
  if (db0 !== null && db1 !== null) run.dbCpuMs.push(db1 - db0);
  run.placed.push(run.lastAssigned.length);
}

const round = (v: number) => Math.round(v * 10) / 10;

function summary(run: PathRun, budgetMs: number) {
  return {
    passes: run.passMs.length,
    passMs: { first: round(run.passMs[0] ?? Number.NaN), p50: round(percentile(run.passMs, 50)), mean: round(mean(run.passMs)), max: round(percentile(run.passMs, 100)) },
    claimMs: { p50: round(percentile(run.claimMs, 50)), max: round(percentile(run.claimMs, 100)) },
    /** CPU the pass used (this process; plus the PostgreSQL backends): unlike wall time, it holds up on a busy machine. */
    cpuMs: { p50: round(percentile(run.cpuMs, 50)), max: round(percentile(run.cpuMs, 100)) },
    dbCpuMs: run.dbCpuMs.length ? { p50: round(percentile(run.dbCpuMs, 50)), max: round(percentile(run.dbCpuMs, 100)) } : null,
    /** (process + database CPU) p50 ÷ the pass budget. */
    cpuBudgetRatio: Math.round(((percentile(run.cpuMs, 50) + (run.dbCpuMs.length ? percentile(run.dbCpuMs, 50) : 0)) / budgetMs) * 1000) / 1000,
    claimedPerPass: Math.round(mean(run.claimed)),
    placedPerPass: Math.round(mean(run.placed)),
    /** p50 pass time ÷ the pass budget: below 1, a pass fits between two timer ticks. */
    budgetRatio: Math.round((percentile(run.passMs, 50) / budgetMs) * 1000) / 1000,
    maxBudgetRatio: Math.round((percentile(run.passMs, 100) / budgetMs) * 1000) / 1000,
  };
}

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `--${k}  ${v}`).join('\n'));
    return;
  }
  const quick = f.quick === true;
  const str = (k: string, d: string) => (typeof f[k] === 'string' ? (f[k] as string) : d);
  const jobs = Number(str('jobs', quick ? '2000' : '10000'));
  const buyers = Number(str('buyers', '10'));
  const passes = Number(str('passes', quick ? '3' : '10'));
  const placeableEvery = Number(str('placeable-every', '10'));
  const inputsKib = Number(str('inputs-kib', '0'));
  const nodeCount = Number(str('nodes', '5'));
  const dbs = str('db', 'both');
  const here = dirname(fileURLToPath(import.meta.url));
  const out = str('out', join(here, '..', 'results', quick ? 'scheduling-pass-quick.json' : 'scheduling-pass.json'));
  const budgetMs = loadCoordinatorConfig({}).schedulePassIntervalMs;
  const batch = loadCoordinatorConfig({}).scheduleBatchSize;
  const m = machine();
  const pool = textPool(4 * 1024 * 1024 + inputsKib * 1024, 7);
  const results: Array<Record<string, unknown>> = [];
  const rows: Array<Array<string | number>> = [];
  const bench = (dbs === 'both' || dbs === 'postgres') && !process.env.GPUX_BENCH_SKIP_PG ? await openBenchPg(process.env) : undefined;
  const targets: Array<() => Promise<Target>> = [];
  const dir = mkdtempSync(join(tmpdir(), 'gpux-bench-pass-'));
  if (dbs === 'both' || dbs === 'sqlite') targets.push(() => sqliteTarget(dir));
  if (bench) targets.push(async () => postgresTarget(await bench.createDatabase('gpux_bench_pass'), (u) => bench.backendCpuMs(u)));
  let specBytes = 0;
  try {
    for (const open of targets) {
      const t = await open();
      try {
        const now = Date.now() - jobs - 1000;
        const t0 = performance.now();
        specBytes = await seedQueue(t.store, pool, { jobs, buyers, placeableEvery, inputsKib, now }, (n) => process.stdout.write(`\r${t.name}: ${n} jobs queued`));
        const seedS = Math.round((performance.now() - t0) / 100) / 10;
        console.log(`\r${t.name}: ${jobs} jobs queued in ${seedS} s`);
        // Scenario 1: no node at all, so nothing is placeable; scenario 2: nodes where one job in N fits.
        for (const scenario of ['unplaceable', 'placeable mix'] as const) {
          if (scenario === 'placeable mix') {
            for (let i = 0; i < nodeCount; i++) {
              const gpus = Array.from({ length: 8 }, (_, g) => ({ index: g, uuid: `GPU-${i}-${g}`, vendor: 'nvidia' as const, model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }));
              await t.store.registerNode({ id: `node-${i}`, publicKey: `key-${i}`, advertisement: sampleAdvertisement({ hostname: `box-${i}`, gpus, cpuCores: 64 }), now: Date.now() });
            }
          }
          const fresh = await pathRun(t, false, dir);
          const old = await pathRun(t, true, dir);
          // Alternate the two paths so load on the machine falls on both alike.
          for (let i = 0; i < passes; i++) {
            await measure(fresh, t);
            await measure(old, t);
          }
          const a = summary(fresh, budgetMs);
          const b = summary(old, budgetMs);
          const vsOld = Math.round((a.passMs.p50 / b.passMs.p50) * 1000) / 1000;
          results.push({ db: t.name, scenario, path: 'new: scheduling view (spec without its payload)', ...a, vsOldP50: vsOld });
          results.push({ db: t.name, scenario, path: 'old: select * + JSON.parse', ...b });
          const cpu = (x: typeof a) => `${x.cpuMs.p50}${x.dbCpuMs ? ` + ${x.dbCpuMs.p50}` : ''}`;
          const vsOldCpu = Math.round((a.cpuBudgetRatio / b.cpuBudgetRatio) * 1000) / 1000;
          results[results.length - 2] = { ...results[results.length - 2], vsOldCpu };
          rows.push([t.name, scenario, 'new', a.passMs.first, a.passMs.p50, a.passMs.max, a.claimMs.p50, cpu(a), a.claimedPerPass, a.placedPerPass, `${a.budgetRatio}`, `${a.cpuBudgetRatio}`, `${vsOld}x / ${vsOldCpu}x`]);
          rows.push([t.name, scenario, 'old', b.passMs.first, b.passMs.p50, b.passMs.max, b.claimMs.p50, cpu(b), b.claimedPerPass, b.placedPerPass, `${b.budgetRatio}`, `${b.cpuBudgetRatio}`, '']);
        }
      } finally {
        await t.close();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await bench?.stop();
  }
  console.log(
    `\n${jobs} queued jobs, spec ${specBytes} B without inputs${inputsKib ? ` + ${inputsKib} KiB inputs` : ''}, window ${batch}, budget ${budgetMs} ms, load ${m.loadavg1} → ${Math.round((loadavg()[0] ?? 0) * 100) / 100}\n`,
  );
  console.log(table(['db', 'scenario', 'path', 'first ms', 'p50 ms', 'max ms', 'claim p50', 'cpu p50 ms', 'claimed', 'placed', 'wall/budget', 'cpu/budget', 'new/old wall / cpu'], rows));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(
    out,
    `${JSON.stringify(
      {
        benchmark: 'scheduling-pass',
        date: new Date().toISOString(),
        machine: m,
        loadavg1After: Math.round((loadavg()[0] ?? 0) * 100) / 100,
        params: { jobs, buyers, passes, placeableEvery, inputsKib, nodes: nodeCount, specBytesWithoutInputs: specBytes, window: batch, budgetMs, postgres: bench?.source ?? null },
        notes: [
          'pass = SchedulingLoop.pass() on a real store: release ended gangs, node stats, claimQueuedFair, placement, assign; market off',
          'new: the claims read every jobs column but spec_payload (spec is the scheduling view; command, args, env, labels, inputs live in spec_payload, the last column); old: the same claim reading every column (select *) and JSON-parsing each whole spec',
          'unplaceable: no node registered; placeable mix: nodes of 8 H100, one job in placeable-every asks 1 GPU (the rest 16); the room of the last pass is handed back to the index before each pass',
          'wall/budget: p50 pass wall time ÷ GPUX_SCHEDULE_PASS_MS; cpu/budget: p50 CPU of the pass (this process, plus the PostgreSQL backends of the database) ÷ the same budget: on a shared machine wall time includes waiting for the CPU, CPU time does not',
        ],
        results,
      },
      null,
      2,
    )}\n`,
  );
  console.log(`\nwrote ${out}`);
}

await main();
