/**
 * Fairness between buyers and priority classes.
 *
 * Claim (the store's claimQueuedFair, and claimWindow here as its in-memory reference): queued jobs are
 * grouped into (buyer, priority class) pairs; each pass takes the oldest ceil(limit / pairs) due jobs of
 * every pair (at most `limit` pairs, rotating through buyers when there are more), then gives the shares
 * that pairs left unused to the pairs that filled theirs (one more round), so a window is full whenever
 * enough work is queued. A buyer with 10,000 queued jobs therefore gets its share of the window plus what
 * others leave, never the share of another buyer with work: that buyer's single job is in the next pass.
 *
 * Order (fairOrder, inside one pass): by effective priority class (high, normal, low), then round-robin
 * between buyers: every buyer's first job before anyone's second, buyers holding less capacity right now
 * first. Aging is the starvation guard: a job moves up one class for every `agingMs` it has waited since it
 * was submitted, so a low job waits at most 2 × agingMs before it competes as high.
 */
import type { JobRecord } from '../records.js';
import { jobPriority, PRIORITY_RANK } from './requirements.js';

export const DEFAULT_AGING_MS = 10 * 60_000;

export function priorityRank(job: Pick<JobRecord, 'spec'>): number {
  return PRIORITY_RANK[jobPriority(job.spec)];
}

export function effectivePriority(job: Pick<JobRecord, 'spec' | 'createdAt'>, now: number, agingMs: number): number {
  const waited = Math.max(0, now - job.createdAt);
  return Math.max(0, priorityRank(job) - Math.floor(waited / Math.max(1, agingMs)));
}

const byAge = (a: JobRecord, b: JobRecord) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The order one pass places a claimed window in. `usage(buyerId)`: what the buyer holds now. `reach(job)`, when
 * given, orders the jobs of one round (same class, same round-robin position, one job per buyer) by how much of
 * the fleet can take them, least first (scarcity.ts): a job only few nodes fit goes before one with many choices
 * of the same round. Classes, rounds and each buyer's own order are unchanged.
 *
 * `work(job)`, when given (issue 17: the predicted run time, ms; undefined when unknown), orders each buyer's jobs of
 * a class shortest first, aged (work ÷ (1 + waited ÷ agingMs)), the unknown after the known by age, and breaks ties
 * of reach in a round the same way: short jobs stop waiting behind long ones, and buyers keep their round-robin. The
 * bound on every wait: a job that has waited agingMs or more goes before every younger job of its class (rounds
 * included), oldest first, so it is the pass's first job once it is the oldest of the top class, and the first job
 * that does not fit is the one the engine reserves room for (backfill.ts).
 */
export function fairOrder(
  jobs: readonly JobRecord[],
  now: number,
  agingMs: number,
  usage: (buyerId: string) => number,
  reach?: (job: JobRecord) => number,
  work?: (job: JobRecord) => number | undefined,
  workAgingMs = agingMs,
): JobRecord[] {
  const key = work ? agedWork(jobs, now, workAgingMs, work) : undefined;
  const classes = new Map<number, Map<string, JobRecord[]>>();
  for (const j of jobs) {
    const c = effectivePriority(j, now, agingMs);
    let buyers = classes.get(c);
    if (!buyers) {
      buyers = new Map();
      classes.set(c, buyers);
    }
    const list = buyers.get(j.buyerId);
    if (list) list.push(j);
    else buyers.set(j.buyerId, [j]);
  }
  const out: JobRecord[] = [];
  for (const c of [...classes.keys()].sort((a, b) => a - b)) {
    const buyers = [...(classes.get(c) as Map<string, JobRecord[]>).entries()].map(([buyerId, list]) => {
      list.sort(byAge);
      const oldest = (list[0] as JobRecord).createdAt;
      if (key) list.sort((a, b) => byWork(key, a, b));
      return { buyerId, list, usage: usage(buyerId), oldest };
    });
    buyers.sort((a, b) => a.usage - b.usage || a.oldest - b.oldest || (a.buyerId < b.buyerId ? -1 : 1));
    const longest = Math.max(...buyers.map((b) => b.list.length));
    const round: JobRecord[] = [];
    for (let r = 0; r < longest; r++) {
      round.length = 0;
      for (const b of buyers) if (r < b.list.length) round.push(b.list[r] as JobRecord);
      // A stable sort: buyers of equal reach keep their fair-share order.
      if (key && round.length > 1) round.sort((a, b) => byStarving(key, a, b) || (reach ? reach(a) - reach(b) : 0) || byWork(key, a, b));
      else if (reach && round.length > 1) round.sort((a, b) => reach(a) - reach(b));
      out.push(...round);
    }
  }
  return out;
}

