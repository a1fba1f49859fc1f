/** createExecutor: the executor the config names, checked and cleaned up before the node takes work. */
import { chmod, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Clock, type Executor, GpuxError, type Logger } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import type { AgentConfig } from '../config.js';
import { DockerExecutor } from './docker/docker-executor.js';
import { checkEngine, gpuSupportProblem } from './docker/engine.js';
import { ProcessExecutor } from './process-executor.js';
import { SimulatedExecutor } from './simulated-executor.js';

export interface CreateExecutorDeps {
  clock: Clock;
  nodeId: string;
  /** The node's GPUs, as advertised. */
  gpus: GpuDevice[];
  logger: Logger;
}

export async function createExecutor(config: AgentConfig, deps: CreateExecutorDeps): Promise<Executor> {
  if (config.executor === 'simulated') return new SimulatedExecutor(deps.clock);
  const workRoot = join(config.dataDir, 'work');
  const limits = { totalBytes: config.maxOutputBytes };
  if (config.executor === 'process') {
    const executor = new ProcessExecutor({ allowUnsafe: config.allowUnsafeProcess, workRoot, clock: deps.clock, limits });
    await clearWorkRoot(workRoot);
    return executor;
  }

  const engine = await checkEngine(config.dockerSocket);
  const problem = gpuSupportProblem(deps.gpus, { runtimes: engine.runtimes });
  if (problem) throw new GpuxError('UNAVAILABLE', `the docker executor cannot give this node's GPUs to jobs: ${problem}`);
  const executor = new DockerExecutor({
    nodeId: deps.nodeId,
    workRoot,
    socketPath: config.dockerSocket,
    gpus: deps.gpus,
    allowNetwork: config.allowNetwork,
    imagePolicy: { allow: config.imageAllow, deny: config.imageDeny },
    pidsLimit: config.pidsLimit,
    limits,
    maxLogBytes: config.maxLogBytes,
    scratchBytes: config.maxScratchBytes,
    defaultCpus: config.defaultCpus,
    defaultMemoryBytes: Math.round(config.defaultMemoryGb * 1024 ** 3),
    clock: deps.clock,
  });
  // Containers and work dirs left by a crash belong to attempts the coordinator has long given up on.
  const report = await executor.reconcile();
  await clearWorkRoot(workRoot);
  if (report.containers.length > 0 || report.volumes.length > 0) {
    deps.logger.info(
      { containers: report.containers.map((c) => `${c.name} (${c.attemptId ?? 'no attempt'}, ${c.state})`), volumes: report.volumes },
      `removed ${report.containers.length} leftover container(s) and ${report.volumes.length} volume(s) of this node`,
    );
  }
  for (const failure of report.failures) deps.logger.warn({ failure }, 'could not remove a leftover container or volume');
  deps.logger.info({ engine: engine.version, socket: engine.socketPath }, 'docker executor ready');
  return executor;
}

/** Emptied, and made again 0700 whatever the umask: it holds the attempts' inputs and outputs. */
async function clearWorkRoot(workRoot: string): Promise<void> {
  await rm(workRoot, { recursive: true, force: true });
  await mkdir(workRoot, { recursive: true, mode: 0o700 });
  await chmod(workRoot, 0o700);
}
