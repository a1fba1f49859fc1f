/** Network totals for the dashboard overview: nodes, GPUs by class (free/busy), jobs by state, placement rate. */
import { JOB_STATES, type GpuClassStats, type JobState, type StatsResponse } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type StatsDeps = Needs<'clock' | 'index' | 'metrics' | 'offlineNodes' | 'startedAt' | 'store'>;

const RATE_WINDOW_MS = 60_000;
/** One placement-counter sample per this many ms is enough to measure a per-minute rate. */
const SAMPLE_EVERY_MS = 5_000;

interface Sample {
  at: number;
  total: number;
}

/**
 * Samples of the placement counter, taken when stats are read. The counter starts at 0 with the process,
 * so (startedAt, 0) is an exact first sample and a young coordinator's rate is measured since its start.
 */
class PlacementRate {
  private samples: Sample[];

  constructor(startedAt: number) {
    this.samples = [{ at: startedAt, total: 0 }];
  }

  observe(now: number, total: number): { perMinute: number; windowMs: number } {
    const last = this.samples[this.samples.length - 1]!;
    if (now - last.at >= SAMPLE_EVERY_MS) this.samples.push({ at: now, total });
    // samples[0] stays the newest sample at least a window old (or the start): the rate's base.
    while (this.samples.length > 1 && this.samples[1]!.at <= now - RATE_WINDOW_MS) this.samples.shift();
    const base = this.samples[0]!;
    const windowMs = Math.max(1, now - base.at);
    // Younger than a window: the count itself is the last minute's; older (sparse reads): the average rate.
    const perMinute = ((total - base.total) * 60_000) / Math.max(windowMs, RATE_WINDOW_MS);
    return { perMinute: Math.round(perMinute * 10) / 10, windowMs };
  }
}

const rates = new WeakMap<object, PlacementRate>();

function gpuStats(rt: StatsDeps): { byClass: GpuClassStats[]; nodes: StatsResponse['nodes'] } {
  const classes = new Map<string, GpuClassStats>();
  const nodes = { total: 0, online: 0, offline: 0, cordoned: 0, simulated: 0 };
  for (const n of rt.index.candidates(undefined)) {
    nodes.total++;
    if (n.simulated) nodes.simulated++;
    if (rt.offlineNodes.has(n.nodeId)) {
      nodes.offline++;
      continue;
    }
    nodes.online++;
    if (!n.schedulable) nodes.cordoned++;
    const seen = new Set<string>();
    for (const g of n.gpus) {
      const c = classes.get(g.model) ?? { class: g.model, vendor: g.vendor, total: 0, busy: 0, free: 0, unavailable: 0, nodes: 0 };
      c.total++;
      if (!n.freeGpus.has(g.index)) c.busy++;
      else if (n.schedulable) c.free++;
      else c.unavailable++;
      if (!seen.has(g.model)) {
        seen.add(g.model);
        c.nodes++;
      }
      classes.set(g.model, c);
    }
  }
  const byClass = [...classes.values()].sort((a, b) => b.total - a.total || a.class.localeCompare(b.class));
  return { byClass, nodes };
}

/** Reads only the in-memory capacity index, one grouped count and a counter: cheap enough to poll. */
export async function networkStats(rt: StatsDeps): Promise<StatsResponse> {
  const now = rt.clock.now();
  const [counts, placed] = await Promise.all([rt.store.countJobsByState(), rt.metrics.placements.get()]);
  const byState = Object.fromEntries(JOB_STATES.map((s) => [s, counts[s] ?? 0])) as Record<JobState, number>;
  const total = placed.values[0]?.value ?? 0;
  let rate = rates.get(rt);
  if (!rate) {
    rate = new PlacementRate(rt.startedAt);
    rates.set(rt, rate);
  }
  const { byClass, nodes } = gpuStats(rt);
  const sum = (k: 'total' | 'busy' | 'free') => byClass.reduce((n, c) => n + c[k], 0);
  return {
    at: now,
    nodes,
    gpus: { total: sum('total'), busy: sum('busy'), free: sum('free'), byClass },
    jobs: { total: Object.values(byState).reduce((a, b) => a + b, 0), byState },
    placements: { total, ...rate.observe(now, total) },
  };
}
