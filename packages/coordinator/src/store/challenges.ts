/**
 * Proof-of-hardware challenges (core store/challenges.ts ChallengePort): issue, digests, verdict, expiry,
 * due re-checks. Each verb is one transaction that writes the challenge row, the node's proof columns and
 * their events together. Lock order: node row, then its challenge row. The partial unique index
 * challenges_open keeps one open challenge per node however issues race.
 */
import { type ChallengeDigestsInput, type ChallengeDigestsResult, type ChallengeRecord, type ChallengeState, type ChallengeVerdictInput, GpuxError, type NewChallenge, type NodeRecord } from '@gpux/core';
import type { Kysely, Selectable } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import { nodeFromRow } from './rows.js';
import type { ChallengesTable, Database } from './schema.js';

type ChallengeRow = Selectable<ChallengesTable>;
const OPEN = ['pending', 'digested'] as const;
const num = (v: number | null): number | null => (v === null ? null : Number(v));

export function challengeFromRow(r: ChallengeRow): ChallengeRecord {
  return {
    id: r.id,
    nodeId: r.node_id,
    providerId: r.provider_id,
    seed: r.seed,
    n: Number(r.n),
    products: Number(r.products),
    rowBlock: Number(r.row_block),
    gpuIndices: JSON.parse(r.gpu_indices),
    claimedClass: r.class,
    issuedAt: Number(r.issued_at),
    deadlineAt: Number(r.deadline_at),
    state: r.state as ChallengeState,
    runner: r.runner,
    digests: r.digests === null ? null : JSON.parse(r.digests),
    digestedAt: num(r.digested_at),
    reveal: r.reveal === null ? null : JSON.parse(r.reveal),
    revealBy: num(r.reveal_by),
    reason: r.reason,
    score: r.score === null ? null : Number(r.score),
    decidedAt: num(r.decided_at),
  };
}

export function issueChallenges(ctx: StoreContext, items: NewChallenge[], now: number): Promise<ChallengeRecord[]> {
  if (items.length === 0) return Promise.resolve([]);
  return inTx(ctx, async (trx) => {
    const out: ChallengeRecord[] = [];
    // Node rows in id order, so two provider-wide issues never deadlock.
    for (const item of [...items].sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0))) {
      const node = await trx
        .selectFrom('nodes')
        .select(['provider_id', 'proof_state', 'removed_at', 'banned_at'])
        .where('id', '=', item.nodeId)
        .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
        .executeTakeFirst();
      if (!node || node.removed_at !== null || (node.banned_at !== null && node.banned_at !== undefined)) continue;
      const row = await trx
        .insertInto('challenges')
        .values({
          id: item.id,
          node_id: item.nodeId,
          provider_id: node.provider_id,
          seed: item.seed,
          n: item.n,
          products: item.products,
          row_block: item.rowBlock,
          gpu_indices: JSON.stringify(item.gpuIndices),
          class: item.claimedClass,
          issued_at: now,
          deadline_at: item.deadlineAt,
          state: 'pending',
          runner: null,
          digests: null,
          timings: null,
          digested_at: null,
          reveal: null,
          reveal_by: null,
          reason: null,
          score: null,
          decided_at: null,
        })
        // The node already has an open challenge (challenges_open): it keeps that one.
        .onConflict((oc) => oc.doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!row) continue;
      const reset = item.resetProof === true || node.proof_state !== 'proven';
      if (reset) await trx.updateTable('nodes').set({ proof_state: 'challenging' }).where('id', '=', item.nodeId).execute();
      await insertEvents(trx, ctx, [
        {
          at: now,
          subject: 'node',
          subjectId: item.nodeId,
          type: 'node.challenge_issued',
          data: { challengeId: item.id, class: item.claimedClass, n: item.n, products: item.products, gpus: item.gpuIndices.length, deadlineAt: item.deadlineAt, blocksDispatch: reset },
        },
      ]);
      out.push(challengeFromRow(row));
    }
    return out;
  });
}

export async function getChallenge(ctx: StoreContext, id: string): Promise<ChallengeRecord | undefined> {
  const row = await ctx.db.selectFrom('challenges').selectAll().where('id', '=', id).executeTakeFirst();
  return row && challengeFromRow(row);
}

export async function pendingChallengeOf(ctx: StoreContext, nodeId: string): Promise<ChallengeRecord | undefined> {
  const row = await ctx.db.selectFrom('challenges').selectAll().where('node_id', '=', nodeId).where('state', '=', 'pending').executeTakeFirst();
  return row && challengeFromRow(row);
}

