/** startSimulatedNodes: N in-process agents shaped like the trace's fleet, running the SimulatedExecutor. */
import { join } from 'node:path';
import { type Clock, type Logger, type Random, systemClock } from '@gpux/core';
import type { NodeAdvertisementInput } from '@gpux/protocol';
import { simulatedGpus } from '../advertisement.js';
import { startAgent } from '../agent.js';
import { type AgentConfig, loadAgentConfig } from '../config.js';
import { SimulatedExecutor } from '../executors/simulated-executor.js';
import { loadOrCreateIdentity } from '../identity.js';
import { silentLogger } from '../logger.js';
import type { RunningAgent } from '../loop/node-agent.js';
import { AGENT_VERSION } from '../version.js';
import { type NodeShape, TRACE_GPU_MODELS } from './fleet-mix.js';
import { pickFleet } from './pick-fleet.js';

export interface SimulatedNodesOptions {
  coordinatorUrl: string;
  /** Each node keeps its identity in <dataDir>/sim-<i>/, so a restarted fleet keeps its node ids. */
  dataDir: string;
  random: Random;
  logger?: Logger;
  clock?: Clock;
  region?: string;
  labels?: Record<string, string>;
  /** Long-poll wait of each node. Default 25000 ms. */
  pollWaitMs?: number;
  /** Each node registers with this enrollment token (its account is paid for their work and stakes them). */
  enrollmentToken?: string;
  /** Agents started at once. Default 32. */
  concurrency?: number;
  fetch?: typeof fetch;
}

export interface SimulatedFleet {
  nodes: RunningAgent[];
  shapes: NodeShape[];
  stop(): Promise<void>;
}

export async function startSimulatedNodes(n: number, opts: SimulatedNodesOptions): Promise<SimulatedFleet> {
  const shapes = pickFleet(n, opts.random);
  const clock = opts.clock ?? systemClock;
  const executor = new SimulatedExecutor(clock);
  const logger = opts.logger ?? silentLogger;
  const nodes: RunningAgent[] = new Array(n);
  const stopAll = () => Promise.all(nodes.filter(Boolean).map((a) => a.stop())).then(() => {});
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) {
      const shape = shapes[i] as NodeShape;
      const config = loadAgentConfig({}, { coordinatorUrl: opts.coordinatorUrl, dataDir: join(opts.dataDir, `sim-${i}`), executor: 'simulated', pollWaitMs: opts.pollWaitMs, enrollmentToken: opts.enrollmentToken });
      const identity = await loadOrCreateIdentity(config.dataDir);
      const advertisement = simulatedAdvertisement(i, shape, identity.nodeId, opts);
      nodes[i] = await startAgent(config, { executor, identity, advertisement, clock, random: opts.random, logger, fetch: opts.fetch });
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(n, opts.concurrency ?? 32) }, worker));
  } catch (e) {
    await stopAll();
    throw e;
  }
  return { nodes, shapes, stop: stopAll };
}

export function simulatedAdvertisement(i: number, shape: NodeShape, nodeId: string, opts: Pick<AgentConfig, 'region'> & { labels?: Record<string, string> } = {}): NodeAdvertisementInput {
  const gpu = TRACE_GPU_MODELS[shape.model];
  const ad: NodeAdvertisementInput = {
    hostname: `sim-${i}`,
    agentVersion: AGENT_VERSION,
    os: 'linux (simulated)',
    arch: 'x64',
    cpuCores: shape.cpuCores,
    memoryMb: shape.memoryMb,
    gpus: simulatedGpus(shape.gpuCount, nodeId.slice(2, 14), gpu.name, gpu.vramMb, gpu.computeCapability),
    docker: { available: false, gpuRuntime: 'none' },
    executors: ['simulated'],
    labels: { ...opts.labels, simulated: 'true', 'trace-model': shape.model },
    simulated: true,
  };
  if (opts.region) ad.region = opts.region;
  return ad;
}
