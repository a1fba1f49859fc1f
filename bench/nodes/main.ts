/**
 * `npm run bench:nodes`: tens of thousands of lightweight simulated nodes (node-worker.ts) registering and
 * heartbeating with real signed HTTP at the production interval, against 1 or more coordinator replicas on
 * PostgreSQL and 1 on SQLite, beside a bare signature-checking server (baseline-server.ts) under the same
 * load. See bench/README.md, section "nodes".
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { GpuxClient } from '@gpux/sdk';
import { processCpuMs } from '../dispatch/cpu.js';
import { type BenchPg, openBenchPg } from '../dispatch/pg.js';
import { summarize } from '../dispatch/stats.js';
import { type Db, type NodesArgs, parseNodesArgs } from './args.js';
import { type DbProbe, openDbProbe, processRssBytes } from './probe.js';
import { NodeWorker, type Server, startBaselineServer, startCoordinatorChild } from './processes.js';
import { printReport, type Placement, type StepRow, type SystemResult } from './report.js';

// `--report FILE`: print the table of an earlier run's JSON and exit.
const reportAt = process.argv.indexOf('--report');
if (reportAt >= 0) {
  printReport(JSON.parse(readFileSync(process.argv[reportAt + 1] ?? '', 'utf8')));
  process.exit(0);
}
const args = parseNodesArgs(process.argv.slice(2), process.env);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuSum = (pids: number[]) => pids.reduce((s, p) => s + (processCpuMs(p) ?? 0), 0);
const rssSum = (pids: number[]) => pids.reduce((s, p) => s + (processRssBytes(p) ?? 0), 0);
/** A step past which the ramp stops: this many of the sent heartbeats failed, or p99 above this. */
const CEILING_ERROR_SHARE = 0.01;
const CEILING_P99_MS = 5000;

interface SystemSpec {
  label: string;
  kind: 'baseline' | 'gpux';
  db: Db | null;
  replicas: number;
}

function systems(a: NodesArgs): SystemSpec[] {
  const out: SystemSpec[] = [];
  if (a.baseline) out.push({ label: 'baseline: signature check, no store', kind: 'baseline', db: null, replicas: 1 });
  if (a.dbs.includes('sqlite')) out.push({ label: 'gpux, 1 coordinator', kind: 'gpux', db: 'sqlite', replicas: 1 });
  if (a.dbs.includes('postgres')) for (const r of a.replicas) out.push({ label: `gpux, ${r} coordinator${r > 1 ? 's' : ''}`, kind: 'gpux', db: 'postgres', replicas: r });
  return out;
}

async function startServers(spec: SystemSpec, pg: BenchPg | null, dir: string): Promise<{ servers: Server[]; db: string | null }> {
  if (spec.kind === 'baseline') return { servers: [await startBaselineServer(args.intervalMs)], db: null };
  const db = spec.db === 'sqlite' ? `sqlite:${join(dir, 'coordinator.db')}` : await (pg as BenchPg).createDatabase('gpux_bench_nodes');
  const profDir = args.cpuProf ? join(process.cwd(), 'bench/results/prof') : null;
  if (profDir) mkdirSync(profDir, { recursive: true });
  const servers: Server[] = [];
  // One after the other: the first migrates the empty database and prints the bootstrap operator token.
  for (let i = 0; i < spec.replicas; i++) servers.push(await startCoordinatorChild({ db, dataDir: join(dir, `coordinator-${i}`), heartbeatMs: args.intervalMs }, profDir));
  return { servers, db };
}

/** Submits `n` one-GPU jobs (16 at a time) and times until the scheduling passes have placed them all. */
async function timePlacement(url: string, operatorToken: string, probe: DbProbe, n: number): Promise<Placement> {
  const operator = new GpuxClient({ url, token: operatorToken });
  const buyer = new GpuxClient({ url, token: (await operator.createToken({ role: 'buyer', name: 'bench-nodes' })).token });
  const before = await probe.placedJobs();
  const t0 = performance.now();
  let next = 0;
  const submitter = async () => {
    for (let i = next++; i < n; i = next++) await buyer.submitJob({ name: `probe-${i}`, image: 'bench/noop', command: ['true'], resources: { gpu: { count: 1 } } });
  };
  await Promise.all(Array.from({ length: Math.min(16, n) }, submitter));
  const submittedMs = performance.now() - t0;
  const deadline = performance.now() + 120_000;
  let placed = 0;
  while (performance.now() < deadline) {
    placed = (await probe.placedJobs()) - before;
    if (placed >= n) break;
    await sleep(25);
  }
  const allMs = performance.now() - t0;
  const delays = summarize(await probe.placementDelays());
  return { jobs: n, placed, submitMs: Math.round(submittedMs), placedMs: Math.round(allMs), afterSubmitMs: Math.round(allMs - submittedMs), delayMs: delays };
}

