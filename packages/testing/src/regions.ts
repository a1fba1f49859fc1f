/**
 * Regions at a real network distance (issue 15), in one call: `startRegions` makes one network namespace per region
 * (netns.ts), runs in each a coordinator (SQLite, the real CLI, listening on its uplink) and a simulated node agent
 * with the region's GPUs, joins the regions by shaped links (one link-shaping TcpProxy per direction, listening on
 * the root end of the sender's uplink and forwarding to the receiver's coordinator: traffic between two regions
 * crosses both uplinks and the shaper), and peers every linked pair both ways with `gpux region peer add`. Regions
 * without a link cannot reach each other at all (a namespace routes only to its own uplink).
 *
 * The test process reaches each coordinator through an unshaped proxy on loopback (`region.url`), so the SDK and
 * the CLI send their tokens to loopback as they require.
 */
import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ListPeersResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { makeNetns, type Netns, type NetnsHost } from './netns.js';
import { FAST_TIMING_ENV, GPUX_BIN, type GpuxProcess, trackGpux, waitFor } from './processes.js';
import { type CutMode, type LinkShape, startTcpProxy, type TcpProxy } from './tcp-proxy.js';

/** The port every coordinator listens on inside its own namespace (each namespace has its own ports). */
export const REGION_PORT = 7070;

export interface RegionSpec {
  /** The region's name (GPUX_REGION) and its namespace's. */
  name: string;
  /** GPUs of its one simulated node. 0: no node. */
  gpus: number;
}

export interface LinkSpec {
  between: [string, string];
  /** Each direction is shaped alike: e.g. `{ delayMs: 40 }` is a 40 ms one-way, 80 ms round-trip link. */
  shape: LinkShape;
}

export interface StartRegionsOptions {
  regions: RegionSpec[];
  links: LinkSpec[];
  /** Data dirs, homes and keys go under it. */
  dir: string;
  /** Extra environment of every coordinator (after the defaults: fast timing, GPUX_PEER_SUMMARY_MS, challenges off). */
  env?: NodeJS.ProcessEnv;
  /** GPUX_PEER_SUMMARY_MS. Default 300. */
  peerSummaryMs?: number;
  /** Peer every linked pair both ways with the CLI. Default true. */
  peer?: boolean;
  /**
   * With the market on (the coordinators' default), each node needs stake to take priced work: the operator
   * deposits and stakes this much (minor units of USDC) on every region's node. Default 0: none.
   */
  stakePerNode?: number;
}

export interface Region {
  name: string;
  host: NetnsHost;
  /** The coordinator's URL for the test process (loopback, unshaped). */
  url: string;
  operatorToken: string;
  /** SDK client with the operator token. */
  client: GpuxClient;
  /** The fingerprint peers pin (what `gpux coordinator key show` prints). */
  keyFingerprint: string;
  coordinator: GpuxProcess;
  /** Its simulated node agent (none when gpus is 0). */
  agent: GpuxProcess | null;
}

export interface RegionLink {
  between: [string, string];
  /** The shaper of each direction: [a→b, b→a]. */
  proxies: [TcpProxy, TcpProxy];
  /** A partition of this link, both ways ('blackhole' by default: nothing answers, as when packets are dropped). */
  cut(mode?: CutMode): void;
  heal(): void;
  setShape(shape: LinkShape): void;
}

export interface Regions {
  netns: Netns;
  regions: Region[];
  region(name: string): Region;
  link(a: string, b: string): RegionLink;
  /** The URL region `from` reaches region `to` at: through their shaped link. */
  peerUrl(from: string, to: string): string;
  /** Run the CLI (in the test's namespace) against region `name` with its operator token; resolves when it exits. */
  gpux(name: string, ...args: string[]): Promise<CliResult>;
  /** `gpux region list -o json` of region `name`. */
  regionList(name: string): Promise<ListPeersResponse>;
  /** SIGKILL region `name`'s coordinator (its node agent runs on, retrying); resolves once it has exited. */
  kill(name: string): Promise<void>;
  /** Start region `name`'s coordinator again on its data dir (after kill); resolves once it is ready. */
  restart(name: string): Promise<void>;
  /** Stop agents, coordinators and proxies; delete the namespaces. Idempotent. */
  stop(): Promise<void>;
}

export interface CliResult {
  code: number;
  out: string;
  err: string;
}

