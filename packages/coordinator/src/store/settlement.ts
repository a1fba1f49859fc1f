/**
 * Job money inside the job verbs' transactions (core market/settlement.ts has the arithmetic):
 * - holdEscrowIn: wallet → escrow:<job> at submission;
 * - settleAttemptIn: one settlement step of an attempt (escrow → provider wallet + treasury), up to its
 *   runtime at `now`; the final step of an ended attempt and the chunks of running ones are the same step;
 * - jobMoneyAfterDecision: after an attempt end moved a job, release a finished job's escrow, or top a
 *   requeued job's escrow up to payment.held (turning the transition into a failure when the wallet is short);
 * - releaseEscrowIn: escrow remainder → the buyer's wallet;
 * - settleRunning: the periodic chunk settlement of running priced attempts.
 * Jobs without payment and attempts without price move no money and cost no extra query.
 *
 * An attempt is charged for its runtime up to `now`, or up to its stop_by (cancel + grace) when its job's
 * cancel was requested. The fee carries its rounding remainder per (provider, asset) in fee_carry (core
 * feeWithCarry); a settlement locks the treasury's balance row and then that carry row before it posts, in
 * that order everywhere, so two settling transactions never wait on each other's carry rows.
 */
import { ACCOUNTS, type AttemptPriceRecord, type JobPaymentRecord, type JobRecord, type JobTransition, move, type NewJob, settlementStep } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import { type Kysely, sql } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import { insertEvents, type NewEvent } from './events.js';
import { balanceIn, insufficientFunds, postTransferIn } from './ledger.js';
import { type AttemptRow, attemptPriceFromRow } from './rows.js';
import type { Database } from './schema.js';

/** Post the submission hold of a job that carries payment (INSUFFICIENT_FUNDS propagates; the caller rolls back). */
export async function holdEscrowIn(trx: Kysely<Database>, job: NewJob): Promise<void> {
  const p = job.payment;
  if (!p || p.held <= 0) return;
  const nodes = job.spec.nodes ?? 1;
  await postTransferIn(trx, {
    kind: 'escrow.hold',
    postings: move(p.asset, ACCOUNTS.wallet(job.buyerId), [{ account: ACCOUNTS.escrow(job.id), amount: p.held }]),
    at: job.now,
    memo: `hold for job ${job.id}: cap ${formatAmount(p.capPerUnitHour, p.asset)} × ${p.units} units × ${nodes} nodes × ${job.spec.timeoutSeconds} s`,
    jobId: job.id,
  });
}

/** Release what the job's escrow still holds to the buyer. Returns the event (none when the escrow is empty). */
export async function releaseEscrowIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  job: { id: string; buyerId: string },
  asset: Asset,
  now: number,
  why: string,
): Promise<NewEvent[]> {
  const escrow = ACCOUNTS.escrow(job.id);
  const left = await balanceIn(trx, ctx, escrow, asset, true);
  if (left <= 0) return [];
  await postTransferIn(trx, {
    kind: 'escrow.release',
    postings: move(asset, escrow, [{ account: ACCOUNTS.wallet(job.buyerId), amount: left }]),
    at: now,
    memo: `release of job ${job.id} (${why}): ${formatAmount(left, asset)} back to the buyer`,
    jobId: job.id,
  });
  return [{ at: now, subject: 'job', subjectId: job.id, type: 'job.escrow_released', data: { amount: left } }];
}

/**
 * Lock the treasury's balance row, then the provider's fee carry row (creating either if missing), and
 * return the carry. The do-nothing updates are what take the row locks on PostgreSQL.
 */
async function lockFeeCarryIn(trx: Kysely<Database>, price: AttemptPriceRecord): Promise<number> {
  await trx
    .insertInto('ledger_balances')
    .values({ account: ACCOUNTS.treasury, asset: price.asset, balance: 0 })
    .onConflict((oc) => oc.columns(['account', 'asset']).doUpdateSet((eb) => ({ balance: eb.ref('ledger_balances.balance') })))
    .execute();
  const row = await trx
    .insertInto('fee_carry')
    .values({ provider_id: price.providerId, asset: price.asset, carry: 0 })
    .onConflict((oc) => oc.columns(['provider_id', 'asset']).doUpdateSet((eb) => ({ carry: eb.ref('fee_carry.carry') })))
    .returning('carry')
    .executeTakeFirstOrThrow();
  return Number(row.carry);
}

/** The runtime attempt `a` is charged for at `now`: up to now, or up to its stop_by (cancel + grace). */
export function billableMs(a: Pick<AttemptRow, 'started_at' | 'stop_by'>, now: number): number {
  if (a.started_at === null) return 0;
  const until = a.stop_by === null || a.stop_by === undefined ? now : Math.min(now, Number(a.stop_by));
  return Math.max(0, until - Number(a.started_at));
}

/**
 * Settle attempt `a` up to its billable runtime at `now` (billableMs; nothing if it never started): charge
 * the difference between the cumulative charge and what it has settled, as far as the escrow holds, with
 * the fee carried per provider, and record the new totals on the attempt. Returns the attempt row as
 * written and the job.charged event.
 */
