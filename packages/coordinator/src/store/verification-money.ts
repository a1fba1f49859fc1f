/**
 * The verification step's money and penalties, inside the caller's transaction: held pay released
 * (pending:<attempt> → the attempt's provider, kind pay.release), a confirmed wrong result applied as one
 * ledger transfer (core penaltyPlan: pending pay forfeited, stake slashed) with its penalty row and the
 * node banned, and the node's audit history (node_audits) moved.
 */
import { ACCOUNTS, newId, penaltyAccounts, type PenaltyPlan, penaltyPlan, type Posting, recordAuditOutcome } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import { applyReputationIn } from './reputation.js';
import { type AttemptRow, attemptPriceFromRow } from './rows.js';
import type { Database } from './schema.js';

const STAKE_ASSET: Asset = 'usdc';

/** Release what each attempt's pending account holds to its provider. Returns the events. */
export async function releasePendingIn(trx: Kysely<Database>, ctx: StoreContext, attempts: readonly AttemptRow[], now: number, why: string): Promise<NewEvent[]> {
  const events: NewEvent[] = [];
  for (const a of [...attempts].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0))) {
    const price = attemptPriceFromRow(a);
    if (!price) continue;
    const pending = ACCOUNTS.pending(a.id);
    const amount = await balanceIn(trx, ctx, pending, price.asset, true);
    if (amount <= 0) continue;
    await postTransferIn(trx, {
      kind: 'pay.release',
      postings: [
        { account: pending, asset: price.asset, amount: -amount },
        { account: ACCOUNTS.wallet(price.providerId), asset: price.asset, amount },
      ],
      at: now,
      memo: `pay of attempt ${a.id} released (${why}): ${formatAmount(amount, price.asset)} to the provider`,
      jobId: a.job_id,
      attemptId: a.id,
      nodeId: a.node_id,
    });
    events.push({ at: now, subject: 'job', subjectId: a.job_id, type: 'job.pay_released', data: { attemptId: a.id, amount, asset: price.asset, why } });
  }
  return events;
}

/**
 * The node's audit history after an audit or canary outcome (TRUST.md: "audits (and canaries) passed in a
 * row"; a pass extends the run, a failure resets it), and the matching reputation event.
 */
