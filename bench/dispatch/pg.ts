/**
 * The PostgreSQL cluster of the run: GPUX_BENCH_PG_URL if set, else a throwaway one from @gpux/testing.
 * Each user gets its own fresh database on it, dropped at the end.
 */
import { readdirSync } from 'node:fs';
import pg from 'pg';
import { parentPid, processCpuMs, processTreeCpuMs } from './cpu.js';
import { type WaitWatch, watchWaits } from './pg-waits.js';

export interface BenchPg {
  /** Where the cluster came from, for the report. */
  source: string;
  /** A new empty database on the cluster; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /**
   * CPU ms used so far by the server processes now connected to the database of `dbUrl` (Linux /proc; null
   * where unreadable). Backends that exited are not counted, so take it while the pools are open.
   */
  backendCpuMs(dbUrl: string): Promise<number | null>;
  /**
   * CPU ms of the whole PostgreSQL cluster: the postmaster, the backends it has reaped and every live child.
   * Monotonic, unlike backendCpuMs, which loses the time of a backend that exits (a pool closing idle connections).
   */
  clusterCpuMs(): Promise<number | null>;
  /** Sample what the database's connections are doing every `everyMs` until stop() (pg-waits.ts). */
  watchWaits(dbUrl: string, everyMs?: number): WaitWatch;
  stop(): Promise<void>;
}

function withDatabase(url: string, db: string): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

/**
 * `via`: how every client of the run (gpux and graphile-worker alike) reaches a throwaway cluster: its Unix socket
 * (the default; about half the client CPU per query of loopback TCP) or TCP. GPUX_BENCH_PG_URL is used as given.
 */
export async function openBenchPg(env: NodeJS.ProcessEnv, via: 'socket' | 'tcp' = 'socket'): Promise<BenchPg> {
  let url = env.GPUX_BENCH_PG_URL;
  let source = 'GPUX_BENCH_PG_URL';
  let stopCluster = async () => {};
  let clientUrl = (u: string) => u;
  if (!url) {
    // Imported lazily so the SQLite-only run does not need the testing package.
    const testing = (await import('@gpux/testing')) as { startPostgres(): Promise<{ url: string; viaSocket?(url: string): string; stop(): Promise<void> }> };
    const cluster = await testing.startPostgres();
    url = cluster.url;
    const socket = via === 'socket' ? cluster.viaSocket?.bind(cluster) : undefined;
    source = `startPostgres (@gpux/testing), clients over ${socket ? 'its Unix socket' : 'TCP'}`;
    if (socket) clientUrl = socket;
    stopCluster = () => cluster.stop();
  }
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const created: string[] = [];
  return {
    source,
    async createDatabase(name) {
      const db = `${name}_${process.pid}_${created.length}`;
      await admin.query(`DROP DATABASE IF EXISTS ${db}`);
      await admin.query(`CREATE DATABASE ${db}`);
      created.push(db);
      return clientUrl(withDatabase(url, db));
    },
    async backendCpuMs(dbUrl) {
      const db = new URL(dbUrl).pathname.slice(1);
      const res = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [db]);
      let sum = 0;
      for (const { pid } of res.rows) {
        const ms = processCpuMs(pid);
        if (ms === null) return null;
        sum += ms;
      }
      return sum;
    },
    async clusterCpuMs() {
      const me = (await admin.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      const postmaster = me === undefined ? null : parentPid(me);
      if (postmaster === null) return null;
      let sum = processTreeCpuMs(postmaster);
      if (sum === null) return null;
      for (const entry of readdirSync('/proc')) {
        const pid = Number(entry);
        if (Number.isInteger(pid) && parentPid(pid) === postmaster) sum += processCpuMs(pid) ?? 0;
      }
      return sum;
    },
    watchWaits(dbUrl, everyMs = 100) {
      return watchWaits(admin, new URL(dbUrl).pathname.slice(1), everyMs);
    },
    async stop() {
      for (const db of created) await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
      await admin.end();
      await stopCluster();
    },
  };
}
