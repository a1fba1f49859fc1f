/**
 * The forwarder's routing half (issue 15): which queued jobs leave this region, and for where. A candidate is a
 * buyer's job (not a check run, not one a peer forwarded here, not one naming this region) that names another
 * region (constraints.region), or gives a latency bound (constraints.maxLatencyMs), or has waited here past
 * constraints.maxQueueSeconds (default GPUX_FORWARD_AFTER_S). Each gets the advice a quote or an explain shows (services/region-advice.ts); when its
 * verdict picks a peer with figures, the job is forwarded there: a new attempt on `peer:<id>` (store forwardJob),
 * then the POST (forward-send.ts). A peer the job already failed on (its avoid list) is tried again only when no
 * other region will take it (as the scheduler treats a node it failed on).
 */
import { estimateWait, type JobRecord, newId, type PeerRecord, peerBuyerId, peerNodeId, quotePlacement, requirementsOf } from '@gpux/core';
import type { RegionSummary } from '@gpux/protocol';
import { adviseOver, buyerLabels, forwardAfterMs, type LocalFit, verdictUsable } from '../services/region-advice.js';
import type { ForwarderDeps, PeerClient } from './forward-send.js';
import { sendForward } from './forward-send.js';
import { notForwardable } from './remote-jobs.js';
import { regionSummary } from './summary.js';

/** Queued jobs looked at per pass (oldest first), candidates advised, and jobs forwarded per pass at most. */
const CLAIM = 500;
const ADVISED_PER_PASS = 100;
export const FORWARDS_PER_PASS = 20;

/** Jobs found not forwardable (a spec never changes, and ids are unique), so a pass does not read them again; bounded. */
const notForwardableIds = new Set<string>();
const NOT_FORWARDABLE_KEPT = 10_000;

/** When a queued job entered the queue: its submission, or its requeue (store queue-timeout.ts reads it alike). */
export function enteredQueueAt(job: Pick<JobRecord, 'attemptCount' | 'createdAt' | 'updatedAt' | 'runAfter'>): number {
  return job.attemptCount === 0 ? job.createdAt : Math.max(job.updatedAt, job.runAfter ?? 0);
}

/** Whether the job may leave at all, and whether it should be advised now (`never`: only if no node here fits it). */
function candidacy(rt: ForwarderDeps, job: JobRecord, now: number): 'now' | 'if-nothing-fits' | 'no' {
  // A check run stays with the nodes it checks; a job a peer forwarded here is never sent on (no loops).
  if ((job.kind ?? 'buyer') !== 'buyer' || job.buyerId.startsWith(peerBuyerId(''))) return 'no';
  const c = job.spec.constraints;
  // A job that names this region stays here.
  if (c.region === rt.config.region) return 'no';
  if (c.region !== undefined || c.maxLatencyMs !== undefined) return 'now';
  // Before its wait is up, a job leaves only if no node here could ever take it (waiting would not help).
  return now - enteredQueueAt(job) >= forwardAfterMs(rt, c) ? 'now' : 'if-nothing-fits';
}

/** No online node here fits the job even when idle (the quote's `never`). */
function nothingFits(rt: ForwarderDeps, job: JobRecord): boolean {
  const req = requirementsOf(job);
  const q = quotePlacement(req, rt.index);
  return q.nodesFitting + q.nodesBusy < req.nodes;
}

/** This region's outlook for the job: the quote's counts, and a wait already past its bound read as that wait. */
function localFit(rt: ForwarderDeps, job: JobRecord, now: number): LocalFit {
  const req = requirementsOf(job);
  const q = quotePlacement(req, rt.index);
  const wait = estimateWait(q, req.nodes, rt.scheduling.waits.recent(now), rt.config.schedulePassIntervalMs);
  const waited = now - enteredQueueAt(job);
  // Nodes here fit but stay busy: what it has already waited is a better estimate than the recent median.
  if (wait.kind !== 'now' && wait.kind !== 'never' && waited >= forwardAfterMs(rt, job.spec.constraints)) {
    return { nodesFitting: q.nodesFitting, nodesBusy: q.nodesBusy, nodesNeeded: req.nodes, wait: { kind: 'recent', seconds: Math.round(waited / 1000) } };
  }
  return { nodesFitting: q.nodesFitting, nodesBusy: q.nodesBusy, nodesNeeded: req.nodes, wait };
}

