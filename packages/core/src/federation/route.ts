/**
 * Which region could run a job (issue 15, routing as advice): this region from its node-level outlook (the quote's
 * fitting/busy counts and expected wait), each peer from its last signed summary (free/total GPUs and the index
 * price per market class, queue depth, recent wait, round trip). A summary is per class, not per node, so a peer's
 * "fits now" is a class-level estimate: enough free GPUs of an accepted class, not a node that has them all.
 *
 * The verdict follows the rules, first match wins:
 *   1. `constraints.region` names a peer's region: that peer (whatever its figures say).
 *   2. No local node can take it (wait `never`, or `recent` beyond `maxLocalWaitMs`): the nearest peer that fits now.
 *   3. A latency bound is given: the cheapest region that fits now within it, when that is a peer cheaper than here.
 *   Otherwise: stay here. Ties between peers: round trip, then price, then name.
 * Peers not `ok`, without a summary, or with one older than `staleAfterMs` are left out, each with why. Pure: the
 * caller passes the time, the peers and the outlook; the forwarder (coordinator federation/forward-route.ts) acts on the verdict.
 */
import type { Asset, GpuVendor, RegionClassFigures, RegionSummary } from '@gpux/protocol';
import { formatAmount } from '@gpux/protocol';
import { CPU_CLASS, marketClassOf } from '../market/classes.js';
import type { GpuWant } from '../scheduler/gpu-class.js';

export interface RouteJob {
  gpu: GpuWant;
  /** GPUs per node (0: CPU-only). */
  gpuCount: number;
  /** Nodes (gang size). */
  nodes: number;
  /** `constraints.region`. */
  region: string | undefined;
  /** The job's cap per GPU-hour (per job-hour when CPU-only), minor units. */
  maxPrice: number | undefined;
}

export interface LocalOutlook {
  region: string;
  /** Node-level, from the capacity index (core quotePlacement). */
  nodesFitting: number;
  nodesBusy: number;
  nodesNeeded: number;
  wait: { kind: 'now' | 'recent' | 'unknown' | 'never'; seconds: number | null };
  /** This region's own summary classes: the index price per class, as peers see it. */
  classes: readonly RegionClassFigures[];
}

export interface RoutePeer {
  name: string;
  status: string;
  rttMs: number | null;
  summary: RegionSummary | null;
  /** When this region received the summary (its clock). */
  summaryAt: number | null;
}

export interface RouteInput {
  job: RouteJob;
  local: LocalOutlook;
  peers: readonly RoutePeer[];
  now: number;
  /** A summary older than this is not believed (3 exchange periods). */
  staleAfterMs: number;
  /** Rule 2's deadline for a `recent` local wait; absent: only `never` sends a job away. */
  maxLocalWaitMs?: number | undefined;
  /** Rule 3's latency bound (no spec field yet); absent: rule 3 is off. */
  maxLatencyMs?: number | undefined;
  asset: Asset;
}

export interface RegionOption {
  region: string;
  /** The peer's name here; null for this region. */
  peer: string | null;
  local: boolean;
  /** Enough free GPUs now: node-level here, class-level for a peer. */
  fitsNow: boolean;
  /** The class chosen for the figures: the cheapest accepted one that fits now, else the one with most free GPUs. */
  class: string | null;
  freeGpus: number;
  totalGpus: number;
  /** Index price per GPU-hour of that class; null when unknown. */
  priceIndex: number | null;
  /** Whether the index is within the job's cap; null without a cap. */
  withinCap: boolean | null;
  rttMs: number | null;
  summaryAgeMs: number | null;
  queueDepth: number | null;
  waitP50Ms: number | null;
  /** Why, in words. */
  why: string;
}

export interface SkippedRegion {
  region: string | null;
  peer: string;
  why: string;
}

export type RouteRule = 'named' | 'no-local-capacity' | 'cheaper-within-latency' | 'stay' | 'nowhere';

export interface RouteAdvice {
  /** Regions that could run the job (this one included when it can), best first. */
  options: RegionOption[];
  skipped: SkippedRegion[];
  verdict: { rule: RouteRule; region: string | null; peer: string | null; sentence: string };
}

const UNKNOWN_MODEL = 'unknown';

/** A job's model filter as a market class's model part ("NVIDIA H100 80GB HBM3" → "h100"); "unknown" when only noise. */
function modelKey(m: string): string {
  const cls = marketClassOf({ vendor: 'nvidia' as GpuVendor, model: m, vramMb: 0 });
  return cls.slice('nvidia-'.length, -'-0gb'.length);
}

