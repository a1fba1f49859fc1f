/**
 * Check runs (audits and referees) are ordinary jobs of kind audit/referee, written inside the verification
 * step's transaction: the checked job's full spec, avoiding the operators whose work is being checked, for
 * the system buyer SYSTEM_AUDIT_BUYER (never a real token's account), pay held until verification like any
 * job, and the escrow funded from the treasury (TRUST.md "who pays": the treasury's audit budget). What the
 * escrow does not spend returns to the treasury when the run ends (sweepToTreasuryIn).
 */
import { ACCOUNTS, auditBudgetAllows, type JobPaymentRecord, type JobRecord, type NewJob, newId, } from '@gpux/core';
import { type Asset, formatAmount, type JobSpec } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import { auditBudgetIn } from './treasury-flows.js';
import { newJobRow } from './rows.js';
import type { Database } from './schema.js';

/** The account check runs are submitted by; its wallet only ever holds an ended run's unspent escrow, briefly. */
export const SYSTEM_AUDIT_BUYER = 'system:audit';

/** Retries a check run gets after an infrastructure failure (a lost node): few, since each is held up front. */
export const CHECK_MAX_RETRIES = 2;

/**
 * What a check run of `job` holds from the treasury: a whole attempt for each try it may take. The system
 * buyer's wallet is empty (it never funds anything), so a retry's escrow top-up must never be needed: the
 * escrow already covers every try, and what is left returns to the treasury when the run ends.
 */
export function checkRunHold(job: Pick<JobRecord, 'payment' | 'spec'>): number {
  if (!job.payment || job.payment.held <= 0) return 0;
  return job.payment.held * (checkRetries(job.spec) + 1);
}

const checkRetries = (spec: JobRecord['spec']): number => Math.min(spec.maxRetries, CHECK_MAX_RETRIES);

/**
 * Whether the treasury can fund `runs` check runs of `job` (their escrow holds): its balance covers them and
 * they fit the audit budget (core trust/audit-budget.ts: spent + holds ≤ share × fee income + funded). True
 * without a market.
 */
export async function treasuryCanFund(trx: Kysely<Database>, ctx: StoreContext, job: Pick<JobRecord, 'payment' | 'spec'>, runs = 1): Promise<boolean> {
  const hold = checkRunHold(job);
  if (!job.payment || hold <= 0) return true;
  const need = hold * runs;
  if ((await balanceIn(trx, ctx, ACCOUNTS.treasury, job.payment.asset, true)) < need) return false;
  // Read after the treasury's balance row is locked: every writer of the budget's totals holds it first.
  return auditBudgetAllows(await auditBudgetIn(trx, ctx, job.payment.asset), need);
}

/**
 * replicas: 2 (the buyer pays the second run). Its escrow is held from the buyer's wallet at submission, in
 * the same transaction as the job's own hold, so a buyer short for both runs gets INSUFFICIENT_FUNDS (402)
 * up front. It is held in the escrow of the replica run itself, whose id is fixed by the job's
 * (replicaJobId): the attempt-end release of the job's own escrow never touches it, and the replica run,
 * written when the job ends with a committed result, finds its escrow already held. A replica never
 * written (the job ended without a result, was cancelled or timed out in the queue) has it released to the
 * buyer (releaseReplicaHoldIn). The hold is one attempt (payment.held), like the job's own: the replica run
 * belongs to the buyer, so a retry tops its escrow up from the buyer's wallet like any job's.
 */
export const replicaJobId = (jobId: string): string => `${jobId}-replica`;

/** At submission: hold the replica run's escrow (one attempt) from the buyer's wallet. No-op unless replicas: 2 with a market. */
export async function holdReplicaIn(trx: Kysely<Database>, job: NewJob): Promise<void> {
  const p = job.payment;
  if (job.spec.replicas !== 2 || !p || p.held <= 0) return;
  const id = replicaJobId(job.id);
  await postTransferIn(trx, {
    kind: 'escrow.hold',
    postings: [
      { account: ACCOUNTS.wallet(job.buyerId), asset: p.asset, amount: -p.held },
      { account: ACCOUNTS.escrow(id), asset: p.asset, amount: p.held },
    ],
    at: job.now,
    memo: `hold for the replica run ${id} of job ${job.id} (replicas: 2, paid by the buyer): ${formatAmount(p.held, p.asset)}`,
    jobId: id,
  });
}

/** What the replica run's hold still holds, in the job's asset (0 without a market or once used). */
export async function replicaHoldIn(trx: Kysely<Database>, ctx: StoreContext, job: Pick<JobRecord, 'id' | 'payment'>): Promise<number> {
  return job.payment ? balanceIn(trx, ctx, ACCOUNTS.escrow(replicaJobId(job.id)), job.payment.asset, true) : 0;
}

/**
 * The job will never have its replica run: release the replica's hold to the buyer. Only while no replica
 * job was written (once it is, its escrow is that job's and its own end releases it). Called wherever a
 * job's escrow is released at its end (store settlement.ts releaseEscrowIn, and the attempt-end step here);
 * a no-op for a job without a replica hold. Returns the events.
 */
