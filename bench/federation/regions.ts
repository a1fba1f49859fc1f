/**
 * Regions on loopback for the federation bench: per region a coordinator process (`gpux coordinator start`, SQLite in
 * a temp dir, market on, challenges off, fast timing, GPUX_REGION) and one simulated node agent with the region's
 * GPUs, staked by the operator. With `federated`, every pair is joined by a latency-injecting proxy per direction
 * (packages/testing tcp-proxy.ts: no network namespaces, so no root) and peered both ways over it; without, nothing
 * is peered and GPUX_FORWARD is off: each region alone.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { stakeToLock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { startTcpProxy, type TcpProxy } from '../../packages/testing/src/tcp-proxy.js';
import { FAST_TIMING_ENV, freePort, type GpuxProcess, spawnGpux, waitFor } from '../../packages/testing/src/processes.js';
import { processCpuMs } from '../dispatch/cpu.js';

export interface RegionSpec {
  name: string;
  gpus: number;
}

export interface LoopbackRegionsOptions {
  regions: RegionSpec[];
  /** One-way delay of each pair's link, both directions: [a, b, ms]. */
  links: Array<[string, string, number]>;
  dir: string;
  federated: boolean;
  /** What a job may pay per GPU-hour and its timeout: the stake each node bonds follows from them. */
  capPerGpuHour: number;
  timeoutSeconds: number;
  /** Coordinator settings of the federated run (GPUX_PEER_SUMMARY_MS, GPUX_FORWARD_POLL_MS, GPUX_FORWARD_AFTER_S). */
  peerSummaryMs: number;
  forwardPollMs: number;
  forwardAfterS: number;
}

export interface LoopbackRegion {
  name: string;
  gpus: number;
  url: string;
  operator: GpuxClient;
  /** This region's own funded buyer. */
  buyer: GpuxClient;
  coordinator: GpuxProcess;
  /** Peer id (as this region knows it) → the peer's region name; empty when alone. */
  peerNames: Map<string, string>;
}

export interface LoopbackRegions {
  regions: LoopbackRegion[];
  /** CPU ms each coordinator process has used so far (null where /proc cannot be read). */
  coordinatorCpuMs(): Record<string, number | null>;
  stop(): Promise<void>;
}

/** A buyer's deposit: far beyond what any run escrows. */
const BUYER_FUNDS = 1_000_000_000_000;
/** Stake over what a node's full load locks: the bench must never wait for stake. */
const STAKE_MARGIN = 2;

