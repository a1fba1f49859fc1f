/**
 * The queue side of jobs: claim queued jobs and write a scheduling pass (attempts + leases, and with a
 * market each attempt's price and its node's stake lock) in one transaction.
 */
import { ACCOUNTS, type AttemptRecord, type JobRecord, type Placement } from '@gpux/core';
import { type Insertable, type Kysely, sql } from 'kysely';
import { fitAtCommit } from './assign-fit.js';
import { chunks, inTx, type StoreContext } from './context.js';
import { insertEvents, type NewEvent } from './events.js';
import { balanceIn } from './ledger.js';
import { type AttemptRow, attemptFromRow, priceColumns, queuedJobFromRow } from './rows.js';
import type { AttemptsTable, Database } from './schema.js';

/** Every jobs column a claim reads: all but spec_payload. */
const CLAIM_COLUMNS = [
  'id',
  'buyer_id',
  'name',
  'state',
  'spec',
  'idempotency_key',
  'attempt_count',
  'current_attempt_id',
  'run_after',
  'exit_code',
  'error',
  'cancel_requested',
  'avoid_node_ids',
  'priority',
  'pay_asset',
  'pay_cap',
  'pay_units',
  'pay_held',
  'created_at',
  'updated_at',
  'started_at',
  'finished_at',
  // 0010: a check run's kind and the operators it avoids (the placement of audits and referees).
  'kind',
  'check_of',
  'avoid_provider_ids',
  'hold_pay',
  'verify_window_ms',
  'audit_floor_bps',
] as const;

/**
 * The columns of a claim: the job without its spec's payload. `spec` is the scheduling view (since
 * migration 0007; a finished job from before keeps its whole spec there, which queuedJobFromRow trims).
 */
export function claimSelection(db: Kysely<Database>) {
  return db.selectFrom('jobs').select(CLAIM_COLUMNS);
}

/** Queued jobs due at `now` with no cancel request, oldest first (index jobs_claim, no sort). Reads only; assign() decides. */
export async function claimQueued(ctx: StoreContext, now: number, limit: number): Promise<JobRecord[]> {
  const rows = await claimSelection(ctx.db)
    .where('state', '=', 'queued')
    .where((eb) => eb.or([eb('run_after', 'is', null), eb('run_after', '<=', now)]))
    .where('cancel_requested', '=', 0)
    .orderBy('created_at')
    .orderBy('id')
    .limit(Math.max(0, Math.floor(limit)))
    .execute();
  return rows.map(queuedJobFromRow);
}

/** The members of a gang placement that belong together (same leader), if they are complete. */
function gangMembers(placements: readonly Placement[], rep: Placement): Placement[] | undefined {
  const leader = rep.gang?.leaderAttemptId;
  const members = placements.filter((p) => p.jobId === rep.jobId && p.gang?.leaderAttemptId === leader);
  return members.length === rep.gang?.worldSize ? members : undefined;
}

/**
 * The placements (one representative per job, in job id order) whose nodes' free stake covers their
 * price.stakeLock: free = stake:<node> − the stake locks of the node's active attempts − the locks of the
 * placements taken before in this pass. A gang needs every member's node covered, or none is taken. Only
 * jobs still queued count (a placement that will be skipped anyway locks nothing). The stake rows are
 * locked (PostgreSQL, in node order) so two passes cannot both spend the same free stake.
 */
async function coveredByStake(
  trx: Kysely<Database>,
  ctx: StoreContext,
  reps: readonly Placement[],
  members: ReadonlyMap<string, Placement[]>,
): Promise<Placement[]> {
  const all = (rep: Placement) => (rep.gang ? (members.get(rep.jobId) ?? []) : [rep]);
  const priced = reps.filter((rep) => all(rep).some((p) => p.price));
  if (priced.length === 0) return [...reps];
  const queued = new Set<string>();
  for (const part of chunks(priced.map((p) => p.jobId), 1, ctx.q)) {
    const rows = await trx.selectFrom('jobs').select('id').where('id', 'in', part).where('state', '=', 'queued').where('cancel_requested', '=', 0).execute();
    for (const r of rows) queued.add(r.id);
  }
  const nodeIds = [...new Set(priced.filter((rep) => queued.has(rep.jobId)).flatMap((rep) => all(rep).filter((p) => p.price).map((p) => p.nodeId)))].sort();
  const free = new Map<string, number>();
  for (const nodeId of nodeIds) free.set(nodeId, await balanceIn(trx, ctx, ACCOUNTS.stake(nodeId), 'usdc', true));
  for (const part of chunks(nodeIds, 1, ctx.q)) {
    const locked = await trx
      .selectFrom('attempts')
      .select((eb) => ['node_id', eb.fn.sum<number>('price_stake_lock').as('locked')])
      .where('state', 'in', ['assigned', 'running'])
      .where('node_id', 'in', part)
      .where('price_stake_lock', 'is not', null)
      .groupBy('node_id')
      .execute();
    for (const r of locked) free.set(r.node_id, (free.get(r.node_id) ?? 0) - Number(r.locked));
  }
  const out: Placement[] = [];
  for (const rep of reps) {
    const ps = all(rep).filter((p) => p.price);
    if (ps.length === 0) {
      out.push(rep);
      continue;
    }
    if (!queued.has(rep.jobId)) continue;
    const need = new Map<string, number>();
    for (const p of ps) need.set(p.nodeId, (need.get(p.nodeId) ?? 0) + (p.price?.stakeLock ?? 0));
    if ([...need].some(([nodeId, n]) => (free.get(nodeId) ?? 0) < n)) continue;
    for (const [nodeId, n] of need) free.set(nodeId, (free.get(nodeId) ?? 0) - n);
    out.push(rep);
  }
  return out;
}