/** A gpux process inside a namespace, with GpuxProcess's output() and stop(). */
function gpuxIn(netns: Netns, name: string, args: string[], env: NodeJS.ProcessEnv): GpuxProcess {
  return trackGpux(netns.spawn(name, process.execPath, [GPUX_BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
}

function runGpux(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [GPUX_BIN, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code as number) : 1) : 0;
      resolve({ code, out: stdout, err: stderr || (err && !stdout ? String(err) : '') });
    });
  });
}

export async function startRegions(o: StartRegionsOptions): Promise<Regions> {
  const names = o.regions.map((r) => r.name);
  for (const l of o.links) for (const n of l.between) if (!names.includes(n)) throw new Error(`startRegions: link to unknown region "${n}"`);
  const netns = makeNetns(names);
  const regions: Region[] = [];
  const links: RegionLink[] = [];
  const proxies: TcpProxy[] = [];
  const procs: GpuxProcess[] = [];
  const cliHome = join(o.dir, 'cli-home');
  mkdirSync(cliHome, { recursive: true });
  let stopped = false;

  const region = (name: string) => {
    const r = regions.find((x) => x.name === name);
    if (!r) throw new Error(`no region "${name}" (have ${names.join(', ')})`);
    return r;
  };
  const link = (a: string, b: string) => {
    const l = links.find((x) => (x.between[0] === a && x.between[1] === b) || (x.between[0] === b && x.between[1] === a));
    if (!l) throw new Error(`no link between "${a}" and "${b}"`);
    return l;
  };
  const gpux = (name: string, ...args: string[]) => {
    const r = region(name);
    return runGpux(args, { GPUX_HOME: cliHome, GPUX_URL: r.url, GPUX_OPERATOR_TOKEN: r.operatorToken, GPUX_TOKEN: r.operatorToken });
  };
  const set: Regions = {
    netns,
    regions,
    region,
    link,
    peerUrl(from, to) {
      const l = link(from, to);
      const proxy = l.between[0] === from ? l.proxies[0] : l.proxies[1];
      return `http://${proxy.host}:${proxy.port}`;
    },
    gpux,
    async regionList(name) {
      const res = await gpux(name, 'region', 'list', '-o', 'json');
      if (res.code !== 0) throw new Error(`gpux region list on ${name} exited ${res.code}: ${res.err}`);
      return JSON.parse(res.out) as ListPeersResponse;
    },
    async kill(name) {
      const r = region(name);
      await r.coordinator.stop('SIGKILL', 0);
    },
    async restart(name) {
      const r = region(name) as Region & { env: NodeJS.ProcessEnv };
      r.coordinator = spawnCoordinator(r.name, r.env);
      procs.push(r.coordinator);
      await waitReady(r);
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await Promise.all(procs.filter((p) => p.child.exitCode === null).map((p) => p.stop('SIGTERM', 3_000)));
      await Promise.all(proxies.map((p) => p.close()));
      netns.teardown();
    },
  };

  try {
    const started = await Promise.all(o.regions.map((spec) => startRegion(spec)));
    regions.push(...started);
    // The nodes start while the links are made and the regions peered.
    const agents = Promise.all(o.regions.map((spec, i) => (spec.gpus > 0 ? startAgent(started[i] as Region & { env: NodeJS.ProcessEnv }, spec.gpus) : undefined)));
    agents.catch(() => {}); // awaited below; a failure while peering must not leave it unhandled
    for (const l of o.links) {
      const [a, b] = l.between.map((n) => netns.host(n)) as [NetnsHost, NetnsHost];
      // a→b listens where a can reach (its uplink's root end) and forwards to b's coordinator, and the reverse.
      const ab = await startTcpProxy({ host: b.address, port: REGION_PORT }, { host: a.gateway, shape: l.shape });
      const ba = await startTcpProxy({ host: a.address, port: REGION_PORT }, { host: b.gateway, shape: l.shape });
      proxies.push(ab, ba);
      links.push({
        between: l.between,
        proxies: [ab, ba],
        cut(mode = 'blackhole') {
          ab.cut(mode);
          ba.cut(mode);
        },
        heal() {
          ab.restore();
          ba.restore();
        },
        setShape(shape) {
          ab.setShape(shape);
          ba.setShape(shape);
        },
      });
    }
    if (o.peer !== false) {
      const adds = o.links.flatMap((l) => [l.between, [l.between[1], l.between[0]]]);
      await Promise.all(
        adds.map(async ([from, to]) => {
          const res = await gpux(from as string, 'region', 'peer', 'add', set.peerUrl(from as string, to as string), '--key', region(to as string).keyFingerprint, '--name', to as string);
          if (res.code !== 0) throw new Error(`gpux region peer add on ${from} for ${to} exited ${res.code}: ${res.err}`);
        }),
      );
    }
    await agents;
  } catch (err) {
    await set.stop();
    throw err;
  }
  return set;

  function spawnCoordinator(name: string, env: NodeJS.ProcessEnv): GpuxProcess {
    return gpuxIn(netns, name, ['coordinator', 'start', '--host', '0.0.0.0', '--port', String(REGION_PORT), '--data-dir', join(o.dir, name, 'coord')], env);
  }

  async function waitReady(r: Pick<Region, 'name' | 'url' | 'coordinator'>): Promise<void> {
    await waitFor(`${r.name} ready`, async () => {
      if (r.coordinator.child.exitCode !== null) throw new Error(`the ${r.name} coordinator exited (${r.coordinator.child.exitCode}): ${r.coordinator.output().slice(-2000)}`);
      return (await fetch(`${r.url}/readyz`).catch(() => undefined))?.ok ? true : undefined;
    }, 30_000);
  }

  async function startRegion(spec: RegionSpec): Promise<Region & { env: NodeJS.ProcessEnv }> {
    const host = netns.host(spec.name);
    const dir = join(o.dir, spec.name);
    const env = {
      ...FAST_TIMING_ENV,
      GPUX_LOG_LEVEL: 'warn',
      GPUX_CHALLENGE: 'off',
      GPUX_PEER_SUMMARY_MS: String(o.peerSummaryMs ?? 300),
      ...o.env,
      GPUX_REGION: spec.name,
      GPUX_HOME: join(dir, 'home'),
    };
    const coordinator = spawnCoordinator(spec.name, env);
    procs.push(coordinator);
    const access = await startTcpProxy({ host: host.address, port: REGION_PORT });
    proxies.push(access);
    const url = `http://127.0.0.1:${access.port}`;
    const operatorToken = await waitFor(`the ${spec.name} coordinator's operator token`, () => {
      if (coordinator.child.exitCode !== null) throw new Error(`the ${spec.name} coordinator exited (${coordinator.child.exitCode}): ${coordinator.output().slice(-2000)}`);
      return /operator token \(shown once[^:]*: (\S+)/.exec(coordinator.output())?.[1];
    });
    await waitReady({ name: spec.name, url, coordinator });
    const client = new GpuxClient({ url, token: operatorToken });
    const keyFingerprint = (await client.regionPeers()).self.keyFingerprint;
    return { name: spec.name, host, url, operatorToken, client, keyFingerprint, coordinator, agent: null, env };
  }

  /** The region's simulated node, registered with an enrollment token of its operator; resolves once it is online. */
  async function startAgent(r: Region & { env: NodeJS.ProcessEnv }, gpus: number): Promise<void> {
    const enrollment = (await r.client.createEnrollment({ name: `${r.name}-nodes` })).token;
    const agent = gpuxIn(
      netns,
      r.name,
      ['node', 'start', '--coordinator', `http://127.0.0.1:${REGION_PORT}`, '--enrollment-token', enrollment, '--executor', 'simulated', '--data-dir', join(o.dir, r.name, 'node'), '--name', `${r.name}-gpu-box`, '--region', r.name],
      { ...r.env, GPUX_SIM_GPUS: String(gpus) },
    );
    procs.push(agent);
    r.agent = agent;
    await waitFor(`${r.name}'s node online`, async () => {
      if (agent.child.exitCode !== null) throw new Error(`the ${r.name} agent exited (${agent.child.exitCode}): ${agent.output().slice(-2000)}`);
      const { nodes } = await r.client.listNodes({ status: 'online' });
      return nodes.length > 0 ? nodes : undefined;
    }).then(async (nodes) => {
      if (!o.stakePerNode) return;
      await r.client.deposit({ asset: 'usdc', amount: o.stakePerNode * nodes.length, reference: `stake for ${r.name}'s nodes` });
      for (const n of nodes) await r.client.addStake(n.id, o.stakePerNode);
    });
  }
}
