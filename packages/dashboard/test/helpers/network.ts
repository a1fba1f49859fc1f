/**
 * A real network for browser tests: a coordinator on SQLite in a temp dir running a market (like `gpux dev`:
 * test funds are minted), a process node and simulated nodes owned by one provider and staked, funded buyers.
 */
import { join } from 'node:path';
import { loadAgentConfig, ProcessExecutor, type RunningAgent, type SimulatedFleet, seededRandom, silentLogger, startAgent, startSimulatedNodes } from '@gpux/agent';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { stakeToLock, systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { tempDir } from '@gpux/testing';

export const LOCAL_LABEL = 'dashboard-test/local';
const POLL_WAIT_MS = 2000;
const USDC = 1_000_000;
/** Minted to every buyer: escrow for the workload's queued jobs at any price the test reaches. */
export const BUYER_FUNDS = 10_000 * USDC;
/** Staked on every node, as `gpux dev` does: a one-hour job on 8 GPUs at 12.5 USDC per GPU-hour. */
export const STAKE_PER_NODE = stakeToLock(12_500_000, 8, 3600);
/** Short epochs, so the price table has moved at least once within a test. */
export const MARKET_EPOCH_MS = 500;

export interface Network {
  url: string;
  coord: RunningCoordinator;
  operatorToken: string;
  buyerToken: string;
  otherBuyerToken: string;
  /** The account that owns every node (agents registered with its token) and is paid for their work. */
  providerToken: string;
  /** A new buyer account's token, with BUYER_FUNDS minted to it. */
  buyer(name: string): Promise<string>;
  local: RunningAgent;
  fleets: SimulatedFleet[];
  close(): Promise<void>;
}

export interface NetworkOptions {
  /** Simulated nodes per region, e.g. { 'eu-west': 4, 'us-east': 3 }. */
  simulated?: Record<string, number>;
  /** false: a coordinator without a market (jobs are free; nothing is minted or staked). Default true. */
  market?: boolean;
}

export async function startNetwork(opts: NetworkOptions = {}): Promise<Network> {
  const dir = tempDir('gpux-dashboard-test');
  const cleanups: Array<() => Promise<void>> = [() => dir.cleanup()];
  const close = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  };
  try {
    // The market is on unless asked otherwise, so the tests exercise escrow, prices and bills; devMint funds accounts.
    // No proof-of-hardware challenge: simulated nodes claim GPUs they do not have, so they could never pass one
    // (the challenge has its own tests); their proof state is 'skipped', which the node page shows as such.
    const config = loadCoordinatorConfig(
      {},
      {
        dataDir: join(dir.path, 'coord'),
        host: '127.0.0.1',
        port: 0,
        logLevel: 'silent',
        heartbeatIntervalMs: 1000,
        devMint: true,
        marketEpochMs: MARKET_EPOCH_MS,
        market: opts.market ?? true,
        challenge: 'off',
      },
    );
    const coord = await startCoordinator(config);
    cleanups.push(() => coord.close());
    cleanups.push(releaseClientSockets);
    const token = (name: string) => issueToken(coord.store, { role: 'buyer', name }, systemClock, cryptoRandom).then((t) => t.token);
    const buyer = async (name: string) => {
      const t = await token(name);
      if (config.market) await new GpuxClient({ url: coord.url, token: t }).deposit({ asset: 'usdc', amount: BUYER_FUNDS });
      return t;
    };
    const [buyerToken, otherBuyerToken, provider] = await Promise.all([
      buyer('dashboard-buyer'),
      buyer('other-buyer'),
      issueToken(coord.store, { role: 'buyer', name: 'dashboard-provider' }, systemClock, cryptoRandom),
    ]);
    const providerToken = provider.token;
    // Nodes register with an enrollment token of the provider (issue 10 item 2).
    const enrollmentToken = (await issueEnrollment(coord.store, { accountId: provider.accountId, name: 'dashboard-nodes' }, systemClock, cryptoRandom)).token;

    const agentConfig = loadAgentConfig(
      {},
      { coordinatorUrl: coord.url, dataDir: join(dir.path, 'node'), executor: 'process', allowUnsafeProcess: true, pollWaitMs: POLL_WAIT_MS, labels: { [LOCAL_LABEL]: 'true' }, region: 'local', enrollmentToken },
    );
    const executor = new ProcessExecutor({ allowUnsafe: true, workRoot: join(dir.path, 'work'), killGraceMs: 500 });
    const local = await startAgent(agentConfig, { executor, logger: silentLogger, detect: { docker: { socketPath: join(dir.path, 'no-docker.sock') } } });
    cleanups.push(() => local.stop());

    const fleets: SimulatedFleet[] = [];
    let seed = 7;
    for (const [region, n] of Object.entries(opts.simulated ?? {})) {
      const fleet = await startSimulatedNodes(n, { coordinatorUrl: coord.url, dataDir: join(dir.path, `sim-${region}`), random: seededRandom(seed++), region, pollWaitMs: POLL_WAIT_MS, enrollmentToken });
      fleets.push(fleet);
      cleanups.push(() => fleet.stop());
    }
    // The provider's stake: a market job is placed only on a node with enough free stake.
    const nodeIds = [local.nodeId, ...fleets.flatMap((f) => f.nodes.map((n) => n.nodeId))];
    if (config.market) {
      const provider = new GpuxClient({ url: coord.url, token: providerToken });
      await provider.deposit({ asset: 'usdc', amount: STAKE_PER_NODE * nodeIds.length });
      for (const id of nodeIds) await provider.addStake(id, STAKE_PER_NODE);
    }
    const operatorToken = coord.bootstrapOperatorToken;
    if (!operatorToken) throw new Error('a fresh coordinator issues a bootstrap operator token');
    return { url: coord.url, coord, operatorToken, buyerToken, otherBuyerToken, providerToken, buyer, local, fleets, close };
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
