/**
 * A gpux system for one phase: a coordinator (child process or in-process) on a fresh database, or several
 * replicas of it (child processes on one PostgreSQL database, one key file), a buyer account, and N agents in
 * this process running the no-op executor, all on 127.0.0.1. With the market on
 * (the coordinator's default, set explicitly here) it is also a paying network: a provider account owns
 * every agent's node, the operator records a deposit for the buyer and the provider, and the provider
 * stakes each node enough for all the bench jobs it can hold, so every job escrows, places, settles.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAgentConfig, startAgent } from '@gpux/agent';
import { GpuxClient } from '@gpux/sdk';
import { startChildServer } from '../lib/child-server.js';
import { type BenchCoordinatorSettings, type CoordinatorDiagnostics, type StoreCalls, startBenchCoordinator } from './bench-coordinator.js';
import { processCpuMs } from './cpu.js';
import { waitUntil } from './load.js';
import { NoopExecutor } from './noop-executor.js';
import { BUYER_FUNDS, noopStakePerNode } from './noop-job.js';

export interface SystemOptions {
  /** `sqlite:<path>` or a postgres:// URL of an empty database; '{dir}' in it becomes the system's temp dir. */
  db: string;
  agents: number;
  /** Coordinator replicas on the one database (PostgreSQL, child mode, above 1); 1: one coordinator, as before. */
  replicas: number;
  /** The coordinator's market (escrow, paid placement, stake, settlement); off: a private cluster, jobs free. */
  market: boolean;
  coordinator: 'child' | 'inproc';
  /** Directory for the coordinator's V8 CPU profile (child mode only), or null. */
  cpuProfDir: string | null;
  /** SQLite's synchronous mode; null keeps the coordinator's default. */
  sqliteSynchronous: 'FULL' | 'NORMAL' | null;
  /** PostgreSQL's pool size; null keeps the coordinator's default. */
  pgPool: number | null;
  /** Collect the coordinator's diagnostics (Store calls, event-loop delay); stop() then returns them. */
  diagnostics: boolean;
  /** Provider accounts owning the agents' nodes (market on), agent i's node by provider i mod N; default 1. */
  providers?: number;
}

export interface GpuxSystem {
  url: string;
  market: boolean;
  /** Through the first replica: the reads after a phase (every replica sees the same database). */
  buyer: GpuxClient;
  /** The buyer through each replica, in replica order (buyers[0] is `buyer`): submitter j submits through j mod N. */
  buyers: GpuxClient[];
  operator: GpuxClient;
  /** One per agent, so the bench can tell how the scheduler spread the jobs. */
  executors: NoopExecutor[];
  /** CPU ms the coordinator (summed over its replicas) has used so far; null when it runs in this process. */
  coordinatorCpuMs(): number | null;
  /** Stops everything; returns the coordinator's diagnostics when they were asked for, else null. */
  stop(): Promise<CoordinatorDiagnostics | null>;
}

const CHILD_ENTRY = new URL('./coordinator-child.ts', import.meta.url).pathname;

type Coordinator = { url: string; operatorToken: string | null; pid: number | undefined; close(): Promise<void> };

/** `replica` 0 starts on the empty database and must print the bootstrap operator token; later replicas print null. */
async function startChild(settings: BenchCoordinatorSettings, cpuProfDir: string | null, replica = 0): Promise<Coordinator> {
  const flags = cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [];
  const c = await startChildServer(CHILD_ENTRY, [JSON.stringify(settings)], flags, 60_000);
  if (!c.operatorToken && replica === 0) {
    await c.close();
    throw new Error('the coordinator printed no bootstrap operator token (database not empty?)');
  }
  return { url: c.url, operatorToken: c.operatorToken, pid: c.pid, close: () => c.close() };
}

/**
 * `n` replicas on one database, one after the other: the first migrates it and prints the operator token. They share
 * one key file (agents pin one coordinator key) and each writes its diagnostics to a file of its own.
 */
