/**
 * The benchmark's coordinator: quiet logs, a free port on 127.0.0.1, the market on or off (set explicitly,
 * never from the environment), otherwise the defaults. Optionally SQLite's synchronous mode or PostgreSQL's
 * pool size, and diagnostics written as JSON on close.
 */
import { writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Store } from '@gpux/core';
import { loadCoordinatorConfig, openPostgresStore, openSqliteStore, parseDbUrl, type QueryObserver, startCoordinator } from '@gpux/coordinator';

export interface BenchCoordinatorSettings {
  db: string;
  dataDir: string;
  /** The market: escrow at submission, placement only on staked nodes of a provider, settlement (config `market`). */
  market: boolean;
  /** SQLite only: null keeps the coordinator's default (FULL). */
  sqliteSynchronous: 'FULL' | 'NORMAL' | null;
  /** PostgreSQL only: the store's connection pool size; null keeps the coordinator's default (10). */
  pgPool: number | null;
  /** The coordinator's key file: replicas on one database share one (config `coordinatorKeyFile`); null: `<dataDir>/coordinator-key.json`. */
  coordinatorKeyFile: string | null;
  /** Count and time Store calls, watch the event loop, and write CoordinatorDiagnostics here as JSON on close; null: none. */
  diagnosticsFile: string | null;
}

/** A store with the benchmark's settings and statement observer; null: let the coordinator open its own. */
async function openBenchStore(s: BenchCoordinatorSettings, onQuery: QueryObserver | null): Promise<Store | null> {
  const target = parseDbUrl(s.db);
  const observed = onQuery ? { onQuery } : {};
  if (target.dialect === 'sqlite' && (s.sqliteSynchronous !== null || onQuery)) return openSqliteStore(target.path, { ...(s.sqliteSynchronous !== null && { synchronous: s.sqliteSynchronous }), ...observed });
  if (target.dialect === 'postgres' && (s.pgPool !== null || onQuery)) return openPostgresStore(target.url, { ...(s.pgPool !== null && { max: s.pgPool }), ...observed });
  return null;
}

/** Calls of one Store method: how many, and their summed wall time (ms, queueing for a connection included). */
export interface StoreCalls {
  calls: number;
  totalMs: number;
}

/** What the coordinator process saw of itself during its life (startup included). */
export interface CoordinatorDiagnostics {
  storeCalls: Record<string, StoreCalls>;
  /** Event-loop delay, ms: how long a ready callback (a query result, a request) waited for the loop. */
  eventLoopDelayMs: { p50: number; p99: number; max: number };
  /** HTTP requests served, by method and route (the coordinator's own metrics, read just before it closes). */
  httpRequests?: Record<string, number>;
  /**
   * SQL statements run after the coordinator was up (migrations left out), by text (SQLite: time executing;
   * PostgreSQL: round trip); see sqlKey.
   */
  sql?: Record<string, StoreCalls>;
}

/** A statement's text as a tally key: lists of placeholders (`in (…)`, multi-row values, `case … when`) folded, so their lengths share one line. */
export function sqlKey(sql: string): string {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/\$\d+/g, '?')
    .replace(/\((\?, )+\?\)(, \((\?, )+\?\))*/g, '(…)')
    .replace(/( when \? then \?)+/g, ' when … then …')
    .slice(0, 200);
}

/** Requests served by method and route, summed over statuses, from the Prometheus text of GET /metrics. */
async function httpRequestCounts(url: string, token: string | null): Promise<Record<string, number>> {
  if (token === null) return {};
  const res = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) return {};
  const out: Record<string, number> = {};
  for (const m of (await res.text()).matchAll(/^gpux_http_request_duration_seconds_count\{method="(\w+)",route="([^"]*)",status="\d+"\} (\d+)$/gm)) {
    const k = `${m[1]} ${m[2]}`;
    out[k] = (out[k] ?? 0) + Number(m[3]);
  }
  return out;
}

/** A Store that counts its calls and times them, by method name. */
function countingStore(store: Store, counts: Record<string, StoreCalls>): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || typeof prop !== 'string') return v;
      // Synchronous methods stay synchronous: a fenced view of the store (PostgreSQL leadership) must not become a promise.
      return (...args: unknown[]) => {
        const c = counts[prop] ?? { calls: 0, totalMs: 0 };
        counts[prop] = c;
        c.calls++;
        const t0 = performance.now();
        const out = v.apply(target, args);
        if (!(out instanceof Promise)) {
          c.totalMs += performance.now() - t0;
          return out;
        }
        return out.finally(() => {
          c.totalMs += performance.now() - t0;
        });
      };
    },
  });
}

export async function startBenchCoordinator(s: BenchCoordinatorSettings) {
  // An empty environment: GPUX_MARKET and the rest of the shell's GPUX_* never leak into a bench run.
  // One provider registers every bench agent at once: its registration budget is lifted. The proof-of-hardware
  // challenge is off: the agents' GPUs are simulated (no challenge could pass), and it is a cost per node, not per job.
  const config = loadCoordinatorConfig(
    {},
    {
      db: s.db,
      dataDir: s.dataDir,
      port: 0,
      host: '127.0.0.1',
      logLevel: 'warn',
      market: s.market,
      registerRatePerMin: 1_000_000,
      challenge: 'off',
      ...(s.coordinatorKeyFile === null ? {} : { coordinatorKeyFile: s.coordinatorKeyFile }),
    },
  );
  const sql: Record<string, StoreCalls> = {};
  let counting = false;
  const onQuery: QueryObserver = (text, ms) => {
    if (!counting) return;
    const k = sqlKey(text);
    const c = sql[k] ?? { calls: 0, totalMs: 0 };
    sql[k] = c;
    c.calls++;
    c.totalMs += ms;
  };
  const raw = await openBenchStore(s, s.diagnosticsFile === null ? null : onQuery);
  if (raw === null) return startCoordinator(config);
  // The coordinator does not close a store it was handed: this wrapper does.
  const counts: Record<string, StoreCalls> = {};
  const c = await startCoordinator(config, { store: s.diagnosticsFile === null ? raw : countingStore(raw, counts) });
  counting = true;
  const file = s.diagnosticsFile;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const close = async () => {
    loop.disable();
    const httpRequests = file === null ? {} : await httpRequestCounts(c.url, c.bootstrapOperatorToken).catch(() => ({}));
    await c.close();
    await raw.close();
    const ms = (ns: number) => Math.round(ns / 1e4) / 100;
    const diag: CoordinatorDiagnostics = { storeCalls: counts, eventLoopDelayMs: { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max) }, httpRequests, sql };
    if (file !== null) writeFileSync(file, JSON.stringify(diag));
  };
  return { ...c, close };
}