/** Whether the job's GPU filter accepts a market class (`vendor-model-NNgb`), as far as the class name tells. */
export function classAccepts(cls: string, want: GpuWant): boolean {
  const m = /^([a-z0-9]+)-([a-z0-9.-]+)-(\d+)gb$/.exec(cls);
  if (!m) return false;
  const [, vendor, model, vram] = m as unknown as [string, string, string, string];
  if (want.vendor !== undefined && vendor !== want.vendor) return false;
  if (want.minVramMb !== undefined && Number(vram) * 1024 + 512 < want.minVramMb) return false;
  if (want.models !== undefined) {
    const keys = want.models.map(modelKey);
    // A filter of noise words only ("80gb") says nothing a class name can check: accept, the peer's nodes decide.
    if (!keys.some((k) => k === UNKNOWN_MODEL || model.includes(k))) return false;
  }
  return true;
}

const seconds = (ms: number) => `${Math.max(0, Math.round(ms / 1000))} s`;

interface Pick_ {
  class: string | null;
  free: number;
  total: number;
  price: number | null;
  fits: boolean;
}

/** The figures of the accepted class that serves the job best. `need`: GPUs on one node × nodes (class-level). */
function pickClass(classes: readonly RegionClassFigures[], job: RouteJob): Pick_ | null {
  const need = job.gpuCount * job.nodes;
  const accepted = classes.filter((c) => c.class !== CPU_CLASS && classAccepts(c.class, job.gpu) && c.totalGpus >= job.gpuCount);
  if (accepted.length === 0) return null;
  const capOk = (c: RegionClassFigures) => job.maxPrice === undefined || c.priceIndex <= job.maxPrice;
  const fitting = accepted.filter((c) => c.freeGpus >= need && capOk(c)).sort((a, b) => a.priceIndex - b.priceIndex || a.class.localeCompare(b.class));
  const best = fitting[0] ?? [...accepted].sort((a, b) => b.freeGpus - a.freeGpus || a.priceIndex - b.priceIndex || a.class.localeCompare(b.class))[0];
  if (!best) return null;
  return { class: best.class, free: best.freeGpus, total: best.totalGpus, price: best.priceIndex, fits: fitting.length > 0 };
}

function peerOption(p: RoutePeer, s: RegionSummary, job: RouteJob, now: number, asset: Asset): RegionOption | string {
  const c = pickClass(s.classes, job);
  if (!c) return `no class it accepts with ${job.gpuCount} GPUs (its summary lists ${s.classes.map((x) => x.class).join(', ') || 'none'})`;
  const withinCap = job.maxPrice === undefined || c.price === null ? null : c.price <= job.maxPrice;
  const age = now - (p.summaryAt ?? now);
  const price = c.price === null ? 'no index price' : `${formatAmount(c.price, asset)} per GPU-hour (class index)`;
  const cap = withinCap === false ? `, over the job's cap of ${formatAmount(job.maxPrice ?? 0, asset)}` : '';
  const fits = c.fits ? `could run it now: ${c.free} free ${c.class}` : `has ${c.free} of ${c.total} ${c.class} free, fewer than the ${job.gpuCount * job.nodes} it needs`;
  const rtt = p.rttMs === null ? 'round trip unknown' : `${p.rttMs} ms away`;
  return {
    region: s.region,
    peer: p.name,
    local: false,
    fitsNow: c.fits,
    class: c.class,
    freeGpus: c.free,
    totalGpus: c.total,
    priceIndex: c.price,
    withinCap,
    rttMs: p.rttMs,
    summaryAgeMs: age,
    queueDepth: s.queueDepth,
    waitP50Ms: s.placementWaitP50Ms,
    why: `region ${s.region} ${fits} (a class-level estimate from its summary), ${price}${cap}, ${rtt} (summary ${seconds(age)} old, ${s.queueDepth} queued)`,
  };
}

function localOption(l: LocalOutlook, job: RouteJob, asset: Asset): RegionOption | null {
  if (l.nodesFitting + l.nodesBusy < l.nodesNeeded) return null;
  const c = job.gpuCount === 0 ? null : pickClass(l.classes, job);
  const withinCap = job.maxPrice === undefined || !c || c.price === null ? null : c.price <= job.maxPrice;
  const fitsNow = l.nodesFitting >= l.nodesNeeded;
  const price = c?.price == null ? '' : `, ${formatAmount(c.price, asset)} per GPU-hour (${c.class} index)`;
  return {
    region: l.region,
    peer: null,
    local: true,
    fitsNow,
    class: c?.class ?? null,
    freeGpus: c?.free ?? 0,
    totalGpus: c?.total ?? 0,
    priceIndex: c?.price ?? null,
    withinCap,
    rttMs: 0,
    summaryAgeMs: 0,
    queueDepth: null,
    waitP50Ms: null,
    why: `this region (${l.region}): ${l.nodesFitting} ${l.nodesFitting === 1 ? 'node fits' : 'nodes fit'} now, ${l.nodesBusy} busy; it needs ${l.nodesNeeded}${price}`,
  };
}

