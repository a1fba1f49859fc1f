/** Prometheus metrics on a registry of the coordinator's own (several coordinators may share a process). */
import { JOB_STATES } from '@gpux/protocol';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Store } from '@gpux/core';

/** countJobsByState is a grouped count over the jobs table: refresh it at most this often. */
const JOB_GAUGE_REFRESH_MS = 3000;

export interface Metrics {
  registry: Registry;
  placements: Counter;
  leaseExpiries: Counter;
  attemptsFinished: Counter<'outcome'>;
  schedulePasses: Counter;
  httpDuration: Histogram<'method' | 'route' | 'status'>;
}

export function createMetrics(store: Store): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'gpux_process_' });
  let last = 0;
  let cached: Record<string, number> | undefined;
  new Gauge({
    name: 'gpux_jobs',
    help: 'Jobs by state (refreshed at most every few seconds)',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const now = Date.now();
      if (!cached || now - last >= JOB_GAUGE_REFRESH_MS) {
        cached = await store.countJobsByState();
        last = now;
      }
      for (const s of JOB_STATES) this.set({ state: s }, cached[s] ?? 0);
    },
  });
  return {
    registry,
    placements: new Counter({ name: 'gpux_placements_total', help: 'Attempts written by the scheduling pass', registers: [registry] }),
    leaseExpiries: new Counter({ name: 'gpux_lease_expiries_total', help: 'Attempts lost because their lease expired', registers: [registry] }),
    attemptsFinished: new Counter({
      name: 'gpux_attempts_finished_total',
      help: 'Attempts ended, by outcome (succeeded, failed, cancelled, lost)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    schedulePasses: new Counter({ name: 'gpux_schedule_passes_total', help: 'Scheduling passes run', registers: [registry] }),
    httpDuration: new Histogram({
      name: 'gpux_http_request_duration_seconds',
      help: 'HTTP request duration by route and status (long-polls included)',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 30, 60],
      registers: [registry],
    }),
  };
}
