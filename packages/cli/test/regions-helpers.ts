/**
 * Test helper: a region for the federation CLI tests (issue 15) — a real coordinator in process (SQLite, market on,
 * fast peer summaries and forwarding polls) — and one simulated, staked H100 node in it.
 */
import { join } from 'node:path';
import type { RunningAgent } from '@gpux/agent';
import { type CoordinatorConfig, cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { startSimulatedH100 } from './simulated-h100.js';

export const USDC = 1_000_000;

export interface Region {
  name: string;
  coord: RunningCoordinator;
  operatorToken: string;
  operator: GpuxClient;
  agent?: RunningAgent;
}

/** `over`: e.g. a market epoch (a long one keeps the index price still; a short one lets it follow demand). */
export async function startRegion(dir: string, name: string, over: Partial<CoordinatorConfig> = {}): Promise<Region> {
  const config = loadCoordinatorConfig(
    {},
    {
      dataDir: join(dir, name),
      host: '127.0.0.1',
      port: 0,
      logLevel: 'silent',
      market: true,
      devMint: true,
      verify: false,
      challenge: 'off',
      region: name,
      peerSummaryMs: 150,
      heartbeatIntervalMs: 500,
      forwardPollMs: 100,
      ...over,
    },
  );
  const coord = await startCoordinator(config);
  const operatorToken = coord.bootstrapOperatorToken ?? '';
  return { name, coord, operatorToken, operator: new GpuxClient({ url: coord.url, token: operatorToken }) };
}

/** A simulated agent with one H100 in the region, staked by a provider (the market needs stake to place work). */
export async function startNode(r: Region, dir: string): Promise<RunningAgent> {
  const provider = await issueToken(r.coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
  const enrollmentToken = (await issueEnrollment(r.coord.store, { accountId: provider.accountId, name: 'rack' }, systemClock, cryptoRandom)).token;
  const agent = await startSimulatedH100({ url: r.coord.url, dataDir: join(dir, `${r.name}-node`), enrollmentToken, region: r.name, hostname: `${r.name}-h100`, gpus: 1 });
  r.agent = agent;
  const asProvider = new GpuxClient({ url: r.coord.url, token: provider.token });
  await asProvider.deposit({ asset: 'usdc', amount: 500 * USDC });
  await asProvider.addStake(agent.nodeId, 200 * USDC);
  return agent;
}
