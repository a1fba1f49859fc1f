/**
 * Job money inside the job verbs' transactions (core market/settlement.ts has the arithmetic, core
 * attempt-end/ the rules of an attempt's end):
 * - holdEscrowIn: wallet → escrow:<job> at submission;
 * - releaseEscrowIn: escrow remainder → the buyer's wallet (cancel while queued, queue timeout);
 * - lockFeeCarriesIn / writeFeeCarriesIn: the fee carry rows a settlement moves;
 * - settleRunning: the periodic chunk settlement of running priced attempts (core planSettlement, the same
 *   step an ending attempt's final settlement takes).
 * Jobs without payment and attempts without price move no money and cost no extra query.
 *
 * An attempt is charged for its runtime up to `now`, or up to its stop_by (cancel + grace) when its job's
 * cancel was requested. The fee carries its rounding remainder per (provider, asset) in fee_carry (core
 * feeWithCarry); a settlement locks that carry row before it posts (carry rows, then wallets, then the treasury's
 * balance row, last, in the ledger's upsert: ledger.ts), in that order everywhere.
 */
import { ACCOUNTS, type CarryKey, escrowRelease, type FeeCarry, move, type NewJob, planSettlement, settlementNeedsCarry } from '@gpux/core';
import { type Asset, formatAmount, priceUnit, unitsPhrase } from '@gpux/protocol';
import { type Kysely, sql } from 'kysely';
import { attemptFactsFromRow } from './attempt-end-rows.js';
import { inTx, type StoreContext } from './context.js';
import { insertEvents, type NewEvent } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import type { Database } from './schema.js';
import { releaseReplicaHoldIn } from './verification-jobs.js';

/** Post the submission hold of a job that carries payment (INSUFFICIENT_FUNDS propagates; the caller rolls back). */
export async function holdEscrowIn(trx: Kysely<Database>, job: NewJob): Promise<void> {
  const p = job.payment;
  if (!p || p.held <= 0) return;
  const nodes = job.spec.nodes ?? 1;
  await postTransferIn(trx, {
    kind: 'escrow.hold',
    postings: move(p.asset, ACCOUNTS.wallet(job.buyerId), [{ account: ACCOUNTS.escrow(job.id), amount: p.held }]),
    at: job.now,
    memo: `hold for job ${job.id}: cap ${formatAmount(p.capPerUnitHour, p.asset)} per ${priceUnit(job.spec.resources.gpu.count)} × ${unitsPhrase(job.spec.resources.gpu.count, p.units, nodes)} × ${job.spec.timeoutSeconds} s`,
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
  const release = escrowRelease(job, asset, await balanceIn(trx, ctx, ACCOUNTS.escrow(job.id), asset, true), now, why);
  // replicas: 2: the replica run's hold (taken at submission) goes back too, since the job ends without a result.
  const replica = await releaseReplicaHoldIn(trx, ctx, job, asset, now, why);
  if (!release) return replica;
  await postTransferIn(trx, release.transfer);
  return [release.event, ...replica];
}

/**
 * Lock each provider's fee carry row (creating any that is missing), sorted, and return the carries. The
 * do-nothing updates are what take the row locks on PostgreSQL. The treasury's balance row is not locked here:
 * every transaction takes it last (ledger.ts), so a settlement holds it only from its posting to its commit and
 * settlements of different providers run side by side (issue 14: taken here, first, it made every paid attempt
 * end on PostgreSQL wait for the one before, 228 ms on average under bench:dispatch's load).
 */
export async function lockFeeCarriesIn(trx: Kysely<Database>, keys: readonly CarryKey[]): Promise<FeeCarry[]> {
  const sorted = [...keys].sort((x, y) => cmp(x.asset, y.asset) || cmp(x.providerId, y.providerId));
  const out: FeeCarry[] = [];
  for (const k of sorted) {
    const row = await trx
      .insertInto('fee_carry')
      .values({ provider_id: k.providerId, asset: k.asset, carry: 0 })
      .onConflict((oc) => oc.columns(['provider_id', 'asset']).doUpdateSet((eb) => ({ carry: eb.ref('fee_carry.carry') })))
      .returning('carry')
      .executeTakeFirstOrThrow();
    out.push({ ...k, carry: Number(row.carry) });
  }
  return out;
}

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

export async function writeFeeCarriesIn(trx: Kysely<Database>, carries: readonly FeeCarry[]): Promise<void> {
  for (const c of carries) await trx.updateTable('fee_carry').set({ carry: c.carry }).where('provider_id', '=', c.providerId).where('asset', '=', c.asset).execute();
}

/** Record an attempt's settled totals. */
export async function writeSettledIn(trx: Kysely<Database>, attemptId: string, s: { charged: number; fee: number; settledMs: number }): Promise<void> {
  await trx.updateTable('attempts').set({ settled_charged: s.charged, settled_fee: s.fee, settled_ms: s.settledMs }).where('id', '=', attemptId).execute();
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
        .select(['spec', 'hold_pay'])
        .where('id', '=', a.job_id)
        .$if(ctx.q.forUpdate, (qb) => (ctx.q.skipLocked ? qb.forUpdate().skipLocked() : qb.forUpdate()))
        .executeTakeFirst();
      if (!job) continue;
      const { timeoutSeconds } = JSON.parse(job.spec) as { timeoutSeconds: number };
      const attempt = attemptFactsFromRow(a);
      const asset = attempt.price?.asset as Asset;
      const input = { attempt, timeoutSeconds, holdPay: Number(job.hold_pay ?? 0) === 1, now, escrowLeft: await balanceIn(trx, ctx, ACCOUNTS.escrow(a.job_id), asset, true) };
      const key = settlementNeedsCarry(input);
      const carry = key ? (await lockFeeCarriesIn(trx, [key]))[0]?.carry : undefined;
      const piece = planSettlement({ ...input, ...(carry !== undefined ? { carry } : {}) });
      if (piece.transfer) await postTransferIn(trx, piece.transfer);
      if (piece.carry) await writeFeeCarriesIn(trx, [piece.carry]);
      if (piece.settlement) {
        await writeSettledIn(trx, a.id, piece.settlement);
        settled++;
      }
      if (piece.event) await insertEvents(trx, ctx, [piece.event]);
    }
    return settled;
  });
}