/** A peer's figures after this pass sent it `gpus` GPUs: fewer free, so one summary does not draw every job there. */
function taken(peer: PeerRecord, gpus: number): PeerRecord {
  if (!peer.summary || gpus === 0) return peer;
  return { ...peer, summary: { ...peer.summary, classes: peer.summary.classes.map((c) => ({ ...c, freeGpus: Math.max(0, c.freeGpus - gpus) })) } };
}

/** One routing pass: returns how many jobs it forwarded. */
export async function routeQueued(rt: ForwarderDeps, client: PeerClient): Promise<number> {
  let peers = await rt.store.listPeers();
  if (peers.length === 0) return 0;
  const now = rt.clock.now();
  const candidates: JobRecord[] = [];
  for (const j of await rt.store.claimQueued(now, CLAIM)) {
    if (candidates.length >= ADVISED_PER_PASS) break;
    const c = candidacy(rt, j, now);
    if (c === 'now' || (c === 'if-nothing-fits' && nothingFits(rt, j))) candidates.push(j);
  }
  if (candidates.length === 0) return 0;
  const own: RegionSummary = await regionSummary(rt);
  let forwarded = 0;
  // The claim's view (its spec without inputs, command, env) is enough for the advice.
  for (const job of candidates) {
    if (forwarded >= FORWARDS_PER_PASS) break;
    if (notForwardableIds.has(job.id)) continue;
    const req = requirementsOf(job);
    const local = localFit(rt, job, now);
    const advise = (among: PeerRecord[]) => {
      const { advice, peerOf } = adviseOver(rt, { peers: among, labels: buyerLabels(among), own, req, local, constraints: job.spec.constraints, asset: job.payment?.asset ?? job.spec.asset ?? 'usdc' });
      const peer = advice.verdict.peer === null ? undefined : peerOf.get(advice.verdict.peer);
      return peer && verdictUsable(advice) ? { advice, peer } : undefined;
    };
    // A peer the job failed on is avoided, as a node is: a fallback only when no other region will take it.
    const fresh = peers.filter((p) => !job.avoidNodeIds.includes(peerNodeId(p.id)));
    const picked = (fresh.length > 0 ? advise(fresh) : undefined) ?? (fresh.length < peers.length ? advise(peers) : undefined);
    if (!picked) continue;
    const { advice, peer } = picked;
    const v = advice.verdict;
    // The whole spec: it is what is sent, and its inputs decide whether it can go.
    const full = await rt.store.getJob(job.id);
    if (full?.state !== 'queued') continue;
    const why = notForwardable(full.spec);
    if (why) {
      if (notForwardableIds.size >= NOT_FORWARDABLE_KEPT) notForwardableIds.clear();
      notForwardableIds.add(job.id);
      rt.logger.debug({ jobId: job.id, peerId: peer.id, why }, 'job not forwarded');
      continue;
    }
    const at = rt.clock.now();
    const attemptId = newId('att', at, rt.random);
    const sent = await rt.store.forwardJob({ jobId: job.id, attemptId, peerId: peer.id, reason: v.sentence, now: at, leaseExpiresAt: at + rt.config.forwardLeaseMs });
    // The scheduler (or another pass) took it first.
    if (!sent) continue;
    forwarded++;
    rt.logger.info({ jobId: job.id, attemptId, peerId: peer.id, rule: v.rule }, 'job forwarded to a peer region');
    const gpus = job.spec.resources.gpu.count * (job.spec.nodes ?? 1);
    peers = peers.map((p) => (p.id === peer.id ? taken(p, gpus) : p));
    await sendForward(rt, client, { attemptId, jobId: job.id, peerId: peer.id }, peer, sent.job);
  }
  return forwarded;
}