/** Per job: waited agingMs or more (its age then orders it), and its aged predicted work (Infinity when unknown). */
interface WorkKey {
  starving: boolean;
  aged: number;
}

function agedWork(jobs: readonly JobRecord[], now: number, agingMs: number, work: (job: JobRecord) => number | undefined): Map<JobRecord, WorkKey> {
  const out = new Map<JobRecord, WorkKey>();
  const aging = Math.max(1, agingMs);
  for (const j of jobs) {
    const waited = Math.max(0, now - j.createdAt);
    const w = work(j);
    out.set(j, { starving: waited >= aging, aged: w === undefined || !(w >= 0) ? Number.POSITIVE_INFINITY : w / (1 + waited / aging) });
  }
  return out;
}

/** Starving jobs first, by age; then by aged work; unknown work and ties by age. */
function byWork(key: Map<JobRecord, WorkKey>, a: JobRecord, b: JobRecord): number {
  const s = byStarving(key, a, b);
  if (s !== 0) return s;
  const wa = (key.get(a) as WorkKey).aged;
  const wb = (key.get(b) as WorkKey).aged;
  return wa < wb ? -1 : wa > wb ? 1 : byAge(a, b);
}

/** Starving before not, two starving by age; 0 when neither starves. */
function byStarving(key: Map<JobRecord, WorkKey>, a: JobRecord, b: JobRecord): number {
  const sa = (key.get(a) as WorkKey).starving;
  const sb = (key.get(b) as WorkKey).starving;
  if (sa === sb) return sa ? byAge(a, b) : 0;
  return sa ? -1 : 1;
}

export const isDue = (j: Pick<JobRecord, 'state' | 'cancelRequested' | 'runAfter'>, now: number) =>
  j.state === 'queued' && !j.cancelRequested && (j.runAfter === null || j.runAfter <= now);

/**
 * In-memory reference of the store's fair claim (used by the replay and by tests): pairs in (buyerId,
 * priority) order starting at the first buyer >= fromBuyer (wrapping), at most `limit` of them.
 */
export function claimWindow(queued: readonly JobRecord[], now: number, limit: number, fromBuyer = ''): JobRecord[] {
  const pairs = new Map<string, { buyerId: string; rank: number; jobs: JobRecord[] }>();
  for (const j of queued) {
    if (j.state !== 'queued') continue;
    const rank = priorityRank(j);
    const key = `${j.buyerId}\u0000${rank}`;
    let p = pairs.get(key);
    if (!p) {
      p = { buyerId: j.buyerId, rank, jobs: [] };
      pairs.set(key, p);
    }
    if (isDue(j, now)) p.jobs.push(j);
  }
  const sorted = [...pairs.values()].sort((a, b) => (a.buyerId < b.buyerId ? -1 : a.buyerId > b.buyerId ? 1 : a.rank - b.rank));
  const start = sorted.findIndex((p) => p.buyerId >= fromBuyer);
  const rotated = start <= 0 ? sorted : [...sorted.slice(start), ...sorted.slice(0, start)];
  const chosen = rotated.slice(0, Math.max(0, limit));
  if (chosen.length === 0) return [];
  const per = Math.ceil(limit / chosen.length);
  const out: JobRecord[] = [];
  for (const p of chosen) out.push(...p.jobs.sort(byAge).slice(0, per));
  // Shares a pair left unused go, in one more round, to the pairs that filled theirs.
  const full = chosen.filter((p) => p.jobs.length > per);
  const left = limit - out.length;
  if (left > 0 && full.length > 0) {
    const more = Math.ceil(left / full.length);
    for (const p of full) out.push(...p.jobs.slice(per, per + more));
  }
  return out;
}

/** How the store sees a queued job's place: its own pair's older due jobs, and due counts of every pair. */
export interface QueueStanding {
  buyerId: string;
  priorityRank: number;
  /** Due jobs of the same buyer and class that are older. */
  aheadInPair: number;
  pairs: Array<{ buyerId: string; priorityRank: number; due: number }>;
}

/**
 * Queued jobs ahead of this one in claim order, approximately: every due job of a higher class, plus, in its
 * own class, as many of each other buyer's jobs as it has of its own ahead (round-robin), plus its own.
 * Aging and current usage are left out (they move jobs within a pass, not across passes).
 */
export function fairQueuePosition(s: QueueStanding): { ahead: number; total: number } {
  let ahead = s.aheadInPair;
  let total = 0;
  for (const p of s.pairs) {
    total += p.due;
    if (p.priorityRank < s.priorityRank) ahead += p.due;
    else if (p.priorityRank === s.priorityRank && p.buyerId !== s.buyerId) ahead += Math.min(p.due, s.aheadInPair);
  }
  return { ahead, total };
}