/** Ranking: fits now, then nearer, then cheaper, then by name. */
function compareOptions(a: RegionOption, b: RegionOption): number {
  const fit = (o: RegionOption) => (o.fitsNow && o.withinCap !== false ? 0 : 1);
  return (
    fit(a) - fit(b) ||
    (a.rttMs ?? Number.MAX_SAFE_INTEGER) - (b.rttMs ?? Number.MAX_SAFE_INTEGER) ||
    (a.priceIndex ?? Number.MAX_SAFE_INTEGER) - (b.priceIndex ?? Number.MAX_SAFE_INTEGER) ||
    (a.region < b.region ? -1 : a.region > b.region ? 1 : 0)
  );
}

const takesNow = (o: RegionOption) => o.fitsNow && o.withinCap !== false;

export function adviseRegion(input: RouteInput): RouteAdvice {
  const { job, local, now, asset } = input;
  const options: RegionOption[] = [];
  const skipped: SkippedRegion[] = [];
  const usable = new Map<string, RegionOption>();
  for (const p of input.peers) {
    const region = p.summary?.region ?? null;
    if (p.status !== 'ok') skipped.push({ region, peer: p.name, why: `peer ${p.name} is ${p.status}: its figures are not believed` });
    else if (!p.summary || p.summaryAt === null) skipped.push({ region, peer: p.name, why: `peer ${p.name} has sent no summary yet` });
    else if (now - p.summaryAt > input.staleAfterMs)
      skipped.push({ region, peer: p.name, why: `peer ${p.name}'s summary is ${seconds(now - p.summaryAt)} old, older than ${seconds(input.staleAfterMs)} (3 exchange periods): not believed` });
    else if (job.gpuCount === 0) skipped.push({ region, peer: p.name, why: `region ${p.summary.region}: summaries count GPUs only, so nothing is known of its CPU-only capacity` });
    else {
      const o = peerOption(p, p.summary, job, now, asset);
      if (typeof o === 'string') skipped.push({ region, peer: p.name, why: `region ${p.summary.region}: ${o}` });
      else {
        options.push(o);
        usable.set(o.region, o);
      }
    }
  }
  const here = localOption(local, job, asset);
  if (here) options.push(here);
  options.sort(compareOptions);
  const within = (o: RegionOption) => input.maxLatencyMs === undefined || (o.rttMs !== null && o.rttMs <= input.maxLatencyMs);
  const bound = input.maxLatencyMs === undefined ? '' : ` within ${input.maxLatencyMs} ms`;
  const go = (rule: RouteRule, o: RegionOption, why: string) => ({ rule, region: o.region, peer: o.peer, sentence: `${why}: ${o.why}` });

  // 1. The job names a peer's region.
  if (job.region !== undefined && job.region !== local.region) {
    const named = input.peers.find((p) => p.summary?.region === job.region);
    if (named) {
      const o = usable.get(job.region);
      if (o) return { options, skipped, verdict: go('named', o, `constraints.region names region ${job.region}, a peer`) };
      const why = skipped.find((s) => s.peer === named.name)?.why ?? 'no figures';
      return { options, skipped, verdict: { rule: 'named', region: job.region, peer: named.name, sentence: `constraints.region names region ${job.region}, a peer, but ${why}` } };
    }
  }
  // 2. No local node can take it in time.
  const stuck = local.wait.kind === 'never' || (local.wait.kind === 'recent' && input.maxLocalWaitMs !== undefined && (local.wait.seconds ?? 0) * 1000 > input.maxLocalWaitMs);
  if (stuck) {
    const why = local.wait.kind === 'never' ? 'no node here can run it as specified' : `the expected wait here (${local.wait.seconds} s) is beyond its queue deadline`;
    const nearest = options.filter((o) => !o.local && takesNow(o) && within(o))[0];
    if (nearest) return { options, skipped, verdict: go('no-local-capacity', nearest, `${why}; the nearest region with capacity${bound}`) };
    return { options, skipped, verdict: { rule: 'nowhere', region: null, peer: null, sentence: `${why}, and no peer region${bound} has the free GPUs it needs now (as their summaries tell)` } };
  }
  // 3. Cheaper elsewhere within the buyer's latency bound.
  if (input.maxLatencyMs !== undefined) {
    const cheapest = options
      .filter((o) => takesNow(o) && within(o) && o.priceIndex !== null)
      .sort((a, b) => (a.priceIndex ?? 0) - (b.priceIndex ?? 0) || (a.rttMs ?? 0) - (b.rttMs ?? 0) || (a.region < b.region ? -1 : 1))[0];
    const mine = here?.fitsNow && here.priceIndex !== null ? here.priceIndex : null;
    if (cheapest && !cheapest.local && (mine === null || (cheapest.priceIndex ?? 0) < mine)) {
      return { options, skipped, verdict: go('cheaper-within-latency', cheapest, `region ${cheapest.region} is the cheapest with capacity${bound}`) };
    }
  }
  const sentence = here
    ? `stay in this region (${local.region}): ${local.wait.kind === 'now' ? 'a node here can take it now' : 'nodes here fit it'}, and no rule sends it elsewhere`
    : `stay in this region (${local.region}): no rule sends it elsewhere`;
  return { options, skipped, verdict: { rule: 'stay', region: local.region, peer: null, sentence } };
}