export async function recordAuditIn(trx: Kysely<Database>, ctx: StoreContext, nodeId: string, passed: boolean, now: number, source: 'audit' | 'canary' = 'audit'): Promise<void> {
  const row = await trx
    .selectFrom('node_audits')
    .select('consecutive_passes')
    .where('node_id', '=', nodeId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
  const next = recordAuditOutcome({ consecutivePasses: Number(row?.consecutive_passes ?? 0) }, passed).consecutivePasses;
  await trx
    .insertInto('node_audits')
    .values({ node_id: nodeId, consecutive_passes: next, updated_at: now })
    .onConflict((oc) => oc.column('node_id').doUpdateSet({ consecutive_passes: next, updated_at: now }))
    .execute();
  await applyReputationIn(trx, ctx, nodeId, `${source}-${passed ? 'passed' : 'failed'}`, now);
}

/** Audits passed in a row (0 for a node never audited), locked on PostgreSQL until the transaction ends. */
export async function auditHistoryIn(trx: Kysely<Database>, ctx: StoreContext, nodeId: string): Promise<number> {
  const row = await trx
    .selectFrom('node_audits')
    .select('consecutive_passes')
    .where('node_id', '=', nodeId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
  return Number(row?.consecutive_passes ?? 0);
}

export interface WrongResultInput {
  /** wrong-result (absent): a referee confirmed it; canary-failed: a referee reproduced the canary's known answer. */
  kind?: 'wrong-result' | 'canary-failed';
  /** The attempt whose result was confirmed wrong (its node is penalized, its pending pay forfeited). */
  attempt: AttemptRow;
  /** Where the forfeited pay and the buyer's part of the slash go (the buyer's wallet; the treasury for check runs). */
  buyerAccount: string;
  reporter: 'coordinator' | 'buyer';
  /** The reporter's account id (the disputing buyer), when reporter is 'buyer'. */
  reporterId?: string;
  evidence: Record<string, unknown>;
  now: number;
}

/**
 * TRUST.md "wrong result, confirmed by a referee run": pay forfeited, min(stake, 20 × job price) slashed
 * (10% to the reporter, the rest to the buyer), banned. One transfer (kind slash, or pay.forfeit when
 * there is no stake), the penalty row with its evidence, the node removed for good and its leases ended.
 */
export async function applyWrongResultIn(trx: Kysely<Database>, ctx: StoreContext, w: WrongResultInput): Promise<{ plan: PenaltyPlan; events: NewEvent[] }> {
  const a = w.attempt;
  const price = attemptPriceFromRow(a);
  const asset = price?.asset ?? STAKE_ASSET;
  const pending = ACCOUNTS.pending(a.id);
  const pay = price ? await balanceIn(trx, ctx, pending, asset, true) : 0;
  const stake = await balanceIn(trx, ctx, ACCOUNTS.stake(a.node_id), STAKE_ASSET, true);
  const acc = {
    ...penaltyAccounts({ nodeId: a.node_id, jobId: a.job_id, buyerId: '', providerId: price?.providerId ?? '', ...(w.reporterId ? { reporterId: w.reporterId } : {}) }),
    pay: pending,
    buyer: w.buyerAccount,
  };
  const kind = w.kind ?? 'wrong-result';
  const jobPrice = Number(a.settled_charged);
  const plan = kind === 'canary-failed' ? penaltyPlan({ kind, stake, jobPrice, pay }, acc) : penaltyPlan({ kind, stake, jobPrice, pay, reporter: w.reporter }, acc);
  // Pay legs move the job's asset, slash legs the stake's (USDC): one transfer, balanced per asset.
  const postings: Posting[] = [];
  for (const l of plan.legs) {
    const legAsset = l.what === 'slash' ? STAKE_ASSET : asset;
    postings.push({ account: l.from, asset: legAsset, amount: -l.amount }, { account: l.to, asset: legAsset, amount: l.amount });
  }
  const transfer =
    postings.length > 0
      ? await postTransferIn(trx, {
          kind: plan.slashed > 0 ? 'slash' : 'pay.forfeit',
          postings,
          at: w.now,
          memo: `${kind} on job ${a.job_id}, attempt ${a.id}: ${plan.reason}`,
          jobId: a.job_id,
          attemptId: a.id,
          nodeId: a.node_id,
        })
      : null;
  const id = newId('pen', w.now, cryptoRandom);
  await trx
    .insertInto('penalties')
    .values({
      id,
      node_id: a.node_id,
      kind,
      job_id: a.job_id,
      attempt_id: a.id,
      evidence: JSON.stringify(w.evidence),
      transfer_id: transfer?.id ?? null,
      slashed: plan.slashed,
      fee: 0,
      banned: plan.ban ? 1 : 0,
      suspended: 0,
      reason: plan.reason,
      at: w.now,
    })
    .execute();
  await banNodeIn(trx, w.now, a.node_id, kind);
  await recordAuditIn(trx, ctx, a.node_id, false, w.now, kind === 'canary-failed' ? 'canary' : 'audit');
  const events: NewEvent[] = [
    { at: w.now, subject: 'node', subjectId: a.node_id, type: 'node.penalized', data: { penaltyId: id, kind, jobId: a.job_id, attemptId: a.id, slashed: plan.slashed, payForfeited: pay } },
    { at: w.now, subject: 'node', subjectId: a.node_id, type: 'node.removed', data: { reason: kind, penaltyId: id } },
  ];
  return { plan, events };
}

/** Banned like an equivocator: removed for good (may not register again), offline, its leases end now. */
export async function banNodeIn(trx: Kysely<Database>, now: number, nodeId: string, reason: string): Promise<void> {
  await trx
    .updateTable('nodes')
    .set({ removed_at: now, status: 'offline', banned_at: now, banned_reason: reason })
    .where('id', '=', nodeId)
    .where('banned_at', 'is', null)
    .execute();
  await trx.updateTable('attempts').set({ lease_expires_at: now - 1 }).where('node_id', '=', nodeId).where('state', 'in', ['assigned', 'running']).execute();
}
