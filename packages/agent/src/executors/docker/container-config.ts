/** The container one attempt runs in, isolated by default: built as a plain value so every setting is unit-tested. */
import type { ExecutionRequest } from '@gpux/core';
import type Docker from 'dockerode';
import type { GpuHostConfig } from './gpu-devices.js';
import { containerName, managedLabels } from './labels.js';

/** Where the attempt's dirs appear inside the container. */
export const CONTAINER_DIRS = { inputs: '/gpux/inputs', outputs: '/gpux/outputs', scratch: '/gpux/scratch', checkpoints: '/gpux/checkpoints' } as const;

export interface ContainerPlan {
  req: ExecutionRequest;
  /** The image to run, pinned: its id (sha256:…), so a tag moved meanwhile cannot change what runs. */
  imageId: string;
  nodeId: string;
  nameSuffix: string;
  /** Host paths bind-mounted at CONTAINER_DIRS (checkpoints: only for a job with `spec.checkpoint`). */
  dirs: { inputs: string; outputs: string; scratch: string; checkpoints?: string | undefined };
  gpu: GpuHostConfig;
  gpuEnv: Record<string, string>;
  /** "uid:gid"; numeric, so it works whether or not the image's /etc/passwd knows it. */
  user: string;
  /** A network (the default bridge) only when the job asked and the node allows it. */
  network: boolean;
  pidsLimit: number;
  /** CPUs of the host: the engine refuses a CPU limit above it. */
  hostCpus: number;
  /** Memory of the host, bytes: no limit is set above it. */
  hostMemoryBytes: number;
  /** The CPU limit of a job whose spec sets no cpuCores (capped at hostCpus). */
  defaultCpus: number;
  /** The memory limit of a job whose spec sets no memoryGb, bytes (capped at hostMemoryBytes). */
  defaultMemoryBytes: number;
  tmpSizeMb: number;
  shmSizeMb: number;
  /** Cap of the engine's own log file of the container (the agent reads the output live, not from that file). */
  logFileBytes: number;
}

const MIN_MEMORY = 6 * 1024 * 1024; // the engine's minimum

export interface ContainerLimits {
  memoryBytes: number;
  nanoCpus: number;
  /** True where the spec was silent and the node's default applies. */
  memoryDefault: boolean;
  cpusDefault: boolean;
}

/** Every container gets a memory and a CPU limit: the spec's, else the node's default; never more than the host has. */
export function containerLimits(plan: Pick<ContainerPlan, 'req' | 'hostCpus' | 'hostMemoryBytes' | 'defaultCpus' | 'defaultMemoryBytes'>): ContainerLimits {
  const { memoryGb, cpuCores } = plan.req.spec.resources;
  const memory = memoryGb !== undefined ? Math.round(memoryGb * 1024 ** 3) : plan.defaultMemoryBytes;
  const cpus = cpuCores ?? plan.defaultCpus;
  return {
    memoryBytes: Math.max(MIN_MEMORY, Math.min(memory, plan.hostMemoryBytes)),
    nanoCpus: Math.round(Math.max(0.01, Math.min(cpus, plan.hostCpus)) * 1e9),
    memoryDefault: memoryGb === undefined,
    cpusDefault: cpuCores === undefined,
  };
}

export function containerEnv(plan: Pick<ContainerPlan, 'req' | 'gpuEnv' | 'dirs'>): Record<string, string> {
  const { req } = plan;
  return {
    HOME: CONTAINER_DIRS.scratch,
    ...req.spec.env,
    GPUX_INPUTS: CONTAINER_DIRS.inputs,
    GPUX_OUTPUTS: CONTAINER_DIRS.outputs,
    GPUX_SCRATCH: CONTAINER_DIRS.scratch,
    GPUX_JOB_ID: req.jobId,
    GPUX_ATTEMPT_ID: req.attemptId,
    ...(plan.dirs.checkpoints ? { GPUX_CHECKPOINTS: CONTAINER_DIRS.checkpoints } : {}),
    ...plan.gpuEnv,
  };
}

export function buildContainerConfig(plan: ContainerPlan): Docker.ContainerCreateOptions {
  const { spec } = plan.req;
  const host: Docker.HostConfig = {
    NetworkMode: plan.network ? 'bridge' : 'none',
    Privileged: false,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges:true'],
    ReadonlyRootfs: true,
    PidsLimit: plan.pidsLimit,
    IpcMode: 'private',
    ShmSize: plan.shmSizeMb * 1024 * 1024,
    Tmpfs: { '/tmp': `rw,exec,nosuid,nodev,size=${plan.tmpSizeMb}m,mode=1777` },
    Mounts: [
      { Type: 'bind', Source: plan.dirs.inputs, Target: CONTAINER_DIRS.inputs, ReadOnly: true },
      { Type: 'bind', Source: plan.dirs.outputs, Target: CONTAINER_DIRS.outputs, ReadOnly: false },
      { Type: 'bind', Source: plan.dirs.scratch, Target: CONTAINER_DIRS.scratch, ReadOnly: false },
      ...(plan.dirs.checkpoints ? [{ Type: 'bind' as const, Source: plan.dirs.checkpoints, Target: CONTAINER_DIRS.checkpoints, ReadOnly: false }] : []),
    ],
    LogConfig: { Type: 'json-file', Config: { 'max-size': `${Math.max(1, Math.ceil(plan.logFileBytes / 1024))}k`, 'max-file': '1' } },
    RestartPolicy: { Name: 'no' },
    AutoRemove: false, // the agent inspects the exit (OOM, code) before it removes the container
    ...plan.gpu,
  };
  const limits = containerLimits(plan);
  host.Memory = limits.memoryBytes;
  host.MemorySwap = limits.memoryBytes; // no swap on top: the limit is the limit
  host.NanoCpus = limits.nanoCpus;

  const env = containerEnv(plan);
  return {
    name: containerName(plan.req.attemptId, plan.nameSuffix),
    Image: plan.imageId,
    Entrypoint: spec.command,
    Cmd: spec.args,
    Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
    WorkingDir: CONTAINER_DIRS.scratch,
    User: plan.user,
    Labels: managedLabels(plan.nodeId, plan.req.jobId, plan.req.attemptId),
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: host,
  };
}