export async function releaseReplicaHoldIn(trx: Kysely<Database>, ctx: StoreContext, job: { id: string; buyerId: string }, asset: Asset, now: number, why: string): Promise<NewEvent[]> {
  const id = replicaJobId(job.id);
  const left = await balanceIn(trx, ctx, ACCOUNTS.escrow(id), asset, true);
  if (left <= 0) return [];
  if (await trx.selectFrom('jobs').select('id').where('id', '=', id).executeTakeFirst()) return [];
  await postTransferIn(trx, {
    kind: 'escrow.release',
    postings: [
      { account: ACCOUNTS.escrow(id), asset, amount: -left },
      { account: ACCOUNTS.wallet(job.buyerId), asset, amount: left },
    ],
    at: now,
    memo: `release of the replica hold of job ${job.id} (${why}): ${formatAmount(left, asset)} back to the buyer`,
    jobId: id,
  });
  return [{ at: now, subject: 'job', subjectId: job.id, type: 'job.escrow_released', data: { amount: left, replica: true } }];
}

/**
 * Insert a check run of `of` (full spec). An audit or referee is the system buyer's, its escrow held from
 * the treasury: the caller checked the treasury can fund it (INSUFFICIENT_FUNDS otherwise, and the caller's
 * transaction rolls back). A replica (`replica`: replicas: 2) is the job's buyer's, with the id and the
 * escrow held at submission (holdReplicaIn). A checker run (spec.verify) is funded like an audit but runs
 * its own spec and payment (`run`: verification-checkers.ts).
 */
export async function insertCheckJobIn(
  trx: Kysely<Database>,
  _ctx: StoreContext,
  q: { of: JobRecord; kind: 'audit' | 'referee' | 'checker'; avoidProviderIds: string[]; now: number; id?: string; replica?: boolean; run?: { spec: JobSpec; payment: JobPaymentRecord | null } },
): Promise<{ id: string; events: NewEvent[] }> {
  const id = q.replica ? replicaJobId(q.of.id) : (q.id ?? newId('job', q.now, cryptoRandom));
  // The same program, inputs and env; only the retry budget is the check run's own (see checkRunHold).
  const spec = q.run?.spec ?? { ...q.of.spec, maxRetries: checkRetries(q.of.spec) };
  const payment = q.run ? q.run.payment : q.of.payment;
  const hold = q.replica ? 0 : checkRunHold(q.run ?? q.of);
  const buyerId = q.replica ? q.of.buyerId : SYSTEM_AUDIT_BUYER;
  const row = newJobRow({
    id,
    buyerId,
    spec,
    idempotencyKey: null,
    now: q.now,
    payment,
    kind: q.kind,
    checkOf: q.of.id,
    avoidProviderIds: [...new Set(q.avoidProviderIds)].sort(),
    holdPay: true,
  });
  await trx.insertInto('jobs').values(row).execute();
  if (payment) await holdFromTreasuryIn(trx, id, payment.asset, hold, `${q.kind} run ${id} of job ${q.of.id}`, q.now, `(${spec.maxRetries + 1} tries)`);
  const events: NewEvent[] = [
    { at: q.now, subject: 'job', subjectId: id, type: 'job.submitted', data: { buyerId, name: spec.name, idempotencyKey: null } },
    { at: q.now, subject: 'job', subjectId: q.of.id, type: `verification.${q.replica ? 'replica' : q.kind}_queued`, data: { checkJobId: id } },
  ];
  return { id, events };
}

/** A run the treasury pays for (audit, referee, checker, canary): its escrow held from the treasury's audit budget. */
export async function holdFromTreasuryIn(trx: Kysely<Database>, jobId: string, asset: Asset, hold: number, what: string, now: number, note = ''): Promise<void> {
  if (hold <= 0) return;
  await postTransferIn(trx, {
    kind: 'escrow.hold',
    postings: [
      { account: ACCOUNTS.treasury, asset, amount: -hold },
      { account: ACCOUNTS.escrow(jobId), asset, amount: hold },
    ],
    at: now,
    memo: `hold for ${what}, from the treasury's audit budget: ${formatAmount(hold, asset)}${note ? ` ${note}` : ''}`,
    jobId,
  });
}

/**
 * A treasury-paid run ended: its escrow's unspent rest went to its buyer account's wallet (the system audit
 * buyer, or a canary's buyer-looking account); it goes back to the treasury.
 */
export async function sweepToTreasuryIn(trx: Kysely<Database>, ctx: StoreContext, jobId: string, asset: Asset, now: number, buyerId = SYSTEM_AUDIT_BUYER): Promise<void> {
  const wallet = ACCOUNTS.wallet(buyerId);
  const left = await balanceIn(trx, ctx, wallet, asset, true);
  if (left <= 0) return;
  await postTransferIn(trx, {
    kind: 'escrow.release',
    postings: [
      { account: wallet, asset, amount: -left },
      { account: ACCOUNTS.treasury, asset, amount: left },
    ],
    at: now,
    memo: `run ${jobId} ended: ${formatAmount(left, asset)} unspent back to the treasury's audit budget`,
    jobId,
  });
}
