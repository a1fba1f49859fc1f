/**
 * Rebuild the capacity index from the store at start: every node, its track record (uptime, performance,
 * auto-cordon), its reputation (the reliability score), the market's quotes, asks and stakes, then every
 * active attempt's reservation (with its buyer, for fair share, gang flag and stake lock).
 */
import { ACTIVE_ATTEMPT_STATES } from '@gpux/protocol';
import { type AttemptRecord, isPeerNodeId, jobCpu, type JobRecord, jobMemoryMb, type NodeRecord, type Reservation } from '@gpux/core';
import type { Needs } from '../runtime.js';
import { applyNodeAsks, quoteFromBook } from '../services/market.js';
import { DAY_MS } from '../services/price-book.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type CapacityDeps = Needs<'book' | 'config' | 'index' | 'logger' | 'offlineNodes' | 'predictions' | 'scheduling' | 'store'>;

const PAGE = 1000;

export async function rebuildIndex(rt: CapacityDeps): Promise<{ nodes: number; attempts: number }> {
  const { store, index, offlineNodes } = rt;
  // Nodes are priced (index, floor per class) from the book, which is loaded below.
  quoteFromBook(rt);
  let nodes = 0;
  let cursor: string | undefined;
  const nodeRecords: NodeRecord[] = [];
  do {
    const page = await store.listNodes({ limit: PAGE, ...(cursor ? { cursor } : {}) });
    for (const n of page.items) {
      index.upsertNode(n);
      nodeRecords.push(n);
      if (n.status === 'offline') offlineNodes.add(n.id);
      nodes++;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  let statsAt = 0;
  for (const r of await store.listNodeStats(0)) {
    index.setStats(r.nodeId, r.stats);
    statsAt = Math.max(statsAt, r.updatedAt);
  }
  rt.scheduling.statsSince = statsAt;
  rt.scheduling.reputationSince = await refreshReputations(rt, 0);
  await loadBook(rt);
  for (const n of nodeRecords) applyNodeAsks(rt, n.id, n.providerId, n.advertisement.gpus);
  for (const s of await store.listStakes()) index.setStake(s.nodeId, s.staked);
  const jobs = new Map<string, JobRecord | undefined>();
  const active = await store.listActiveAttempts();
  for (const a of active) {
    // A forwarded attempt (issue 15) holds nothing here: its pseudo node peer:<id> is no node of this index.
    if (isPeerNodeId(a.nodeId)) continue;
    if (!jobs.has(a.jobId)) jobs.set(a.jobId, await store.getJob(a.jobId));
    const job = jobs.get(a.jobId);
    index.reserve(reservationOf(a, job));
    if (job) rt.predictions?.noteAttempt(a.id, job, a.startedAt ?? a.createdAt);
  }
  return { nodes, attempts: active.length };
}

/** The price book from the store: the last day of prices (for the change figures), the latest of classes quiet for longer, the asks. */
export async function loadBook(rt: CapacityDeps): Promise<void> {
  const latest = await rt.store.latestPrices();
  const since = Math.min(...latest.map((p) => p.at)) - DAY_MS;
  const history = latest.length ? await rt.store.priceHistory({ sinceAt: since, limit: 1_000_000 }) : [];
  rt.book.load([...history, ...latest].sort((a, b) => a.epoch - b.epoch), await rt.store.listAsks());
  rt.index.quotes.refresh();
}

/** The index's reservation for an active attempt (cpu and memory from its job's spec). */
export function reservationOf(a: AttemptRecord, job: JobRecord | undefined): Reservation {
  return {
    attemptId: a.id,
    nodeId: a.nodeId,
    gpuIndices: a.gpuIndices,
    cpu: job ? jobCpu(job) : 1,
    memoryMb: job ? jobMemoryMb(job) : 0,
    jobId: a.jobId,
    ...(job ? { buyerId: job.buyerId } : {}),
    ...(a.gang ? { gang: true } : {}),
    ...(a.price ? { stakeLock: a.price.stakeLock } : {}),
  };
}

/** Gang jobs whose members the store may have ended together: give back what is no longer active. */
export async function releaseEndedGangs(rt: CapacityDeps): Promise<void> {
  for (const jobId of rt.index.takeEndedGangs()) {
    for (const a of await rt.store.listAttempts(jobId)) if (!ACTIVE_ATTEMPT_STATES.includes(a.state)) rt.index.release(a.id);
  }
}

/**
 * Node track records the store changed since the last look (attempt outcomes, outages, auto-cordons) go
 * into the index; a node the store auto-cordoned leaves the buckets, and the log says why.
 */
export async function refreshNodeStats(rt: CapacityDeps, since: number): Promise<number> {
  let latest = since;
  for (const r of await rt.store.listNodeStats(since)) {
    rt.index.setStats(r.nodeId, r.stats);
    const n = rt.index.get(r.nodeId);
    if (n && (n.adminState !== r.adminState || n.adminReason !== r.adminReason)) {
      rt.index.setAdminState(r.nodeId, r.adminState, r.adminReason);
      if (r.adminState === 'cordoned' && r.adminReason) rt.logger.warn({ nodeId: r.nodeId, reason: r.adminReason }, 'node auto-cordoned');
    }
    latest = Math.max(latest, r.updatedAt);
  }
  return latest;
}

/** Node reputations the store changed since the last look (attempt ends, audit and canary verdicts) go into the index. */
export async function refreshReputations(rt: CapacityDeps, since: number): Promise<number> {
  let latest = since;
  for (const r of await rt.store.listReputations(since)) {
    rt.index.setReputation(r.nodeId, r.state);
    latest = Math.max(latest, r.updatedAt);
  }
  return latest;
}