async function runSystem(spec: SystemSpec, pg: BenchPg | null): Promise<SystemResult> {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-bench-nodes-'));
  const { servers, db } = await startServers(spec, pg, dir);
  const serverPids = servers.map((s) => s.pid);
  const probe = db ? await openDbProbe(db) : null;
  const workers = Array.from({ length: args.workers }, () => new NodeWorker());
  const result: SystemResult = { label: spec.label, kind: spec.kind, db: spec.db, replicas: spec.replicas, rows: [], placement: null, ceiling: null };
  try {
    const operatorToken = servers[0]?.operatorToken ?? null;
    let enrollmentToken: string | null = null;
    if (spec.kind === 'gpux') {
      if (!operatorToken) throw new Error('the first coordinator printed no bootstrap operator token');
      const operator = new GpuxClient({ url: (servers[0] as Server).url, token: operatorToken });
      enrollmentToken = (await operator.createEnrollment({ name: 'bench-nodes' })).token;
    }
    const urls = servers.map((s) => s.url);
    const fleetSize = args.steps[args.steps.length - 1] ?? 0;
    await Promise.all(
      workers.map((w, k) =>
        w.init({ cmd: 'init', worker: k, urls, intervalMs: args.intervalMs, jitter: 0.1, maxSockets: args.maxSockets, timeoutMs: 30_000, fleetSize, seed: 1 }),
      ),
    );
    const bootRss = rssSum(serverPids);
    let have = 0;
    for (const n of args.steps) {
      // Node i goes to worker i % K, and within a worker to URL i % replicas: every replica gets a share.
      const indices = workers.map(() => [] as number[]);
      for (let i = have; i < n; i++) indices[i % workers.length]?.push(i);
      const r0 = performance.now();
      const added = await Promise.all(workers.map((w, k) => w.add(indices[k] as number[], enrollmentToken, args.registerConcurrency)));
      const registerMs = performance.now() - r0;
      const registered = added.reduce((s, a) => s + a.registered, 0);
      const regFailed = added.reduce((s, a) => s + a.failed, 0);
      have = n;
      process.stderr.write(`  ${spec.label}${spec.db ? ` (${spec.db})` : ''}: ${n} nodes, ${registered} registered in ${Math.round(registerMs)} ms${regFailed ? `, ${regFailed} failed: ${added.flatMap((a) => a.errors)[0]}` : ''}\n`);
      // One whole interval, so every node (the new ones too) is in its steady rhythm before the window.
      await sleep(args.intervalMs + 1000);
      await Promise.all(workers.map((w) => w.mark()));
      const c0 = { server: cpuSum(serverPids), pg: db && pg && !db.startsWith('sqlite:') ? await pg.clusterCpuMs() : null, t: performance.now() };
      await sleep(args.windowS * 1000);
      const windows = await Promise.all(workers.map((w) => w.collect()));
      const wallMs = performance.now() - c0.t;
      const serverCpu = cpuSum(serverPids) - c0.server;
      const pgCpu = c0.pg !== null && db && pg ? ((await pg.clusterCpuMs()) ?? 0) - c0.pg : null;
      const online = probe ? await probe.onlineNodes() : null;
      const lat = summarize(windows.flatMap((w) => w.latencies));
      const errors: Record<string, number> = {};
      for (const w of windows) for (const [k, v] of Object.entries(w.errors)) errors[k] = (errors[k] ?? 0) + v;
      const sent = windows.reduce((s, w) => s + w.sent, 0);
      const errorCount = Object.values(errors).reduce((s, v) => s + v, 0);
      const rss = rssSum(serverPids);
      const row: StepRow = {
        nodes: n,
        registered: registered,
        registerFailed: regFailed,
        registerPerS: Math.round((registered * 1000) / Math.max(1, registerMs)),
        online,
        offeredPerS: Math.round((n * 1000) / args.intervalMs),
        answeredPerS: Math.round((windows.reduce((s, w) => s + w.ok, 0) * 1000) / wallMs),
        sent,
        errors: errorCount,
        errorKinds: errors,
        skipped: windows.reduce((s, w) => s + w.skipped, 0),
        latencyMs: lat,
        generatorLagP99Ms: Math.max(...windows.map((w) => w.lagP99)),
        serverCpuPct: Math.round((serverCpu / wallMs) * 1000) / 10,
        pgCpuPct: pgCpu === null ? null : Math.round((pgCpu / wallMs) * 1000) / 10,
        generatorCpuPct: Math.round((windows.reduce((s, w) => s + w.cpuMs, 0) / wallMs) * 1000) / 10,
        serverRssMb: Math.round(rss / 2 ** 20),
        serverRssGrowthMbPer10k: Math.round(((rss - bootRss) / 2 ** 20 / (n / 10_000)) * 10) / 10,
        loadAvg1: Math.round(loadavg()[0]! * 100) / 100,
      };
      result.rows.push(row);
      process.stderr.write(`    p50 ${lat.p50} ms, p99 ${lat.p99} ms, ${errorCount} errors, coordinator CPU ${row.serverCpuPct}%, generator ${row.generatorCpuPct}%, online ${online ?? '-'}\n`);
      const bad = errorCount > sent * CEILING_ERROR_SHARE || !(lat.p99 <= CEILING_P99_MS) || regFailed > 0;
      if (bad) {
        result.ceiling = `stopped after ${n} nodes: ${errorCount} of ${sent} heartbeats failed, p99 ${lat.p99} ms${regFailed ? `, ${regFailed} registrations failed` : ''}`;
        break;
      }
    }
    if (spec.kind === 'gpux' && args.jobs > 0 && probe && operatorToken) {
      try {
        result.placement = await timePlacement((servers[0] as Server).url, operatorToken, probe, args.jobs);
        process.stderr.write(`    ${result.placement.placed}/${args.jobs} jobs placed ${result.placement.afterSubmitMs} ms after the last submit\n`);
      } catch (e) {
        result.ceiling = `${result.ceiling ?? ''}${result.ceiling ? '; ' : ''}placement failed: ${(e as Error).message}`;
      }
    }
  } finally {
    await Promise.allSettled(workers.map((w) => w.stop()));
    await probe?.close();
    await Promise.allSettled(servers.map((s) => s.close()));
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}

async function main(): Promise<void> {
  const started = new Date();
  const load0 = loadavg();
  const specs = systems(args);
  const pg = specs.some((s) => s.db === 'postgres') ? await openBenchPg(process.env) : null;
  // Interrupted: stop the throwaway PostgreSQL cluster (the children end with their pipes).
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void (pg?.stop() ?? Promise.resolve()).finally(() => process.exit(130)));
  const results: SystemResult[] = [];
  try {
    for (const spec of specs) {
      process.stderr.write(`${spec.label}${spec.db ? ` on ${spec.db}` : ''}\n`);
      try {
        results.push(await runSystem(spec, pg));
      } catch (e) {
        process.stderr.write(`  failed: ${(e as Error).stack ?? e}\n`);
        results.push({ label: spec.label, kind: spec.kind, db: spec.db, replicas: spec.replicas, rows: [], placement: null, ceiling: `failed: ${(e as Error).message}` });
      }
    }
  } finally {
    await pg?.stop();
  }
  const report = {
    bench: 'nodes',
    date: started.toISOString(),
    seconds: Math.round((Date.now() - started.getTime()) / 1000),
    machine: { cpus: cpus().length, model: cpus()[0]?.model ?? '?', node: process.version, loadAvgStart: load0.map((x) => Math.round(x * 100) / 100), loadAvgEnd: loadavg().map((x) => Math.round(x * 100) / 100) },
    params: { ...args, postgres: pg?.source ?? null },
    results,
  };
  printReport(report);
  mkdirSync(dirname(args.out), { recursive: true });
  writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`\nwrote ${args.out}`);
}

const watchdog = setTimeout(() => {
  console.error('bench:nodes: watchdog (60 min) fired');
  process.exit(2);
}, 60 * 60_000);
watchdog.unref();
await main();
process.exit(0);
