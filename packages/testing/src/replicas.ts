/**
 * Coordinator replicas as processes (issue 14): several `gpux coordinator start` on one PostgreSQL database,
 * sharing one coordinator key file, each on its own port, data dir and GPUX_HOME.
 */
import { join } from 'node:path';
import { freePort, type GpuxProcess, spawnGpux, waitFor } from './processes.js';

export interface Replicas {
  /** Each replica's base URL (http://127.0.0.1:port), in start order. */
  urls: string[];
  procs: GpuxProcess[];
  /** The coordinator key file they share (GPUX_COORDINATOR_KEY_FILE). */
  keyFile: string;
  /** Stop every replica still running (SIGTERM, then SIGKILL after the grace). */
  stopAll(graceMs?: number): Promise<void>;
}

export interface ReplicaStatus {
  id: string;
  leader: boolean;
}

/**
 * Start `count` replicas under `dir`. `dbUrl` is the database URL of each (a function when some reach it another
 * way, e.g. through a TcpProxy). The first starts alone and creates the key file; the others start once it is ready.
 */
export async function startReplicas(o: { count: number; dbUrl: string | ((i: number) => string); dir: string; env: NodeJS.ProcessEnv; readyMs?: number }): Promise<Replicas> {
  const ports: number[] = [];
  for (let i = 0; i < o.count; i++) ports.push(await freePort());
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const keyFile = join(o.dir, 'coordinator-key.json');
  const procs: GpuxProcess[] = [];
  const start = (i: number) => {
    const db = typeof o.dbUrl === 'string' ? o.dbUrl : o.dbUrl(i);
    const p = spawnGpux(['coordinator', 'start', '--db', db, '--port', String(ports[i]), '--data-dir', join(o.dir, `coord-${i}`)], {
      ...o.env,
      GPUX_HOME: join(o.dir, `home-c${i}`),
      GPUX_COORDINATOR_KEY_FILE: keyFile,
    });
    procs.push(p);
    return waitForReady(urls[i] as string, p, o.readyMs);
  };
  const replicas: Replicas = {
    urls,
    procs,
    keyFile,
    async stopAll(graceMs = 5_000) {
      await Promise.all(procs.map((p) => p.stop('SIGTERM', graceMs)));
    },
  };
  try {
    await start(0);
    await Promise.all(urls.slice(1).map((_, i) => start(i + 1)));
  } catch (err) {
    await replicas.stopAll(1_000);
    throw err;
  }
  return replicas;
}

async function waitForReady(url: string, p: GpuxProcess, timeoutMs = 30_000): Promise<void> {
  await waitFor(
    `${url} ready`,
    async () => {
      if (p.child.exitCode !== null) throw new Error(`the replica at ${url} exited (${p.child.exitCode}): ${p.output().slice(-2000)}`);
      return (await fetch(`${url}/readyz`)).ok ? true : undefined;
    },
    timeoutMs,
  );
}

/** GET /healthz's `replica` of the coordinator at `url`, or null when it does not answer. */
export async function replicaStatus(url: string, timeoutMs = 2_000): Promise<ReplicaStatus | null> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) return null;
    const body = (await res.json()) as { replica?: ReplicaStatus };
    return body.replica ?? null;
  } catch {
    return null;
  }
}
