/**
 * The fair-share claim and a queued job's standing (core scheduler/fairness.ts has the rules and an
 * in-memory reference). Pairs (buyer, priority) are found one index seek at a time on jobs_fair_claim, so a
 * buyer with 10,000 queued jobs costs one seek, not 10,000 rows; each pair's oldest due jobs are one
 * ordered range scan. Claims read each spec's scheduling view, never its payload (jobs.spec_payload).
 */
import type { JobRecord, QueueStanding } from '@gpux/core';
import type { StoreContext } from './context.js';
import { claimSelection } from './queue.js';
import { queuedJobFromRow } from './rows.js';

interface Pair {
  buyerId: string;
  priority: number;
}

/** The first pair after (buyerId, priority), in (buyer_id, priority) order. */
async function nextPair(ctx: StoreContext, after: Pair): Promise<Pair | undefined> {
  const same = await ctx.db
    .selectFrom('jobs')
    .select(['buyer_id', 'priority'])
    .where('state', '=', 'queued')
    .where('buyer_id', '=', after.buyerId)
    .where('priority', '>', after.priority)
    .orderBy('priority')
    .limit(1)
    .executeTakeFirst();
  const row =
    same ??
    (await ctx.db
      .selectFrom('jobs')
      .select(['buyer_id', 'priority'])
      .where('state', '=', 'queued')
      .where('buyer_id', '>', after.buyerId)
      .orderBy('buyer_id')
      .orderBy('priority')
      .limit(1)
      .executeTakeFirst());
  return row ? { buyerId: row.buyer_id, priority: Number(row.priority) } : undefined;
}

/** Up to `limit` pairs with queued jobs: from the first buyer >= fromBuyer to the end, then from the start. */
async function pairs(ctx: StoreContext, limit: number, fromBuyer: string): Promise<Pair[]> {
  const out: Pair[] = [];
  // Priority -1 sorts before every class, so the cursor's own buyer is included.
  let cursor: Pair = { buyerId: fromBuyer, priority: -1 };
  while (out.length < limit) {
    const p = await nextPair(ctx, cursor);
    if (!p) break;
    out.push(p);
    cursor = p;
  }
  if (fromBuyer === '') return out;
  cursor = { buyerId: '', priority: -1 };
  while (out.length < limit) {
    const p = await nextPair(ctx, cursor);
    if (!p || p.buyerId >= fromBuyer) break;
    out.push(p);
    cursor = p;
  }
  return out;
}

export async function claimQueuedFair(ctx: StoreContext, now: number, limit: number, fromBuyer = ''): Promise<JobRecord[]> {
  const n = Math.max(0, Math.floor(limit));
  if (n === 0) return [];
  const found = await pairs(ctx, n, fromBuyer);
  if (found.length === 0) return [];
  const per = Math.ceil(n / found.length);
  const out: JobRecord[] = [];
  const full: Array<{ pair: Pair; last: JobRecord }> = [];
  for (const p of found) {
    const rows = await duePairJobs(ctx, p, now, per);
    for (const r of rows) out.push(queuedJobFromRow(r));
    const last = out.at(-1);
    if (rows.length === per && last) full.push({ pair: p, last });
  }
  // Shares a pair left unused go, in one more round, to the pairs that filled theirs.
  const left = n - out.length;
  if (left > 0 && full.length > 0) {
    const more = Math.ceil(left / full.length);
    for (const f of full) for (const r of await duePairJobs(ctx, f.pair, now, more, f.last)) out.push(queuedJobFromRow(r));
  }
  return out;
}

/** A pair's oldest due jobs (after `after` in (created_at, id) order when given). */
function duePairJobs(ctx: StoreContext, p: Pair, now: number, limit: number, after?: JobRecord) {
  return claimSelection(ctx.db)
    .where('state', '=', 'queued')
    .where('buyer_id', '=', p.buyerId)
    .where('priority', '=', p.priority)
    .$if(after !== undefined, (qb) =>
      qb.where((eb) => eb.or([eb('created_at', '>', (after as JobRecord).createdAt), eb.and([eb('created_at', '=', (after as JobRecord).createdAt), eb('id', '>', (after as JobRecord).id)])])),
    )
    .where((eb) => eb.or([eb('run_after', 'is', null), eb('run_after', '<=', now)]))
    .where('cancel_requested', '=', 0)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export async function queueStanding(ctx: StoreContext, jobId: string, now: number): Promise<QueueStanding | undefined> {
  const job = await ctx.db.selectFrom('jobs').select(['buyer_id', 'priority', 'created_at', 'state']).where('id', '=', jobId).executeTakeFirst();
  if (job?.state !== 'queued') return undefined;
  const at = Number(job.created_at);
  const due = ctx.db
    .selectFrom('jobs')
    .where('state', '=', 'queued')
    .where('cancel_requested', '=', 0)
    .where((eb) => eb.or([eb('run_after', 'is', null), eb('run_after', '<=', now)]));
  const ahead = await due
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('buyer_id', '=', job.buyer_id)
    .where('priority', '=', job.priority)
    .where((eb) => eb.or([eb('created_at', '<', at), eb.and([eb('created_at', '=', at), eb('id', '<', jobId)])]))
    .executeTakeFirstOrThrow();
  const rows = await due
    .select((eb) => ['buyer_id', 'priority', eb.fn.countAll<number>().as('n')])
    .groupBy(['buyer_id', 'priority'])
    .execute();
  return {
    buyerId: job.buyer_id,
    priorityRank: Number(job.priority),
    aheadInPair: Number(ahead.n),
    pairs: rows.map((r) => ({ buyerId: r.buyer_id, priorityRank: Number(r.priority), due: Number(r.n) })),
  };
}