async function startReplicas(settings: BenchCoordinatorSettings, n: number, dir: string, cpuProfDir: string | null): Promise<Coordinator[]> {
  const out: Coordinator[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const own: BenchCoordinatorSettings = {
        ...settings,
        dataDir: join(dir, `coordinator-${i}`),
        coordinatorKeyFile: join(dir, 'coordinator-key.json'),
        diagnosticsFile: settings.diagnosticsFile && join(dir, `diagnostics-${i}.json`),
      };
      out.push(await startChild(own, cpuProfDir, i));
    }
    return out;
  } catch (err) {
    await Promise.allSettled(out.map((c) => c.close()));
    throw err;
  }
}

/** One replica's diagnostics, or several summed (Store calls, statements) and taken at their worst (event-loop delay). */
function mergeDiagnostics(files: string[]): CoordinatorDiagnostics | null {
  const all = files.filter((f) => existsSync(f)).map((f) => JSON.parse(readFileSync(f, 'utf8')) as CoordinatorDiagnostics);
  if (all.length <= 1) return all[0] ?? null;
  const sumCalls = (of: (d: CoordinatorDiagnostics) => Record<string, StoreCalls> | undefined) => {
    const out: Record<string, StoreCalls> = {};
    for (const d of all) {
      for (const [k, c] of Object.entries(of(d) ?? {})) {
        const sum = out[k] ?? { calls: 0, totalMs: 0 };
        out[k] = { calls: sum.calls + c.calls, totalMs: sum.totalMs + c.totalMs };
      }
    }
    return out;
  };
  const httpRequests: Record<string, number> = {};
  for (const d of all) for (const [k, n] of Object.entries(d.httpRequests ?? {})) httpRequests[k] = (httpRequests[k] ?? 0) + n;
  const worst = (k: 'p50' | 'p99' | 'max') => Math.max(...all.map((d) => d.eventLoopDelayMs[k]));
  return { storeCalls: sumCalls((d) => d.storeCalls), eventLoopDelayMs: { p50: worst('p50'), p99: worst('p99'), max: worst('max') }, httpRequests, sql: sumCalls((d) => d.sql) };
}

async function startInProcess(settings: BenchCoordinatorSettings): Promise<Coordinator> {
  const c = await startBenchCoordinator(settings);
  if (!c.bootstrapOperatorToken) throw new Error('the coordinator returned no bootstrap operator token (database not empty?)');
  return { url: c.url, operatorToken: c.bootstrapOperatorToken, pid: undefined, close: () => c.close() };
}

