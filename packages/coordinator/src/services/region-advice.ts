/**
 * Region advice for a quote or an explain (issue 15): the core's adviseRegion over this region's outlook and its
 * peers' last summaries (the store keeps them; the leader refreshes them every GPUX_PEER_SUMMARY_MS). Advice only:
 * nothing is forwarded, and the verdict says so. Absent when this coordinator has no peers.
 *
 * What a buyer sees: region names (each peer's own, from its signed summary) and per-class figures, what `gpux
 * offers` would show on that region. Not the peer's name here, its URL or its key: how regions are peered is the
 * operator's (GET /v1/federation/peers is operator-only). Operators see the peer's name and URL as well.
 */
import { adviseRegion, type JobRequirements, type RoutePeer, type WaitEstimate } from '@gpux/core';
import type { Asset, RegionAdvice } from '@gpux/protocol';
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

export async function regionAdvice(
  rt: RegionAdviceDeps,
  p: Principal,
  req: JobRequirements,
  local: LocalFit,
  opts: { queueTimeoutSeconds: number | undefined; asset: Asset },
): Promise<RegionAdvice | undefined> {
  const all = await rt.store.listPeers();
  if (all.length === 0) return undefined;
  const operator = p.role === 'operator';
  // A peer that never sent a summary has no region name to show a buyer, and nothing to tell them.
  const peers = operator ? all : all.filter((peer) => peer.summary !== null);
  // For buyers a peer is labelled by its own region name, so no sentence carries the operator's name for it.
  const shown: RoutePeer[] = peers.map((peer) => ({ ...peer, name: operator ? peer.name : (peer.summary?.region ?? 'a peer') }));
  const urlOf = new Map(peers.map((peer, i) => [shown[i]?.name ?? peer.name, peer.url]));
  const own = await regionSummary(rt);
  const advice = adviseRegion({
    job: { gpu: req.gpu, gpuCount: req.gpuCount, nodes: req.nodes, region: req.region, maxPrice: req.maxPrice },
    local: { region: rt.config.region, ...local, classes: own.classes },
    peers: shown,
    now: rt.clock.now(),
    staleAfterMs: STALE_PERIODS * rt.config.peerSummaryMs,
    // The deadline: the job's queue timeout (or the coordinator's default); no latency bound in the spec yet.
    maxLocalWaitMs: (opts.queueTimeoutSeconds ?? rt.config.queueTimeoutSeconds) * 1000,
    asset: opts.asset,
  });
  const v = advice.verdict;
  let sentence = v.sentence;
  if (v.peer !== null && v.region !== null) {
    const url = operator ? urlOf.get(v.peer) : undefined;
    sentence += url
      ? `. Forwarding is not built yet: submit it to ${url} yourself (gpux job submit FILE --coordinator ${url})`
      : `. Forwarding is not built yet: to run it there, submit it to region ${v.region}'s coordinator yourself (its operator gives the address)`;
  }
  return {
    options: advice.options.map((o) => ({
      region: o.region,
      local: o.local,
      peer: operator ? o.peer : null,
      url: operator && o.peer !== null ? (urlOf.get(o.peer) ?? null) : null,
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
