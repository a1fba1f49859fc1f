/** startAgent: load the identity, detect hardware, register, then run the work loop until stop(). */
import { type Clock, type Executor, GpuxError, type Logger, type Random, systemClock } from '@gpux/core';
import type { NodeAdvertisementInput } from '@gpux/protocol';
import { tlsFetchFromFiles } from '@gpux/protocol/tls-fetch';
import { buildAdvertisement, simulatedGpus } from './advertisement.js';
import { type AgentConfig, coordinatorUrlsOf } from './config.js';
import { CoordinatorClient } from './coordinator-client.js';
import { CoordinatorTrust } from './coordinator-trust.js';
import { type DetectOptions, detectHardware, detectHost } from './detect/index.js';
import { secureNodeDataDir } from './data-dir-modes.js';
import { createExecutor } from './executors/index.js';
import { loadOrCreateIdentity, type NodeIdentity } from './identity.js';
import { createLogger } from './logger.js';
import { systemRandom } from './loop/backoff.js';
import { NodeAgent, type RunningAgent } from './loop/node-agent.js';

export interface StartAgentOptions {
  /** Default: built from config.executor (docker: the engine must be reachable; process: requires config.allowUnsafeProcess). */
  executor?: Executor;
  clock?: Clock;
  random?: Random;
  logger?: Logger;
  /** Default: loaded from (or created in) config.dataDir. */
  identity?: NodeIdentity;
  /** Default: detected (simulated nodes: host only, with config.simulatedGpus fake GPUs). */
  advertisement?: NodeAdvertisementInput;
  detect?: DetectOptions;
  /** Default: the global fetch, or one trusting config.caFile and checking config.coordinatorCertSha256. */
  fetch?: typeof fetch;
  /** Aborts the first registration while the coordinator is still unreachable. */
  signal?: AbortSignal;
}

export async function startAgent(config: AgentConfig, opts: StartAgentOptions = {}): Promise<RunningAgent> {
  const clock = opts.clock ?? systemClock;
  const identity = opts.identity ?? (await loadOrCreateIdentity(config.dataDir));
  const logger = (opts.logger ?? createLogger(config.logLevel, {}, { format: config.logFormat })).child({ nodeId: identity.nodeId });
  await secureNodeDataDir(config.dataDir, (message) => logger.warn(message));
  const kind = opts.executor?.kind ?? config.executor;
  const advertisement = opts.advertisement ?? (await advertise(config, kind, identity, opts.detect, logger));
  const client = new CoordinatorClient({
    baseUrl: coordinatorUrlsOf(config), // several: failover between replicas
    identity,
    fetch: opts.fetch ?? transportFetch(config),
    insecure: config.insecure === true,
    ...(config.enrollmentToken ? { enrollmentToken: config.enrollmentToken } : {}),
  });
  const trust = await CoordinatorTrust.open({
    dataDir: config.dataDir,
    coordinatorUrl: coordinatorUrlsOf(config).join(', '),
    coordinatorKey: config.coordinatorKey,
    enrollmentToken: config.enrollmentToken,
    clock,
    logger,
    fetchIdentity: () => client.identity(),
  });
  const executor = opts.executor ?? (await createExecutor(config, { clock, nodeId: identity.nodeId, gpus: advertisement.gpus, logger }));
  const agent = new NodeAgent({
    nodeId: identity.nodeId,
    client,
    trust,
    executor,
    advertisement,
    clock,
    random: opts.random ?? systemRandom,
    logger,
    pollWaitMs: config.pollWaitMs,
    gracefulTimeoutMs: config.gracefulTimeoutMs,
    maxLogBytes: config.maxLogBytes,
    allowNetwork: config.allowNetwork,
    challenge: { setting: config.challengeRunner ?? 'auto', python: config.challengePython, image: config.challengeImage },
  });
  await agent.registerFirst(opts.signal);
  agent.startLoops();
  logger.info({ executor: executor.kind, gpus: advertisement.gpus.length }, 'node agent running');
  return agent;
}

/** A private CA (--ca-file) and certificate pins (--coordinator-cert-sha256) for the coordinator's TLS; the global fetch otherwise. */
function transportFetch(config: AgentConfig): typeof fetch | undefined {
  if (config.caFile === undefined && config.coordinatorCertSha256 === undefined) return undefined;
  try {
    return tlsFetchFromFiles({ caFile: config.caFile, pins: config.coordinatorCertSha256, source: '--ca-file / GPUX_CA_FILE' });
  } catch (e) {
    throw new GpuxError('REQUEST_INVALID', (e as Error).message, { cause: e });
  }
}

async function advertise(config: AgentConfig, kind: Executor['kind'], identity: NodeIdentity, detect: DetectOptions | undefined, logger: Logger): Promise<NodeAdvertisementInput> {
  if (kind === 'simulated') {
    const host = detectHost();
    const gpus = simulatedGpus(config.simulatedGpus, identity.nodeId.slice(2, 10));
    return buildAdvertisement({ ...host, gpus, docker: { available: false, gpuRuntime: 'none' }, problems: [] }, config, kind);
  }
  const hw = await detectHardware({ docker: { socketPath: config.dockerSocket }, ...detect, logger });
  return buildAdvertisement(hw, config, kind);
}
