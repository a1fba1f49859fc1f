/** Is a Docker engine reachable, which version, which GPU runtime? Speaks HTTP over the unix socket with node:http. */
import { existsSync } from 'node:fs';
import http from 'node:http';

export interface DockerStatus {
  available: boolean;
  version?: string;
  gpuRuntime: 'nvidia' | 'amd' | 'none';
  problem?: string;
  /** The runtimes the engine lists in /info (e.g. ["io.containerd.runc.v2", "nvidia", "runc"]). */
  runtimes: string[];
}

export interface DockerProbeOptions {
  /** Defaults to DOCKER_HOST when it is a unix:// URL, else /var/run/docker.sock. */
  socketPath?: string;
  env?: Record<string, string | undefined>;
  timeoutMs?: number;
  /** Whether the AMD kernel driver's compute device exists; injectable for tests. */
  hasDevKfd?: () => boolean;
}

export function dockerSocketPath(env: Record<string, string | undefined> = process.env): string | { unsupported: string } {
  const host = env.DOCKER_HOST;
  if (!host) return '/var/run/docker.sock';
  if (host.startsWith('unix://')) return host.slice('unix://'.length);
  return { unsupported: host };
}

export async function probeDocker(opts: DockerProbeOptions = {}): Promise<DockerStatus> {
  const where = opts.socketPath ?? dockerSocketPath(opts.env);
  if (typeof where !== 'string') {
    return { available: false, gpuRuntime: 'none', runtimes: [], problem: `DOCKER_HOST=${where.unsupported} is not a unix socket; only unix sockets are supported` };
  }
  const timeoutMs = opts.timeoutMs ?? 5000;
  try {
    const ping = await getOverSocket(where, '/_ping', timeoutMs);
    if (ping.status !== 200) throw new Error(`/_ping answered HTTP ${ping.status}`);
    const version = JSON.parse((await getOverSocket(where, '/version', timeoutMs)).body) as { Version?: string };
    const info = JSON.parse((await getOverSocket(where, '/info', timeoutMs)).body) as { Runtimes?: Record<string, unknown> };
    const runtimes = Object.keys(info.Runtimes ?? {}).sort();
    const hasKfd = opts.hasDevKfd ?? (() => existsSync('/dev/kfd'));
    const gpuRuntime = runtimes.includes('nvidia') ? 'nvidia' : hasKfd() ? 'amd' : 'none';
    return { available: true, version: version.Version, gpuRuntime, runtimes };
  } catch (e) {
    return { available: false, gpuRuntime: 'none', runtimes: [], problem: `Docker engine not reachable at ${where}: ${(e as Error).message}` };
  }
}

function getOverSocket(socketPath: string, path: string, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path, headers: { host: 'docker' }, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}
