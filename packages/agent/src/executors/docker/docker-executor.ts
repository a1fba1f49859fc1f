/** DockerExecutor: each attempt in its own isolated container on the local Docker engine (the agent's default executor). */
import { statSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { type Clock, type Execution, type EventSink, type ExecutionRequest, type Executor, type LogSink, systemClock } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import type Docker from 'dockerode';
import { failedOutcome } from '../process-executor.js';
import { DEFAULT_OUTPUT_LIMITS, type OutputLimits } from '../work-dir.js';
import { DockerRun } from './docker-run.js';
import { connectDocker } from './engine.js';
import { type GpuHostConfig, gpuHostConfig } from './gpu-devices.js';
import type { ImagePolicy } from './image-policy.js';
import { type ReconcileReport, reconcileNode } from './reconcile.js';

export interface DockerExecutorOptions {
  /** Labels every container with it, so reconcile() removes only this node's leftovers. */
  nodeId: string;
  /** Parent dir of the per-attempt work dirs (bind-mounted into the containers). */
  workRoot: string;
  /** Default: a client of socketPath. */
  docker?: Docker;
  /** Default /var/run/docker.sock. */
  socketPath?: string;
  /** The node's GPUs: an attempt's gpuIndices are looked up here (vendor, uuid). Default []. */
  gpus?: GpuDevice[];
  /** Jobs that ask for a network (spec network: true) get one only when this is true. Default false. */
  allowNetwork?: boolean;
  imagePolicy?: ImagePolicy;
  /** Default 4096. */
  pidsLimit?: number;
  /** "uid:gid" of the job. Default 65534:65534 (nobody) when the agent is root, else the agent's own uid:gid. */
  user?: string;
  /** Between SIGTERM and SIGKILL on timeout or stop (whole seconds for the engine). Default 5000 ms. */
  killGraceMs?: number;
  limits?: Partial<OutputLimits>;
  /** Cap of the engine's log file per container. Default 10 MiB. */
  maxLogBytes?: number;
  /** Size of the tmpfs at /tmp. Default 1024 MiB (counted against the memory limit). */
  tmpSizeMb?: number;
  /** Size of /dev/shm (PyTorch data loaders need more than the engine's 64 MiB). Default 1024 MiB. */
  shmSizeMb?: number;
  /** The device part of the container config; replaceable where no GPU exists (tests). Default gpuHostConfig. */
  gpuHostConfig?: (assigned: GpuDevice[]) => GpuHostConfig;
  hostCpus?: number;
  /** Memory of the host, bytes: no container gets more. Default os.totalmem(). */
  hostMemoryBytes?: number;
  /** CPU limit of a job whose spec sets no cpuCores. Default 2 (capped at hostCpus). */
  defaultCpus?: number;
  /** Memory limit of a job whose spec sets no memoryGb, bytes. Default 4 GiB (capped at hostMemoryBytes). */
  defaultMemoryBytes?: number;
  /** Quota of the scratch dir (/gpux/scratch, on the host's disk). Default 10 GiB. The outputs quota is limits.totalBytes. */
  scratchBytes?: number;
  /** Most files, dirs and links in scratch (inodes, and the cost of measuring it). Default 200000. */
  scratchMaxEntries?: number;
  /** Most files, dirs and links in outputs. Default 100000 (the result still carries at most limits.maxFiles files). */
  outputsMaxEntries?: number;
  /** How often scratch and outputs are measured while the job runs (a job can pass a quota by what it writes in this time). Default 250 ms. */
  quotaCheckMs?: number;
  /** Encrypted jobs (issue 13): the host tmpfs their decrypted inputs go to (bind-mounted read-only). Default /dev/shm. */
  e2eInputsDir?: string;
  /** At most one image pull progress line per this many ms in the job's log. Default 2000. */
  pullProgressIntervalMs?: number;
  /** A pull that takes longer fails the attempt (it does not count against the job's own timeout). Default 30 min. */
  pullTimeoutMs?: number;
  clock?: Clock;
}

export type ResolvedDockerOptions = Required<Omit<DockerExecutorOptions, 'socketPath' | 'limits' | 'imagePolicy'>> & { limits: OutputLimits; imagePolicy: ImagePolicy };

export class DockerExecutor implements Executor {
  readonly kind = 'docker' as const;
  private readonly o: ResolvedDockerOptions;
  /** Containers of attempts still running: reconcile() leaves them alone. */
  private readonly live = new Set<string>();

  constructor(opts: DockerExecutorOptions) {
    const root = process.getuid?.() === 0;
    this.o = {
      nodeId: opts.nodeId,
      workRoot: opts.workRoot,
      docker: opts.docker ?? connectDocker(opts.socketPath),
      gpus: opts.gpus ?? [],
      allowNetwork: opts.allowNetwork ?? false,
      imagePolicy: opts.imagePolicy ?? { allow: [], deny: [] },
      pidsLimit: opts.pidsLimit ?? 4096,
      user: opts.user ?? (root || !process.getuid ? '65534:65534' : `${process.getuid()}:${process.getgid?.() ?? process.getuid()}`),
      killGraceMs: opts.killGraceMs ?? 5000,
      limits: { ...DEFAULT_OUTPUT_LIMITS, ...opts.limits },
      maxLogBytes: opts.maxLogBytes ?? 10 * 1024 * 1024,
      tmpSizeMb: opts.tmpSizeMb ?? 1024,
      shmSizeMb: opts.shmSizeMb ?? 1024,
      gpuHostConfig: opts.gpuHostConfig ?? ((assigned) => gpuHostConfig(assigned, { deviceGid })),
      hostCpus: opts.hostCpus ?? availableParallelism(),
      hostMemoryBytes: opts.hostMemoryBytes ?? totalmem(),
      defaultCpus: opts.defaultCpus ?? 2,
      defaultMemoryBytes: opts.defaultMemoryBytes ?? 4 * 1024 ** 3,
      scratchBytes: opts.scratchBytes ?? 10 * 1024 ** 3,
      scratchMaxEntries: opts.scratchMaxEntries ?? 200_000,
      outputsMaxEntries: opts.outputsMaxEntries ?? 100_000,
      quotaCheckMs: opts.quotaCheckMs ?? 250,
      pullProgressIntervalMs: opts.pullProgressIntervalMs ?? 2000,
      pullTimeoutMs: opts.pullTimeoutMs ?? 30 * 60_000,
      e2eInputsDir: opts.e2eInputsDir ?? '/dev/shm',
      clock: opts.clock ?? systemClock,
    };
  }

  get docker(): Docker {
    return this.o.docker;
  }

  async start(req: ExecutionRequest, log: LogSink, events?: EventSink): Promise<Execution> {
    const assigned: GpuDevice[] = [];
    for (const index of req.gpuIndices) {
      const gpu = this.o.gpus.find((g) => g.index === index);
      if (!gpu) return finished(failedOutcome(`executor failed: GPU ${index} is not on this node (it has ${this.o.gpus.map((g) => g.index).join(', ') || 'none'})`, 0));
      assigned.push(gpu);
    }
    const hooks = { onContainer: (id: string) => this.live.add(id), onEnd: (id: string) => this.live.delete(id) };
    return new DockerRun(req, assigned, log, this.o, hooks, events);
  }

  /** Removes this node's managed containers and volumes that no running attempt owns. */
  reconcile(): Promise<ReconcileReport> {
    return reconcileNode(this.o.docker, this.o.nodeId, this.live);
  }
}

function deviceGid(path: string): number | undefined {
  try {
    return statSync(path).gid;
  } catch {
    return undefined;
  }
}

function finished(outcome: Awaited<Execution['done']>): Execution {
  return { done: Promise.resolve(outcome), stop: async () => {} };
}
