/** detectHardware: host, GPUs (NVIDIA, AMD) and Docker, with every reason something is missing listed in `problems`. */
import type { Logger } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import { detectAmd } from './amd.js';
import { type DockerProbeOptions, type DockerStatus, probeDocker } from './docker.js';
import { detectHost, type HostInfo } from './host.js';
import { detectNvidia } from './nvidia.js';
import { type CommandRunner, execFileRunner } from './runner.js';

export interface DetectedHardware extends HostInfo {
  gpus: GpuDevice[];
  docker: { available: boolean; version?: string; gpuRuntime: 'nvidia' | 'amd' | 'none'; problem?: string };
  problems: string[];
}

export interface DetectOptions {
  run?: CommandRunner;
  /** Options for the Docker probe, or a replacement for it. */
  docker?: DockerProbeOptions | (() => Promise<DockerStatus>);
  host?: () => HostInfo;
  logger?: Logger;
}

export async function detectHardware(opts: DetectOptions = {}): Promise<DetectedHardware> {
  const run = opts.run ?? execFileRunner();
  const dockerProbe = typeof opts.docker === 'function' ? opts.docker : () => probeDocker(opts.docker as DockerProbeOptions | undefined);
  const [nvidia, amd, docker] = await Promise.all([detectNvidia(run), detectAmd(run), dockerProbe()]);
  const host = (opts.host ?? detectHost)();
  const problems: string[] = [];

  let gpus: GpuDevice[];
  if (nvidia.gpus.length > 0 && amd.gpus.length > 0) {
    gpus = nvidia.gpus;
    problems.push('both NVIDIA and AMD GPUs found; only the NVIDIA GPUs are advertised (mixed hosts are not supported yet)');
  } else gpus = nvidia.gpus.length > 0 ? nvidia.gpus : amd.gpus;
  // "nvidia-smi not found" is expected on an AMD host and the reverse: report it only when no GPU was found at all.
  const found = nvidia.gpus.length + amd.gpus.length > 0;
  for (const p of [...nvidia.problems, ...amd.problems]) if (!found || !isNotFound(p)) problems.push(p);

  let dockerProblem = docker.problem;
  if (docker.available && gpus.some((g) => g.vendor === 'nvidia') && docker.gpuRuntime !== 'nvidia') {
    dockerProblem = 'NVIDIA GPUs found but the NVIDIA container toolkit is not registered with Docker (install nvidia-container-toolkit, then run `nvidia-ctk runtime configure --runtime=docker` and restart Docker)';
  } else if (docker.available && gpus.some((g) => g.vendor === 'amd') && docker.gpuRuntime !== 'amd') {
    dockerProblem = 'AMD GPUs found but /dev/kfd is missing: the amdgpu kernel driver (ROCm) is not loaded, so containers cannot use the GPUs';
  }
  if (dockerProblem) problems.push(dockerProblem);
  for (const p of problems) opts.logger?.warn({ problem: p }, 'hardware detection');

  const dockerPart: DetectedHardware['docker'] = { available: docker.available, gpuRuntime: docker.gpuRuntime };
  if (docker.version) dockerPart.version = docker.version;
  if (dockerProblem) dockerPart.problem = dockerProblem;
  return { ...host, gpus, docker: dockerPart, problems };
}

function isNotFound(problem: string): boolean {
  return /: (\S+ not found(; )?)+$/.test(problem);
}

export { detectAmd, parseAmdSmiStatic, parseRocmSmiJson } from './amd.js';
export { dockerSocketPath, probeDocker, type DockerProbeOptions, type DockerStatus } from './docker.js';
export { detectHost, type HostInfo } from './host.js';
export { detectNvidia, parseNvidiaSmiCsv, type ParsedGpus } from './nvidia.js';
export { type CommandResult, type CommandRunner, execFileRunner } from './runner.js';