export async function settleAttemptIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  a: AttemptRow,
  timeoutSeconds: number,
  now: number,
): Promise<{ row: AttemptRow; events: NewEvent[] }> {
  const price = attemptPriceFromRow(a);
  if (!price || a.started_at === null) return { row: a, events: [] };
  const ms = billableMs(a, now);
  const settledMs = Number(a.settled_ms);
  if (ms <= settledMs) return { row: a, events: [] };
  const escrow = ACCOUNTS.escrow(a.job_id);
  const escrowLeft = await balanceIn(trx, ctx, escrow, price.asset, true);
  const already = { charged: Number(a.settled_charged), fee: Number(a.settled_fee) };
  const q = { pricePerUnitHour: price.pricePerUnitHour, units: price.units, timeoutSeconds, feeBps: price.feeBps };
  let step = settlementStep(q, already, ms, escrowLeft);
  const events: NewEvent[] = [];
  if (step.charge > 0) {
    if (price.feeBps > 0) {
      step = settlementStep(q, already, ms, escrowLeft, await lockFeeCarryIn(trx, price));
      await trx.updateTable('fee_carry').set({ carry: step.carry }).where('provider_id', '=', price.providerId).where('asset', '=', price.asset).execute();
    }
    await postTransferIn(trx, {
      kind: 'settlement',
      postings: move(price.asset, escrow, [
        { account: ACCOUNTS.wallet(price.providerId), amount: step.provider },
        { account: ACCOUNTS.treasury, amount: step.fee },
      ]),
      at: now,
      memo: `attempt ${a.id}: ${ms - settledMs} ms at ${formatAmount(price.pricePerUnitHour, price.asset)} per unit-hour × ${price.units}`,
      jobId: a.job_id,
      attemptId: a.id,
      nodeId: a.node_id,
    });
    events.push({
      at: now,
      subject: 'job',
      subjectId: a.job_id,
      type: 'job.charged',
      data: { attemptId: a.id, asset: price.asset, charge: step.charge, fee: step.fee, provider: step.provider },
    });
  }
  const row = await trx
    .updateTable('attempts')
    .set({ settled_charged: already.charged + step.charge, settled_fee: already.fee + step.fee, settled_ms: ms })
    .where('id', '=', a.id)
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, events };
}

/**
 * The job's money once `decide` chose `t` (called before the job row is written): a terminal job's escrow
 * goes back to the buyer; a requeued job's escrow is topped up to payment.held from the buyer's wallet, and
 * when the wallet cannot cover it the job fails instead (and its escrow is released). Returns the
 * transition to apply and the events to write after the job's own.
 */
export async function jobMoneyAfterDecision(
  trx: Kysely<Database>,
  ctx: StoreContext,
  job: JobRecord & { payment: JobPaymentRecord },
  t: JobTransition,
  now: number,
): Promise<{ t: JobTransition; events: NewEvent[] }> {
  const { asset, held } = job.payment;
  if (t.state === 'queued') {
    const escrow = ACCOUNTS.escrow(job.id);
    const need = held - (await balanceIn(trx, ctx, escrow, asset, true));
    if (need <= 0) return { t, events: [] };
    const wallet = ACCOUNTS.wallet(job.buyerId);
    const has = await balanceIn(trx, ctx, wallet, asset, true);
    if (has >= need) {
      await postTransferIn(trx, {
        kind: 'escrow.topup',
        postings: move(asset, wallet, [{ account: escrow, amount: need }]),
        at: now,
        memo: `top-up of job ${job.id} for a retry: ${formatAmount(need, asset)} back to the hold of ${formatAmount(held, asset)}`,
        jobId: job.id,
      });
      return { t, events: [] };
    }
    const error = `could not top up escrow for a retry: ${insufficientFunds(wallet, asset, has, need).message}`;
    t = { state: 'failed', runAfter: null, error, exitCode: t.exitCode, avoidNode: t.avoidNode };
  }
  return { t, events: await releaseEscrowIn(trx, ctx, job, asset, now, `job ${t.state}`) };
}

/**
 * One chunk for each running priced attempt whose settled runtime is at least `minIntervalMs` behind `now`,
 * most behind first, in one transaction. On PostgreSQL attempts and jobs another transaction holds (an
 * attempt ending right now settles itself) are skipped, so this never waits on them.
 */
export function settleRunning(ctx: StoreContext, now: number, minIntervalMs: number, limit: number): Promise<number> {
  const n = Math.max(0, Math.floor(limit));
  if (n === 0) return Promise.resolve(0);
  return inTx(ctx, async (trx) => {
    const due = await trx
      .selectFrom('attempts')
      .selectAll()
      .where('state', '=', 'running')
      .where('price_asset', 'is not', null)
      .where('started_at', 'is not', null)
      .where(sql<boolean>`started_at + settled_ms <= ${now - Math.max(0, minIntervalMs)}`)
      // Settled up to its stop_by (a cancelled job's attempt): nothing more to charge, leave room for others.
      .where((eb) => eb.or([eb('stop_by', 'is', null), eb('stop_by', '>', sql<number>`started_at + settled_ms`)]))
      .orderBy(sql`started_at + settled_ms`)
      .orderBy('id')
      .limit(n)
      .$if(ctx.q.forUpdate, (qb) => (ctx.q.skipLocked ? qb.forUpdate().skipLocked() : qb.forUpdate()))
      .execute();
    let settled = 0;
    for (const a of due) {
      const job = await trx
        .selectFrom('jobs')
        .select('spec')
        .where('id', '=', a.job_id)
        .$if(ctx.q.forUpdate, (qb) => (ctx.q.skipLocked ? qb.forUpdate().skipLocked() : qb.forUpdate()))
        .executeTakeFirst();
      if (!job) continue;
      const { timeoutSeconds } = JSON.parse(job.spec) as { timeoutSeconds: number };
      const s = await settleAttemptIn(trx, ctx, a, timeoutSeconds, now);
      await insertEvents(trx, ctx, s.events);
      if (s.row !== a) settled++;
    }
    return settled;
  });
}