export async function startLoopbackRegions(o: LoopbackRegionsOptions): Promise<LoopbackRegions> {
  const procs: GpuxProcess[] = [];
  const proxies: TcpProxy[] = [];
  const regions: LoopbackRegion[] = [];
  const stop = async () => {
    // Agents first (they would retry a stopped coordinator), then coordinators, then the links.
    const agents = procs.filter((p) => !regions.some((r) => r.coordinator === p));
    await Promise.all(agents.map((p) => p.stop('SIGTERM', 3_000)));
    await Promise.all(procs.map((p) => p.stop('SIGTERM', 5_000)));
    await Promise.all(proxies.map((p) => p.close()));
  };
  try {
    const started = await Promise.all(o.regions.map((spec) => startCoordinator(spec)));
    regions.push(...started);
    await Promise.all(regions.map((r) => startNode(r)));
    if (o.federated) await peerAll();
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    regions,
    coordinatorCpuMs: () => Object.fromEntries(regions.map((r) => [r.name, processCpuMs(r.coordinator.child.pid)])),
    stop,
  };

  async function startCoordinator(spec: RegionSpec): Promise<LoopbackRegion> {
    const dir = join(o.dir, spec.name);
    mkdirSync(dir, { recursive: true });
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {
      ...FAST_TIMING_ENV,
      GPUX_LOG_LEVEL: 'warn',
      GPUX_MARKET: 'on',
      GPUX_CHALLENGE: 'off',
      GPUX_REGION: spec.name,
      GPUX_HOME: join(dir, 'home'),
      GPUX_FORWARD: o.federated ? 'on' : 'off',
      GPUX_PEER_SUMMARY_MS: String(o.peerSummaryMs),
      GPUX_FORWARD_POLL_MS: String(o.forwardPollMs),
      GPUX_FORWARD_AFTER_S: String(o.forwardAfterS),
    };
    const coordinator = spawnGpux(['coordinator', 'start', '--port', String(port), '--data-dir', join(dir, 'coordinator')], env);
    procs.push(coordinator);
    const exited = () => {
      if (coordinator.child.exitCode !== null) throw new Error(`the ${spec.name} coordinator exited (${coordinator.child.exitCode}): ${coordinator.output().slice(-2000)}`);
    };
    const operatorToken = await waitFor(`the ${spec.name} coordinator's operator token`, () => {
      exited();
      return /operator token[^:]*: (\S+)/.exec(coordinator.output())?.[1];
    });
    const url = `http://127.0.0.1:${port}`;
    await waitFor(`${spec.name} ready`, async () => {
      exited();
      return (await fetch(`${url}/readyz`).catch(() => undefined))?.ok ? true : undefined;
    }, 60_000);
    const operator = new GpuxClient({ url, token: operatorToken });
    const { token } = await operator.createToken({ role: 'buyer', name: `${spec.name}-buyer` });
    const buyer = new GpuxClient({ url, token });
    const buyerId = (await buyer.whoami()).accountId;
    await operator.deposit({ asset: 'usdc', amount: BUYER_FUNDS, reference: 'bench:federation buyer', accountId: buyerId });
    return { name: spec.name, gpus: spec.gpus, url, operator, buyer, coordinator, peerNames: new Map() };
  }

  /** The region's one simulated node (its GPUs), enrolled by the operator, online and staked for a full load. */
  async function startNode(r: LoopbackRegion): Promise<void> {
    if (r.gpus === 0) return;
    const enrollment = (await r.operator.createEnrollment({ name: `${r.name}-nodes` })).token;
    const dir = join(o.dir, r.name);
    const agent = spawnGpux(
      ['node', 'start', '--coordinator', r.url, '--enrollment-token', enrollment, '--executor', 'simulated', '--data-dir', join(dir, 'node'), '--name', `${r.name}-gpu-box`, '--region', r.name],
      { ...FAST_TIMING_ENV, GPUX_LOG_LEVEL: 'warn', GPUX_HOME: join(dir, 'node-home'), GPUX_SIM_GPUS: String(r.gpus) },
    );
    procs.push(agent);
    const nodes = await waitFor(`${r.name}'s node online`, async () => {
      if (agent.child.exitCode !== null) throw new Error(`the ${r.name} agent exited (${agent.child.exitCode}): ${agent.output().slice(-2000)}`);
      const { nodes } = await r.operator.listNodes({ status: 'online' });
      return nodes.length > 0 ? nodes : undefined;
    });
    const stake = stakeToLock(o.capPerGpuHour, 1, o.timeoutSeconds) * r.gpus * STAKE_MARGIN;
    await r.operator.deposit({ asset: 'usdc', amount: stake * nodes.length, reference: `bench:federation stake for ${r.name}` });
    for (const n of nodes) await r.operator.addStake(n.id, stake);
  }

  /** A shaped proxy per direction of every link, and `region peer add` both ways over it. */
  async function peerAll(): Promise<void> {
    const byName = (name: string) => {
      const r = regions.find((x) => x.name === name);
      if (!r) throw new Error(`link to unknown region "${name}"`);
      return r;
    };
    const keys = new Map(await Promise.all(regions.map(async (r) => [r.name, (await r.operator.regionPeers()).self.keyFingerprint] as const)));
    for (const [a, b, delayMs] of o.links) {
      for (const [from, to] of [
        [byName(a), byName(b)],
        [byName(b), byName(a)],
      ] as const) {
        const port = Number(new URL(to.url).port);
        const proxy = await startTcpProxy({ host: '127.0.0.1', port }, { shape: { delayMs } });
        proxies.push(proxy);
        const { peer } = await from.operator.addPeer({ url: `http://127.0.0.1:${proxy.port}`, key: keys.get(to.name) as string, name: to.name });
        from.peerNames.set(peer.id, to.name);
      }
    }
    // No job before every region has a summary of each peer showing all its GPUs free.
    const gpusOf = new Map(regions.map((r) => [r.name, r.gpus]));
    await Promise.all(
      regions.map((r) =>
        waitFor(`${r.name} to see its peers' GPUs`, async () => {
          const { peers } = await r.operator.regionPeers();
          const free = (p: (typeof peers)[number]) => p.summary?.classes.reduce((n, c) => n + c.freeGpus, 0) ?? -1;
          return peers.length === r.peerNames.size && peers.every((p) => p.status === 'ok' && free(p) === gpusOf.get(p.name)) ? true : undefined;
        }, 60_000, 200),
      ),
    );
  }
}
