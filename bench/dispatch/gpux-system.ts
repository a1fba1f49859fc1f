/**
 * A gpux system for one phase: a coordinator (child process or in-process) on a fresh database, a buyer
 * account, and N agents in this process running the no-op executor, all on 127.0.0.1. With the market on
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
import { type BenchCoordinatorSettings, type CoordinatorDiagnostics, startBenchCoordinator } from './bench-coordinator.js';
import { processCpuMs } from './cpu.js';
import { waitUntil } from './load.js';
import { NoopExecutor } from './noop-executor.js';
import { BUYER_FUNDS, noopStakePerNode } from './noop-job.js';

export interface SystemOptions {
  /** `sqlite:<path>` or a postgres:// URL of an empty database; '{dir}' in it becomes the system's temp dir. */
  db: string;
  agents: number;
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
}

export interface GpuxSystem {
  url: string;
  market: boolean;
  buyer: GpuxClient;
  operator: GpuxClient;
  /** One per agent, so the bench can tell how the scheduler spread the jobs. */
  executors: NoopExecutor[];
  /** CPU ms the coordinator has used so far; null when it runs in this process. */
  coordinatorCpuMs(): number | null;
  /** Stops everything; returns the coordinator's diagnostics when they were asked for, else null. */
  stop(): Promise<CoordinatorDiagnostics | null>;
}

const CHILD_ENTRY = new URL('./coordinator-child.ts', import.meta.url).pathname;

type Coordinator = { url: string; operatorToken: string; pid: number | undefined; close(): Promise<void> };

async function startChild(settings: BenchCoordinatorSettings, cpuProfDir: string | null): Promise<Coordinator> {
  const flags = cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [];
  const c = await startChildServer(CHILD_ENTRY, [JSON.stringify(settings)], flags, 60_000);
  if (!c.operatorToken) throw new Error('the coordinator printed no bootstrap operator token (database not empty?)');
  return { url: c.url, operatorToken: c.operatorToken, pid: c.pid, close: () => c.close() };
}

async function startInProcess(settings: BenchCoordinatorSettings): Promise<Coordinator> {
  const c = await startBenchCoordinator(settings);
  if (!c.bootstrapOperatorToken) throw new Error('the coordinator returned no bootstrap operator token (database not empty?)');
  return { url: c.url, operatorToken: c.bootstrapOperatorToken, pid: undefined, close: () => c.close() };
}

export async function startGpuxSystem(opts: SystemOptions): Promise<GpuxSystem> {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-bench-'));
  const settings: BenchCoordinatorSettings = {
    db: opts.db.replace('{dir}', dir),
    dataDir: join(dir, 'coordinator'),
    market: opts.market,
    sqliteSynchronous: opts.sqliteSynchronous,
    pgPool: opts.pgPool,
    diagnosticsFile: opts.diagnostics ? join(dir, 'diagnostics.json') : null,
  };
  const coord = opts.coordinator === 'child' ? await startChild(settings, opts.cpuProfDir) : await startInProcess(settings);
  const agents: Array<{ stop(): Promise<void> }> = [];
  const executors: NoopExecutor[] = [];
  const stop = async () => {
    await Promise.allSettled(agents.map((a) => a.stop()));
    await coord.close();
    const file = settings.diagnosticsFile;
    const diag = file && existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as CoordinatorDiagnostics) : null;
    rmSync(dir, { recursive: true, force: true });
    return diag;
  };
  try {
    const operator = new GpuxClient({ url: coord.url, token: coord.operatorToken });
    const { token } = await operator.createToken({ role: 'buyer', name: 'bench' });
    const buyer = new GpuxClient({ url: coord.url, token });
    // The market's provider: the account that owns the nodes, is paid for their work and bonds their stake.
    const providerToken = opts.market ? (await operator.createToken({ role: 'buyer', name: 'bench-provider' })).token : undefined;
    // Nodes register with an enrollment token: the provider's when there is a market, else the operator's.
    const enroller = providerToken !== undefined ? new GpuxClient({ url: coord.url, token: providerToken }) : operator;
    const enrollmentToken = (await enroller.createEnrollment({ name: 'bench-nodes' })).token;
    for (let i = 0; i < opts.agents; i++) {
      const config = loadAgentConfig(
        {},
        { coordinatorUrl: coord.url, dataDir: join(dir, `agent-${i}`), executor: 'simulated', logLevel: 'warn', name: `bench-${i}`, enrollmentToken },
      );
      const executor = new NoopExecutor();
      executors.push(executor);
      agents.push(await startAgent(config, { executor }));
    }
    const online = await waitUntil(async () => (await operator.listNodes({ status: 'online', limit: 1000 })).nodes.length >= opts.agents, Date.now() + 30_000, 100);
    if (!online) throw new Error(`only some of the ${opts.agents} agents came online within 30 s`);
    if (providerToken !== undefined) await fund(operator, buyer, new GpuxClient({ url: coord.url, token: providerToken }));
    return { url: coord.url, market: opts.market, buyer, operator, executors, coordinatorCpuMs: () => processCpuMs(coord.pid), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Money for a market run, before any job: the operator records a deposit for the buyer and one for the
 * provider (exactly the stake it bonds), and the provider stakes each of its nodes.
 */
async function fund(operator: GpuxClient, buyer: GpuxClient, provider: GpuxClient): Promise<void> {
  const buyerId = (await buyer.whoami()).accountId;
  const providerId = (await provider.whoami()).accountId;
  const { nodes } = await operator.listNodes({ limit: 1000 });
  const stray = nodes.find((n) => n.providerId !== providerId);
  if (stray) throw new Error(`node ${stray.id} registered without the bench's provider (providerId ${stray.providerId ?? 'null'})`);
  const stakes = nodes.map((n) => ({ id: n.id, amount: noopStakePerNode(n.advertisement.cpuCores) }));
  const providerFunds = stakes.reduce((s, n) => s + n.amount, 0);
  await operator.deposit({ asset: 'usdc', amount: BUYER_FUNDS, reference: 'bench', accountId: buyerId });
  await operator.deposit({ asset: 'usdc', amount: providerFunds, reference: 'bench', accountId: providerId });
  for (const n of stakes) await provider.addStake(n.id, n.amount);
}
