/** A real network for browser tests: a coordinator on SQLite in a temp dir, a process node, simulated nodes, tokens. */
import { join } from 'node:path';
import { loadAgentConfig, ProcessExecutor, type RunningAgent, type SimulatedFleet, seededRandom, silentLogger, startAgent, startSimulatedNodes } from '@gpux/agent';
import { cryptoRandom, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { tempDir } from '@gpux/testing';

export const LOCAL_LABEL = 'dashboard-test/local';
const POLL_WAIT_MS = 2000;

export interface Network {
  url: string;
  coord: RunningCoordinator;
  operatorToken: string;
  buyerToken: string;
  otherBuyerToken: string;
  /** A new buyer account's token. */
  buyer(name: string): Promise<string>;
  local: RunningAgent;
  fleets: SimulatedFleet[];
  close(): Promise<void>;
}

export interface NetworkOptions {
  /** Simulated nodes per region, e.g. { 'eu-west': 4, 'us-east': 3 }. */
  simulated?: Record<string, number>;
}

export async function startNetwork(opts: NetworkOptions = {}): Promise<Network> {
  const dir = tempDir('gpux-dashboard-test');
  const cleanups: Array<() => Promise<void>> = [() => dir.cleanup()];
  const close = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  };
  try {
    const config = loadCoordinatorConfig({}, { dataDir: join(dir.path, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', heartbeatIntervalMs: 1000 });
    const coord = await startCoordinator(config);
    cleanups.push(() => coord.close());
    cleanups.push(releaseClientSockets);
    const buyer = (name: string) => issueToken(coord.store, { role: 'buyer', name }, systemClock, cryptoRandom).then((t) => t.token);
    const [buyerToken, otherBuyerToken] = await Promise.all([buyer('dashboard-buyer'), buyer('other-buyer')]);

    const agentConfig = loadAgentConfig(
      {},
      { coordinatorUrl: coord.url, dataDir: join(dir.path, 'node'), executor: 'process', allowUnsafeProcess: true, pollWaitMs: POLL_WAIT_MS, labels: { [LOCAL_LABEL]: 'true' }, region: 'local' },
    );
    const executor = new ProcessExecutor({ allowUnsafe: true, workRoot: join(dir.path, 'work'), killGraceMs: 500 });
    const local = await startAgent(agentConfig, { executor, logger: silentLogger, detect: { docker: { socketPath: join(dir.path, 'no-docker.sock') } } });
    cleanups.push(() => local.stop());

    const fleets: SimulatedFleet[] = [];
    let seed = 7;
    for (const [region, n] of Object.entries(opts.simulated ?? {})) {
      const fleet = await startSimulatedNodes(n, { coordinatorUrl: coord.url, dataDir: join(dir.path, `sim-${region}`), random: seededRandom(seed++), region, pollWaitMs: POLL_WAIT_MS });
      fleets.push(fleet);
      cleanups.push(() => fleet.stop());
    }
    const operatorToken = coord.bootstrapOperatorToken;
    if (!operatorToken) throw new Error('a fresh coordinator issues a bootstrap operator token');
    return { url: coord.url, coord, operatorToken, buyerToken, otherBuyerToken, buyer, local, fleets, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Close this process's fetch connections to the coordinator (agents, SDK and test share Node's global undici
 * pool). The pool opens sockets it may never send a request on; the coordinator's close waits for such a
 * socket until the server's headers timeout (about a minute). A fresh pool takes the old one's place.
 */
async function releaseClientSockets(): Promise<void> {
  const key = Symbol.for('undici.globalDispatcher.1');
  const g = globalThis as unknown as Record<symbol, { close(): Promise<void>; constructor: new () => unknown } | undefined>;
  const old = g[key];
  if (!old) return;
  g[key] = new old.constructor() as typeof old;
  await old.close().catch(() => {});
}

/** Poll until `check` returns a value (not undefined), or fail after `timeoutMs`. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
}