/**
 * Each job moves queued -> assigned with one conditional UPDATE (… WHERE state = 'queued'); only the jobs it
 * changed get an attempt, so two coordinators racing on the same jobs never write two attempts for one job.
 * On PostgreSQL the jobs are first locked in id order so concurrent passes cannot deadlock.
 */
export function assign(ctx: StoreContext, placements: Placement[], now: number): Promise<AttemptRecord[]> {
  if (placements.length === 0) return Promise.resolve([]);
  return inTx(ctx, (trx) => assignIn(trx, ctx, placements, now));
}

/** assign inside the caller's transaction (a forward, store forwards.ts, writes its attempt this way). */
export async function assignIn(trx: Kysely<Database>, ctx: StoreContext, placements: Placement[], now: number): Promise<AttemptRecord[]> {
  if (placements.length === 0) return [];
  const byJob = new Map<string, Placement>();
  for (const p of placements) if (!byJob.has(p.jobId)) byJob.set(p.jobId, p); // a job placed twice: first wins
  // A gang is written whole or not at all: an incomplete one is skipped.
  const members = new Map<string, Placement[]>();
  for (const rep of byJob.values()) {
    if (!rep.gang) continue;
    const m = gangMembers(placements, rep);
    if (m) members.set(rep.jobId, m);
    else byJob.delete(rep.jobId);
  }
  const sorted = [...byJob.values()].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
  const covered = await fitAtCommit(trx, ctx, await coveredByStake(trx, ctx, sorted, members), members);
  const won = new Set<string>();
  for (const batch of chunks(covered, 3, ctx.q)) {
    let ids = batch.map((p) => p.jobId);
    if (ctx.q.forUpdate) {
      const locked = await trx
        .selectFrom('jobs')
        .select('id')
        .where('id', 'in', ids)
        .where('state', '=', 'queued')
        .where('cancel_requested', '=', 0)
        .orderBy('id')
        .forUpdate()
        .execute();
      ids = locked.map((r) => r.id);
      if (ids.length === 0) continue;
    }
    const attemptOf = sql<string>`case ${sql.ref('id')} ${sql.join(
      batch.map((p) => sql`when ${p.jobId} then ${p.gang?.leaderAttemptId ?? p.attemptId}`),
      sql` `,
    )} end`;
    const updated = await trx
      .updateTable('jobs')
      .set({ state: 'assigned', attempt_count: sql`attempt_count + 1`, current_attempt_id: attemptOf, run_after: null, updated_at: now })
      .where('id', 'in', ids)
      .where('state', '=', 'queued')
      .where('cancel_requested', '=', 0)
      .returning('id')
      .execute();
    for (const r of updated) won.add(r.id);
  }
  // Columns later migrations add take their defaults; the attempts are read back whole from the insert.
  const rows: Insertable<AttemptsTable>[] = [];
  const events: NewEvent[] = [];
  for (const p of placements) {
    if (!won.has(p.jobId)) continue;
    if (p.gang ? !members.get(p.jobId)?.includes(p) : byJob.get(p.jobId) !== p) continue;
    rows.push({
      id: p.attemptId,
      job_id: p.jobId,
      node_id: p.nodeId,
      state: 'assigned',
      gpu_indices: JSON.stringify(p.gpuIndices),
      exit_code: null,
      error: null,
      output_digest: null,
      metrics: null,
      lease_expires_at: p.leaseExpiresAt,
      created_at: now,
      started_at: null,
      finished_at: null,
      gang_leader: p.gang?.leaderAttemptId ?? null,
      gang: p.gang ? JSON.stringify({ rank: p.gang.rank, worldSize: p.gang.worldSize, peers: p.gang.peers }) : null,
      ...priceColumns(p.price),
      settled_charged: 0,
      settled_fee: 0,
      settled_ms: 0,
    });
    const data: Record<string, unknown> = { attemptId: p.attemptId, nodeId: p.nodeId, gpuIndices: p.gpuIndices, leaseExpiresAt: p.leaseExpiresAt };
    if (p.gang) Object.assign(data, { rank: p.gang.rank, worldSize: p.gang.worldSize });
    events.push({ at: now, subject: 'job', subjectId: p.jobId, type: 'job.assigned', data });
    // A check run's node was drawn at random among the eligible ones: the draw is on record (TRUST.md layer 5).
    if (p.check) events.push({ at: now, subject: 'job', subjectId: p.jobId, type: `${p.check.kind}.placed`, data: { nodeId: p.nodeId, candidates: p.check.candidates, draw: p.check.draw } });
  }
  const written: AttemptRow[] = [];
  for (const batch of chunks(rows, 15, ctx.q)) written.push(...(await trx.insertInto('attempts').values(batch).returningAll().execute()));
  await insertEvents(trx, ctx, events);
  return written.map(attemptFromRow);
}
