/** Connecting to the Docker engine, and the checks at node start: engine reachable, GPU support present for the GPUs found. */
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { GpuxError } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import Docker from 'dockerode';

export interface EngineInfo {
  version: string;
  apiVersion: string;
  socketPath: string;
  runtimes: string[];
}

/** A client of the engine at `socketPath`; default: DOCKER_HOST when it is a unix:// URL, else /var/run/docker.sock. */
export function connectDocker(socketPath = defaultSocketPath()): Docker {
  return new Docker({ socketPath });
}

export function defaultSocketPath(env: Record<string, string | undefined> = process.env): string {
  return env.DOCKER_HOST?.startsWith('unix://') ? env.DOCKER_HOST.slice('unix://'.length) : '/var/run/docker.sock';
}

/** Pings the engine (through its own client with a request timeout); an unreachable one is an UNAVAILABLE error that says what to do. */
export async function checkEngine(socketPath: string, timeoutMs = 10_000): Promise<EngineInfo> {
  const probe = new Docker({ socketPath, timeout: timeoutMs });
  try {
    await probe.ping();
    const [version, info] = await Promise.all([probe.version(), probe.info() as Promise<{ Runtimes?: Record<string, unknown> }>]);
    return { version: version.Version, apiVersion: version.ApiVersion, socketPath, runtimes: Object.keys(info.Runtimes ?? {}).sort() };
  } catch (e) {
    throw new GpuxError('UNAVAILABLE', engineUnreachableMessage(socketPath, (e as Error).message), { cause: e });
  }
}

export function engineUnreachableMessage(socketPath: string, why: string): string {
  return (
    `the docker executor needs a Docker engine, but none is reachable at ${socketPath} (${why}). ` +
    'Start Docker (e.g. `sudo systemctl start docker`), make sure this user may use its socket (the docker group), ' +
    'or point DOCKER_HOST=unix:///path/to/docker.sock at it. Only for jobs you trust: --executor process --allow-unsafe-process'
  );
}

const NVIDIA_HOOKS = ['nvidia-container-runtime-hook', 'nvidia-container-toolkit', 'nvidia-ctk'];

export interface GpuSupportProbe {
  /** Runtimes the engine lists (docker info). */
  runtimes: string[];
  /** Whether a program is on PATH (or in /usr/bin); injectable for tests. */
  hasProgram?(name: string): boolean;
  /** Whether a device node exists; injectable for tests. */
  hasDevice?(path: string): boolean;
}

/**
 * Why the engine cannot give the node's GPUs to containers, or null. NVIDIA: the engine needs the NVIDIA container
 * toolkit (a registered "nvidia" runtime, or its hook on PATH for device requests). AMD: the amdgpu driver's /dev/kfd.
 */
export function gpuSupportProblem(gpus: GpuDevice[], probe: GpuSupportProbe): string | null {
  const hasProgram = probe.hasProgram ?? onPath;
  const hasDevice = probe.hasDevice ?? existsSync;
  if (gpus.some((g) => g.vendor === 'nvidia') && !probe.runtimes.includes('nvidia') && !NVIDIA_HOOKS.some(hasProgram)) {
    return (
      'NVIDIA GPUs found, but the NVIDIA container toolkit is missing: containers could not use them. Install ' +
      'nvidia-container-toolkit, run `sudo nvidia-ctk runtime configure --runtime=docker` and restart Docker'
    );
  }
  if (gpus.some((g) => g.vendor === 'amd') && !hasDevice('/dev/kfd')) {
    return 'AMD GPUs found, but /dev/kfd is missing: the amdgpu kernel driver (ROCm) is not loaded, so containers could not use them';
  }
  return null;
}

function onPath(name: string): boolean {
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  return [...dirs, '/usr/bin', '/usr/local/bin'].some((d) => existsSync(join(d, name)));
}