export async function listChallenges(ctx: StoreContext, nodeId: string, limit: number): Promise<ChallengeRecord[]> {
  const rows = await ctx.db
    .selectFrom('challenges')
    .selectAll()
    .where('node_id', '=', nodeId)
    .orderBy('issued_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.max(1, Math.floor(limit)))
    .execute();
  return rows.map(challengeFromRow);
}

/**
 * The node's own challenge, locked after its node row (node, then challenge: the order issueChallenges
 * takes, whose insert waits on an open challenge row being updated). Another node's challenge reads as not
 * found: its existence is not the caller's business.
 */
async function ownChallenge(trx: Kysely<Database>, ctx: StoreContext, challengeId: string, nodeId: string): Promise<ChallengeRow> {
  const notFound = () => new GpuxError('NOT_FOUND', `no challenge ${challengeId} for node ${nodeId}: answer the challenge your heartbeat response carried`);
  const first = await trx.selectFrom('challenges').select('node_id').where('id', '=', challengeId).executeTakeFirst();
  if (!first || first.node_id !== nodeId) throw notFound();
  return lockChallenge(trx, ctx, challengeId, nodeId);
}

async function lockChallenge(trx: Kysely<Database>, ctx: StoreContext, challengeId: string, nodeId: string): Promise<ChallengeRow> {
  if (ctx.q.forUpdate) await trx.selectFrom('nodes').select('id').where('id', '=', nodeId).forUpdate().executeTakeFirst();
  return trx
    .selectFrom('challenges')
    .selectAll()
    .where('id', '=', challengeId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirstOrThrow();
}

export function recordChallengeDigests(ctx: StoreContext, input: ChallengeDigestsInput): Promise<ChallengeDigestsResult> {
  return inTx(ctx, async (trx) => {
    const row = await ownChallenge(trx, ctx, input.challengeId, input.nodeId);
    if (row.state !== 'pending') throw new GpuxError('CONFLICT', `challenge ${row.id} is ${row.state}: its digests were ${row.state === 'digested' ? 'already recorded; post the reveal' : 'already judged'}`);
    if (input.now > Number(row.deadline_at)) {
      const reason = `timed out: digests arrived ${input.now - Number(row.deadline_at)} ms after the deadline (${Math.round((Number(row.deadline_at) - Number(row.issued_at)) / 1000)} s for class ${row.class})`;
      const c = await endChallenge(trx, row, { state: 'expired', reason, now: input.now, score: null });
      const node = await failNode(trx, ctx, row, reason, input.now, input.retryAt);
      return { ok: false, challenge: c, node };
    }
    const updated = await trx
      .updateTable('challenges')
      .set({
        state: 'digested',
        runner: input.runner,
        digests: JSON.stringify(input.digests),
        timings: JSON.stringify({ observedMs: input.now - Number(row.issued_at), gpus: input.digests.map((g) => ({ index: g.index, computeMs: g.computeMs, totalMs: g.totalMs })) }),
        digested_at: input.now,
        reveal: JSON.stringify(input.reveal),
        reveal_by: input.revealBy,
      })
      .where('id', '=', row.id)
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ok: true, challenge: challengeFromRow(updated) };
  });
}

export function recordChallengeVerdict(ctx: StoreContext, v: ChallengeVerdictInput): Promise<{ challenge: ChallengeRecord; node: NodeRecord }> {
  return inTx(ctx, async (trx) => {
    const row = await ownChallenge(trx, ctx, v.challengeId, v.nodeId);
    if (row.state !== 'digested') throw new GpuxError('CONFLICT', `challenge ${row.id} is ${row.state}: ${row.state === 'pending' ? 'post its digests first' : 'it was already judged'}`);
    if (v.outcome === 'failed') {
      const reason = v.reason ?? 'failed';
      const challenge = await endChallenge(trx, row, { state: 'failed', reason, now: v.now, score: v.score });
      return { challenge, node: await failNode(trx, ctx, row, reason, v.now, v.nextCheckAt) };
    }
    const challenge = await endChallenge(trx, row, { state: 'passed', reason: null, now: v.now, score: v.score });
    const node = await trx
      .updateTable('nodes')
      .set({ proof_state: 'proven', proven_class: v.provenClass, proof_score: v.score, proven_at: v.now, proof_reason: null, next_check_at: v.nextCheckAt })
      .where('id', '=', row.node_id)
      .returningAll()
      .executeTakeFirstOrThrow();
    await insertEvents(trx, ctx, [{ at: v.now, subject: 'node', subjectId: row.node_id, type: 'node.proven', data: { challengeId: row.id, class: v.provenClass, score: v.score, nextCheckAt: v.nextCheckAt } }]);
    return { challenge, node: nodeFromRow(node) };
  });
}

async function endChallenge(trx: Kysely<Database>, row: ChallengeRow, e: { state: ChallengeState; reason: string | null; now: number; score: number | null }): Promise<ChallengeRecord> {
  const updated = await trx
    .updateTable('challenges')
    .set({ state: e.state, reason: e.reason, score: e.score, decided_at: e.now })
    .where('id', '=', row.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return challengeFromRow(updated);
}

/** A failed or timed-out challenge blocks dispatch with the reason on the node (TRUST.md: no slash). */
async function failNode(trx: Kysely<Database>, ctx: StoreContext, row: ChallengeRow, reason: string, now: number, nextCheckAt: number): Promise<NodeRecord> {
  const node = await trx
    .updateTable('nodes')
    .set({ proof_state: 'failed', proven_class: null, proof_score: null, proof_reason: `challenge ${row.id} ${reason}`, next_check_at: nextCheckAt })
    .where('id', '=', row.node_id)
    .returningAll()
    .executeTakeFirstOrThrow();
  await insertEvents(trx, ctx, [{ at: now, subject: 'node', subjectId: row.node_id, type: 'node.proof_failed', data: { challengeId: row.id, class: row.class, reason, nextCheckAt } }]);
  return nodeFromRow(node);
}

export function expireChallenges(ctx: StoreContext, now: number, retryMs: number, limit: number): Promise<NodeRecord[]> {
  return inTx(ctx, async (trx) => {
    const late = await trx
      .selectFrom('challenges')
      .select(['id', 'node_id'])
      .where((eb) => eb.or([eb.and([eb('state', '=', 'pending'), eb('deadline_at', '<', now)]), eb.and([eb('state', '=', 'digested'), eb('reveal_by', '<', now)])]))
      .orderBy('node_id')
      .limit(Math.max(1, Math.floor(limit)))
      .execute();
    const nodes: NodeRecord[] = [];
    for (const c of late) {
      const row = await lockChallenge(trx, ctx, c.id, c.node_id);
      if (row.state !== 'pending' && row.state !== 'digested') continue; // judged meanwhile
      const reason = row.state === 'pending' ? `timed out: no digests by the deadline (${Math.round((Number(row.deadline_at) - Number(row.issued_at)) / 1000)} s for class ${row.class})` : 'timed out: the reveal did not arrive in time';
      await endChallenge(trx, row, { state: 'expired', reason, now, score: null });
      nodes.push(await failNode(trx, ctx, row, reason, now, now + retryMs));
    }
    return nodes;
  });
}

export async function dueChallengeNodes(ctx: StoreContext, q: { now: number; unproven: boolean; limit: number }): Promise<NodeRecord[]> {
  const rows = await ctx.db
    .selectFrom('nodes')
    .selectAll()
    .where('status', '=', 'online')
    .where('removed_at', 'is', null)
    .where('banned_at', 'is', null)
    .where((eb) => {
      const due = eb('next_check_at', '<=', q.now);
      return q.unproven ? eb.or([due, eb('proof_state', 'in', ['unproven', 'skipped', 'challenging'])]) : due;
    })
    .where((eb) => eb.not(eb.exists(eb.selectFrom('challenges').select('challenges.id').whereRef('challenges.node_id', '=', 'nodes.id').where('challenges.state', 'in', [...OPEN]))))
    .orderBy('id')
    .limit(Math.max(1, Math.floor(q.limit)))
    .execute();
  return rows.map(nodeFromRow);
}

export async function liveNodesOfProvider(ctx: StoreContext, providerId: string, limit: number): Promise<NodeRecord[]> {
  const rows = await ctx.db
    .selectFrom('nodes')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('removed_at', 'is', null)
    .where('banned_at', 'is', null)
    .where('status', '=', 'online')
    .orderBy('id')
    .limit(Math.max(1, Math.floor(limit)))
    .execute();
  return rows.map(nodeFromRow);
}

export async function skipProof(ctx: StoreContext, nodeId: string): Promise<void> {
  await ctx.db.updateTable('nodes').set({ proof_state: 'skipped' }).where('id', '=', nodeId).where('proof_state', '=', 'unproven').execute();
}
