/**
 * Test helper: a real coordinator with a market (in process, SQLite in a temp dir) and simulated agents with 8 H100s
 * each in region eu, staked by a provider whose H100 ask is 2.5 USDC per GPU-hour (or none), and a funded buyer. What
 * `gpux offers` and `gpux job submit --dry-run` are tested against (issue 16), and what the examples are validated on.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type RunningAgent, SimulatedExecutor } from '@gpux/agent';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { startSimulatedH100 } from './simulated-h100.js';

export const USDC = 1_000_000;
export const H100 = 'nvidia-h100-80gb';
export const H100_ASK = 2.5 * USDC;

export interface PricedNetwork {
  coord: RunningCoordinator;
  url: string;
  buyer: string;
  provider: string;
  nodeIds: string[];
  /** CLI args that point a command at this network as the buyer. */
  as(token?: string): string[];
  stop(): Promise<void>;
}

/** `ask`: the provider's H100 ask per GPU-hour (null: none, so its nodes clear at the index, as a job without a cap needs). */
export async function startPricedNetwork(nodes = 2, ask: number | null = H100_ASK): Promise<PricedNetwork> {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-cli-priced-'));
  const agents: RunningAgent[] = [];
  let coord: RunningCoordinator | undefined;
  const stop = async () => {
    await Promise.all(agents.map((a) => a.stop()));
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    // A long epoch keeps the index at the catalogue's price while the tests run.
    coord = await startCoordinator(
      loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: true, devMint: true, verify: false, challenge: 'off', heartbeatIntervalMs: 500, marketEpochMs: 3_600_000 }),
    );
    const c = coord;
    const issue = async (name: string) => issueToken(c.store, { role: 'buyer', name }, systemClock, cryptoRandom);
    const provider = await issue('provider');
    const buyer = await issue('buyer');
    const enrollmentToken = (await issueEnrollment(c.store, { accountId: provider.accountId, name: 'rack' }, systemClock, cryptoRandom)).token;
    const executor = new SimulatedExecutor();
    for (let i = 0; i < nodes; i++) {
      agents.push(await startSimulatedH100({ url: c.url, dataDir: join(dir, `node-${i}`), enrollmentToken, region: 'eu', hostname: `h100-rig-${i}`, gpus: 8, executor }));
    }
    const asProvider = new GpuxClient({ url: c.url, token: provider.token });
    await asProvider.deposit({ asset: 'usdc', amount: 1000 * USDC });
    for (const a of agents) await asProvider.addStake(a.nodeId, 200 * USDC);
    if (ask !== null) await asProvider.setAsk(H100, ask);
    await new GpuxClient({ url: c.url, token: buyer.token }).deposit({ asset: 'usdc', amount: 100 * USDC });
    return { coord: c, url: c.url, buyer: buyer.token, provider: provider.token, nodeIds: agents.map((a) => a.nodeId), as: (token = buyer.token) => ['--coordinator', c.url, '--token', token], stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
