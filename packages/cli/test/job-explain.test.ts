/**
 * `gpux job explain` against a real coordinator with a market and two staked A100 nodes (issue 16): every reason
 * is a sentence with a change, amounts are decimals with their asset, the price line and the price suggestion
 * agree. Scenarios: nodes without asks above the job's cap (the index prices them); a gang of 2 that only price
 * rules out; 8 H100s on a network without them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type RunningAgent, SimulatedExecutor, silentLogger, startAgent, loadAgentConfig } from '@gpux/agent';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { CLASS_CATALOGUE, grossAsk, marketClassOf, stakeToLock, systemClock } from '@gpux/core';
import { type ExplainJobResponse, formatAmount, type JobSpecInput, type NodeAdvertisementInput } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { waitFor } from '@gpux/testing';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

const USDC = 1_000_000;
const A100 = { vendor: 'nvidia' as const, model: 'NVIDIA A100 80GB PCIe', vramMb: 81920 };
const usd = (minor: number) => formatAmount(minor, 'usdc');

function a100Node(hostname: string): NodeAdvertisementInput {
  return {
    hostname,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    cpuCores: 16,
    memoryMb: 65536,
    gpus: [{ index: 0, uuid: `${hostname}-gpu0`, ...A100 }],
    docker: { available: false },
    executors: ['simulated'],
    labels: {},
  };
}

describe('gpux job explain on a market network', () => {
  let dir: string;
  let coord: RunningCoordinator;
  let buyerToken: string;
  let provider: GpuxClient;
  let buyer: GpuxClient;
  const agents: RunningAgent[] = [];
  const cls = marketClassOf(A100);

  const explain = async (id: string) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv('job', 'explain', id, '--coordinator', coord.url, '--token', buyerToken), io);
    assert.equal(code, 0, io.stderr());
    return io.stdout();
  };
  const submit = async (over: Partial<JobSpecInput>) =>
    (await buyer.submitJob({ name: 'explain-me', image: 'busybox', command: ['true'], timeoutSeconds: 600, resources: { gpu: { count: 1 } }, ...over })).job.id;
  /** The explain answer once the index shows `ready` (asks and stake reach it asynchronously). */
  const settled = (id: string, ready: (e: ExplainJobResponse) => boolean) => waitFor(`explain of ${id}`, async () => {
    const e = await buyer.explainJob(id);
    return ready(e) ? e : undefined;
  });

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-explain-'));
    // Long epochs: the index stays at the class's initial price, so the expected amounts are known.
    const config = loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: true, devMint: true, marketEpochMs: 3_600_000, challenge: 'off' });
    coord = await startCoordinator(config);
    const mint = (name: string) => issueToken(coord.store, { role: 'buyer', name }, systemClock, cryptoRandom);
    const [b, p] = await Promise.all([mint('explain-buyer'), mint('explain-provider')]);
    buyerToken = b.token;
    buyer = new GpuxClient({ url: coord.url, token: b.token });
    provider = new GpuxClient({ url: coord.url, token: p.token });
    await buyer.deposit({ asset: 'usdc', amount: 1000 * USDC });
    const enrollmentToken = (await issueEnrollment(coord.store, { accountId: p.accountId, name: 'explain-nodes' }, systemClock, cryptoRandom)).token;
    for (const host of ['a100-a', 'a100-b']) {
      const cfg = loadAgentConfig({}, { coordinatorUrl: coord.url, dataDir: join(dir, host), executor: 'simulated', pollWaitMs: 1000, enrollmentToken });
      agents.push(await startAgent(cfg, { executor: new SimulatedExecutor(systemClock), advertisement: a100Node(host), logger: silentLogger }));
    }
    const stake = stakeToLock(10 * USDC, 8, 3600);
    await provider.deposit({ asset: 'usdc', amount: 2 * stake });
    for (const a of agents) await provider.addStake(a.nodeId, stake);
  });
  after(async () => {
    for (const a of agents) await a.stop();
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('nodes without asks: the index prices them, and the price line and the change name the same amount', async () => {
    // Before the first epoch the index is the catalogue's initial price (the epochs here are an hour long).
    const index = CLASS_CATALOGUE[cls]?.initial;
    assert.ok(index !== undefined && index > USDC / 2, `the ${cls} index is above the cap`);
    const id = await submit({ maxPricePerGpuHour: USDC / 2 });
    await settled(id, (e) => e.filters.some((f) => f.name === 'price' && f.rejected === 2));
    const out = await explain(id);
    assert.match(out, new RegExp(`^price:\\s+pays at most 0\\.500000 USDC per GPU-hour; no node that fits clears within it \\(the cheapest asks ${usd(index)} per GPU-hour\\)$`, 'm'));
    assert.match(out, new RegExp(`  - 2 nodes fit the job's resources and constraints but their lowest prices are above its cap of 0\\.500000 USDC per GPU-hour \\(the cheapest: ${usd(index)} per GPU-hour\\) — raise maxPricePerGpuHour to ${usd(index)} and submit it again`));
    assert.doesNotMatch(out, /no asks yet/);
    assert.doesNotMatch(out, /(?<![.\d])500000\b/, 'no amount in minor units');
    await buyer.cancelJob(id);
  });

  test('a gang of 2 that only price rules out: what rules them out and the cap that admits both, not "lower nodes"', async () => {
    const fee = (await buyer.marketPrices()).feeBps;
    await provider.setAsk(cls, 2 * USDC);
    const gross = grossAsk(2 * USDC, fee);
    const id = await submit({ nodes: 2, maxPricePerGpuHour: 1.5 * USDC });
    await settled(id, (e) => e.price.includes(usd(gross)));
    const out = await explain(id);
    assert.match(out, /^summary:\s+no node can run this job as specified; see what to change$/m);
    assert.match(out, /^price:\s+pays at most 1\.500000 USDC per GPU-hour; no node that fits clears within it/m);
    assert.match(out, /^price\s+2\s+lowest price \(class floor, the node's ask, or the index for a node without an ask\) above the job's cap of 1\.500000 USDC per GPU-hour$/m);
    assert.match(out, new RegExp(`^what to change:\\n  - 2 nodes fit the job's resources and constraints but their lowest prices are above its cap of 1\\.500000 USDC per GPU-hour \\(the cheapest: ${usd(gross)} per GPU-hour\\) — raise maxPricePerGpuHour to ${usd(gross)} and submit it again \\(a submitted job keeps its cap\\)\\n$`, 'm'));
    assert.doesNotMatch(out, /lower nodes|0 exist/);
    await buyer.cancelJob(id);
    await provider.setAsk(cls, null);
  });

  test('8 H100s on a network of A100 nodes: the reason and what to change', async () => {
    const id = await submit({ maxPricePerGpuHour: 3 * USDC, resources: { gpu: { count: 8, models: ['H100'] } } });
    const out = await explain(id);
    assert.match(out, /^gpuModel\s+2\s+no GPU matching models H100$/m);
    assert.match(
      out,
      /^what to change:\n {2}- no online node has 8 GPUs of models H100; the fleet has nvidia a100 80gb pcie 80 GB \(2 nodes, at most 1 on one\) — change resources\.gpu\.models to match one of those, or drop it, and lower resources\.gpu\.count to 1\n$/m,
    );
    assert.match(out, /^price:\s+pays at most 3\.000000 USDC per GPU-hour; no node fits the job's resources and constraints, so none is priced$/m);
    await buyer.cancelJob(id);
  });
});
