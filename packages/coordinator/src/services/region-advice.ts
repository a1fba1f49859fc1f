/**
 * Region advice (issue 15): the core's adviseRegion over this region's outlook and its peers' last summaries (the
 * store keeps them; the leader refreshes them every GPUX_PEER_SUMMARY_MS). A quote or an explain shows it; the
 * forwarder (federation/forward-route.ts) acts on the same verdict, so what a buyer is told is what happens. Absent
 * when this coordinator has no peers.
 *
 * What a buyer sees: region names (each peer's own, from its signed summary) and per-class figures, what `gpux
 * offers` would show on that region. Not the peer's name here, its URL or its key: how regions are peered is the
 * operator's (GET /v1/federation/peers is operator-only). Operators see the peer's name and URL as well.
 */
import { adviseRegion, type JobRequirements, type PeerRecord, type RouteAdvice, type RoutePeer, type WaitEstimate } from '@gpux/core';
import type { Asset, JobSpec, RegionAdvice, RegionSummary } from '@gpux/protocol';
import { notForwardable } from '../federation/remote-jobs.js';
import { regionSummary } from '../federation/summary.js';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
export type RegionAdviceDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'offlineNodes' | 'scheduling' | 'store'>;

/** A summary older than this many exchange periods is not believed. */
const STALE_PERIODS = 3;

export interface LocalFit {
  nodesFitting: number;
  nodesBusy: number;
  nodesNeeded: number;
  wait: Pick<WaitEstimate, 'kind' | 'seconds'>;
}

/** The job's federation constraints (constraints.maxQueueSeconds, constraints.maxLatencyMs). */
export type RouteConstraints = Pick<JobSpec['constraints'], 'maxQueueSeconds' | 'maxLatencyMs'>;

/** How long a job may wait here before a peer that can run it now takes it. */
export const forwardAfterMs = (rt: Needs<'config'>, c: RouteConstraints | undefined): number => (c?.maxQueueSeconds ?? rt.config.forwardAfterSeconds) * 1000;

/** A peer as a buyer may see it: its own region name (unique among the peers: another peer claiming it gets its name here added). */
export function buyerLabels(peers: readonly PeerRecord[]): string[] {
  const seen = new Set<string>();
  return peers.map((p) => {
    const region = p.summary?.region ?? 'a peer';
    const label = seen.has(region) ? `${region} (${p.name})` : region;
    seen.add(label);
    return label;
  });
}

/** The core's advice for one job over `peers` (labelled as given) and this region's own summary. */
export function adviseOver(
  rt: Needs<'clock' | 'config'>,
  q: { peers: readonly PeerRecord[]; labels: readonly string[]; own: RegionSummary; req: JobRequirements; local: LocalFit; constraints?: RouteConstraints | undefined; asset: Asset },
): { advice: RouteAdvice; peerOf: Map<string, PeerRecord> } {
  const shown: RoutePeer[] = q.peers.map((peer, i) => ({ ...peer, name: q.labels[i] ?? peer.name }));
  const peerOf = new Map(q.peers.map((peer, i) => [q.labels[i] ?? peer.name, peer]));
  const advice = adviseRegion({
    job: { gpu: q.req.gpu, gpuCount: q.req.gpuCount, nodes: q.req.nodes, region: q.req.region, maxPrice: q.req.maxPrice },
    local: { region: rt.config.region, ...q.local, classes: q.own.classes },
    peers: shown,
    now: rt.clock.now(),
    staleAfterMs: STALE_PERIODS * rt.config.peerSummaryMs,
    maxLocalWaitMs: forwardAfterMs(rt, q.constraints),
    maxLatencyMs: q.constraints?.maxLatencyMs,
    asset: q.asset,
  });
  return { advice, peerOf };
}

/** Whether the verdict's peer has usable figures (a named region may be chosen with none: then nothing is forwarded). */
export const verdictUsable = (a: RouteAdvice): boolean => a.verdict.peer !== null && a.options.some((o) => o.peer === a.verdict.peer);

/** What becomes of the job under the verdict: forwarded (now, or after its wait here), or why not. */
function forwardingSentence(rt: Needs<'config'>, advice: RouteAdvice, spec: JobSpec | undefined, local: LocalFit, yourself: string): string {
  const v = advice.verdict;
  if (!rt.config.forward) return `. Forwarding is off in this region (GPUX_FORWARD=off): ${yourself}`;
  const why = spec ? notForwardable(spec) : undefined;
  if (why) return `. It cannot be forwarded: ${why}; ${yourself}`;
  if (!verdictUsable(advice)) return `. It is forwarded there once region ${v.region} is reachable and its summary is fresh`;
  // No node here fits it even idle: waiting would not help, so it goes at once.
  if (v.rule === 'no-local-capacity' && local.wait.kind !== 'never') {
    const s = Math.round(forwardAfterMs(rt, spec?.constraints) / 1000);
    return `. It is forwarded there once it has waited ${s} s here (constraints.maxQueueSeconds, or the region's GPUX_FORWARD_AFTER_S)`;
  }
  return `. It is forwarded there: this region sends it to region ${v.region} and keeps its escrow, logs and bill`;
}

export async function regionAdvice(
  rt: RegionAdviceDeps,
  p: Principal,
  req: JobRequirements,
  local: LocalFit,
  opts: { queueTimeoutSeconds?: number | undefined; asset: Asset; spec?: JobSpec | undefined },
): Promise<RegionAdvice | undefined> {
  const all = await rt.store.listPeers();
  if (all.length === 0) return undefined;
  const operator = p.role === 'operator';
  // A peer that never sent a summary has no region name to show a buyer, and nothing to tell them.
  const peers = operator ? all : all.filter((peer) => peer.summary !== null);
  // For buyers a peer is labelled by its own region name, so no sentence carries the operator's name for it.
  const labels = operator ? peers.map((peer) => peer.name) : buyerLabels(peers);
  const own = await regionSummary(rt);
  const { advice, peerOf } = adviseOver(rt, { peers, labels, own, req, local, constraints: opts.spec?.constraints, asset: opts.asset });
  const urlOf = (label: string | null) => (operator && label !== null ? (peerOf.get(label)?.url ?? null) : null);
  const v = advice.verdict;
  let sentence = v.sentence;
  if (v.peer !== null && v.region !== null) {
    const url = urlOf(v.peer);
    const yourself = url
      ? `submit it to ${url} yourself (gpux job submit FILE --coordinator ${url})`
      : `to run it there, submit it to region ${v.region}'s coordinator yourself (its operator gives the address)`;
    sentence += forwardingSentence(rt, advice, opts.spec, local, yourself);
  }
  return {
    options: advice.options.map((o) => ({
      region: o.region,
      local: o.local,
      peer: operator ? o.peer : null,
      url: urlOf(o.peer),
      fitsNow: o.fitsNow,
      class: o.class,
      freeGpus: o.freeGpus,
      totalGpus: o.totalGpus,
      priceIndex: o.priceIndex,
      withinCap: o.withinCap,
      rttMs: o.rttMs,
      summaryAgeMs: o.summaryAgeMs,
      why: o.why,
    })),
    skipped: advice.skipped.map((s) => s.why),
    verdict: { rule: v.rule, region: v.region, sentence },
  };
}
