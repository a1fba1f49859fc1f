/**
 * Equivocation (TRUST.md layer 2, penalties table): a node signed two different result commitments for one
 * attempt. In one transaction: both commitments are stored as evidence, the node's whole stake moves to
 * the treasury (a slash), and the node is banned: removed, its active leases end now, and it may never
 * register again. Idempotent on (attempt, second commitment): the same pair again records nothing.
 *
 * Lock order: the node row, then its attempts (the order of heartbeat, registerNode and enrollment
 * revocation). The ended attempt is read unlocked: an ended attempt's commitment never changes.
 */
import { ACCOUNTS, type EquivocationRecord } from '@gpux/core';
import { sha256Hex } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { insertEvents } from './events.js';
import type { Database, EquivocationsTable } from './schema.js';
import { slashIn } from './stake.js';

export const EQUIVOCATION_REASON = 'equivocation';

function fromRow(r: Selectable<EquivocationsTable>): EquivocationRecord {
  return {
    id: r.id,
    nodeId: r.node_id,
    attemptId: r.attempt_id,
    jobId: r.job_id,
    first: { commitment: r.first_commitment, signature: r.first_signature },
    second: { commitment: r.second_commitment, signature: r.second_signature },
    slashed: Number(r.slashed),
    transferId: r.transfer_id,
    at: Number(r.at),
  };
}

/** The evidence id: derived from the pair, so a repeat finds the same row. */
export function equivocationId(attemptId: string, secondCommitment: string): string {
  return `eq-${sha256Hex(`${attemptId}\n${secondCommitment}`).slice(0, 24)}`;
}

export function recordEquivocation(
  ctx: StoreContext,
  q: { attemptId: string; nodeId: string; commitment: string; signature: string; now: number },
): Promise<EquivocationRecord | null> {
  return inTx(ctx, async (trx) => {
    const a = await trx.selectFrom('attempts').select(['id', 'job_id', 'node_id', 'commitment', 'commitment_signature']).where('id', '=', q.attemptId).executeTakeFirst();
    if (!a || a.node_id !== q.nodeId || !a.commitment || !a.commitment_signature || a.commitment === q.commitment) return null;
    const id = equivocationId(q.attemptId, q.commitment);
    const node = await trx
      .selectFrom('nodes')
      .select(['id'])
      .where('id', '=', q.nodeId)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!node) return null;
    const inserted = await trx
      .insertInto('equivocations')
      .values({
        id,
        node_id: q.nodeId,
        attempt_id: q.attemptId,
        job_id: a.job_id,
        first_commitment: a.commitment,
        first_signature: a.commitment_signature,
        second_commitment: q.commitment,
        second_signature: q.signature,
        second_digest: sha256Hex(q.commitment),
        slashed: 0,
        transfer_id: null,
        at: q.now,
      })
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) return null;
    const transfer = await slashIn(trx, ctx, {
      nodeId: q.nodeId,
      to: [{ account: ACCOUNTS.treasury, amount: Number.MAX_SAFE_INTEGER }],
      reason: EQUIVOCATION_REASON,
      jobId: a.job_id,
      evidenceId: id,
      now: q.now,
    });
    const slashed = transfer.postings.filter((p) => p.account === ACCOUNTS.treasury).reduce((s, p) => s + Math.max(0, p.amount), 0);
    const row = await trx.updateTable('equivocations').set({ slashed, transfer_id: transfer.id }).where('id', '=', id).returningAll().executeTakeFirstOrThrow();
    // 0010: every penalty is listed from one table (GET /v1/nodes/:id/penalties); the evidence id is the penalty id.
    await trx
      .insertInto('penalties')
      .values({
        id,
        node_id: q.nodeId,
        kind: 'equivocation',
        job_id: a.job_id,
        attempt_id: q.attemptId,
        evidence: JSON.stringify({ first: { commitment: a.commitment, signature: a.commitment_signature }, second: { commitment: q.commitment, signature: q.signature } }),
        transfer_id: transfer.id,
        slashed,
        fee: 0,
        banned: 1,
        suspended: 0,
        reason: 'equivocation: two different signed commitments for one attempt; all stake slashed, banned',
        at: q.now,
      })
      .execute();
    await trx
      .updateTable('nodes')
      .set({ removed_at: q.now, status: 'offline', banned_at: q.now, banned_reason: EQUIVOCATION_REASON })
      .where('id', '=', q.nodeId)
      .execute();
    // Its leases end now: the node can no longer renew them, and expireLeases ends them as lost.
    await trx.updateTable('attempts').set({ lease_expires_at: q.now - 1 }).where('node_id', '=', q.nodeId).where('state', 'in', ['assigned', 'running']).execute();
    await insertEvents(trx, ctx, [
      { at: q.now, subject: 'node', subjectId: q.nodeId, type: 'node.equivocated', data: { evidenceId: id, attemptId: q.attemptId, jobId: a.job_id, slashed } },
      { at: q.now, subject: 'node', subjectId: q.nodeId, type: 'node.removed', data: { reason: EQUIVOCATION_REASON, evidenceId: id } },
    ]);
    return fromRow(row);
  });
}

export async function listEquivocations(ctx: StoreContext, nodeId: string): Promise<EquivocationRecord[]> {
  const rows = await ctx.db.selectFrom('equivocations').selectAll().where('node_id', '=', nodeId).orderBy('at', 'desc').orderBy('id').limit(1000).execute();
  return rows.map(fromRow);
}

/** True when the node was banned (it may not register again). */
export async function isBanned(db: Kysely<Database>, nodeId: string): Promise<boolean> {
  const row = await db.selectFrom('nodes').select('banned_at').where('id', '=', nodeId).executeTakeFirst();
  return row?.banned_at !== null && row?.banned_at !== undefined;
}