export async function startGpuxSystem(opts: SystemOptions): Promise<GpuxSystem> {
  if (opts.replicas > 1 && (opts.coordinator !== 'child' || !/^postgres(ql)?:/.test(opts.db))) throw new Error('replicas need PostgreSQL and child-process coordinators');
  const dir = mkdtempSync(join(tmpdir(), 'gpux-bench-'));
  const settings: BenchCoordinatorSettings = {
    db: opts.db.replace('{dir}', dir),
    dataDir: join(dir, 'coordinator'),
    market: opts.market,
    sqliteSynchronous: opts.sqliteSynchronous,
    pgPool: opts.pgPool,
    coordinatorKeyFile: null,
    diagnosticsFile: opts.diagnostics ? join(dir, 'diagnostics.json') : null,
  };
  const coords =
    opts.replicas > 1
      ? await startReplicas(settings, opts.replicas, dir, opts.cpuProfDir)
      : [opts.coordinator === 'child' ? await startChild(settings, opts.cpuProfDir) : await startInProcess(settings)];
  const coord = coords[0] as Coordinator;
  const urls = coords.map((c) => c.url);
  const agents: Array<{ stop(): Promise<void> }> = [];
  const executors: NoopExecutor[] = [];
  const stop = async () => {
    await Promise.allSettled(agents.map((a) => a.stop()));
    await Promise.allSettled(coords.map((c) => c.close()));
    const file = settings.diagnosticsFile;
    const diag = file === null ? null : mergeDiagnostics(opts.replicas > 1 ? coords.map((_, i) => join(dir, `diagnostics-${i}.json`)) : [file]);
    rmSync(dir, { recursive: true, force: true });
    return diag;
  };
  try {
    if (!coord.operatorToken) throw new Error('the first coordinator gave no bootstrap operator token');
    const operator = new GpuxClient({ url: coord.url, token: coord.operatorToken });
    const { token } = await operator.createToken({ role: 'buyer', name: 'bench' });
    const buyers = urls.map((url) => new GpuxClient({ url, token }));
    const buyer = buyers[0] as GpuxClient;
    // The market's providers: the accounts that own the nodes, are paid for their work and bond their stake.
    const providers: GpuxClient[] = [];
    for (let p = 0; opts.market && p < Math.max(1, opts.providers ?? 1); p++) {
      const { token: providerToken } = await operator.createToken({ role: 'buyer', name: p === 0 ? 'bench-provider' : `bench-provider-${p}` });
      providers.push(new GpuxClient({ url: coord.url, token: providerToken }));
    }
    // Nodes register with an enrollment token: their provider's when there is a market, else the operator's.
    const enrollers = providers.length > 0 ? providers : [operator];
    const enrollmentTokens: string[] = [];
    for (const e of enrollers) enrollmentTokens.push((await e.createEnrollment({ name: 'bench-nodes' })).token);
    for (let i = 0; i < opts.agents; i++) {
      const enrollmentToken = enrollmentTokens[i % enrollmentTokens.length] as string;
      // Agent i starts on replica i mod N and fails over to the others in turn.
      const first = i % urls.length;
      const coordinatorUrl = urls.length > 1 ? [...urls.slice(first), ...urls.slice(0, first)] : coord.url;
      const config = loadAgentConfig(
        {},
        { coordinatorUrl, dataDir: join(dir, `agent-${i}`), executor: 'simulated', logLevel: 'warn', name: `bench-${i}`, enrollmentToken },
      );
      const executor = new NoopExecutor();
      executors.push(executor);
      agents.push(await startAgent(config, { executor }));
    }
    const online = await waitUntil(async () => (await operator.listNodes({ status: 'online', limit: 1000 })).nodes.length >= opts.agents, Date.now() + 30_000, 100);
    if (!online) throw new Error(`only some of the ${opts.agents} agents came online within 30 s`);
    if (providers.length > 0) await fund(operator, buyer, providers);
    // Summed over the replicas; null as soon as one cannot be read (in-process, or a replica gone).
    const coordinatorCpuMs = () => coords.reduce<number | null>((sum, c) => (sum === null ? null : sumOrNull(sum, processCpuMs(c.pid))), 0);
    return { url: coord.url, market: opts.market, buyer, buyers, operator, executors, coordinatorCpuMs, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

const sumOrNull = (a: number, b: number | null) => (b === null ? null : a + b);

/**
 * Money for a market run, before any job: the operator records a deposit for the buyer and one for each
 * provider (exactly the stake it bonds), and each provider stakes each of its nodes.
 */
async function fund(operator: GpuxClient, buyer: GpuxClient, providers: GpuxClient[]): Promise<void> {
  const buyerId = (await buyer.whoami()).accountId;
  const byAccount = new Map<string, GpuxClient>();
  for (const p of providers) byAccount.set((await p.whoami()).accountId, p);
  const { nodes } = await operator.listNodes({ limit: 1000 });
  const stray = nodes.find((n) => !n.providerId || !byAccount.has(n.providerId));
  if (stray) throw new Error(`node ${stray.id} registered without one of the bench's providers (providerId ${stray.providerId ?? 'null'})`);
  await operator.deposit({ asset: 'usdc', amount: BUYER_FUNDS, reference: 'bench', accountId: buyerId });
  for (const [providerId, provider] of byAccount) {
    const stakes = nodes.filter((n) => n.providerId === providerId).map((n) => ({ id: n.id, amount: noopStakePerNode(n.advertisement.cpuCores) }));
    const providerFunds = stakes.reduce((s, n) => s + n.amount, 0);
    if (providerFunds > 0) await operator.deposit({ asset: 'usdc', amount: providerFunds, reference: 'bench', accountId: providerId });
    for (const n of stakes) await provider.addStake(n.id, n.amount);
  }
}
