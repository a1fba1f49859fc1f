/**
 * Check runs (audits and referees) are ordinary jobs of kind audit/referee, written inside the verification
 * step's transaction: the checked job's full spec, avoiding the operators whose work is being checked, for
 * the system buyer SYSTEM_AUDIT_BUYER (never a real token's account), pay held until verification like any
 * job, and the escrow funded from the treasury (TRUST.md "who pays": the treasury's audit budget). What the
 * escrow does not spend returns to the treasury when the run ends (sweepAuditWalletIn).
 */
import { ACCOUNTS, type JobRecord, jobPriority, newId, PRIORITY_RANK } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { balanceIn, postTransferIn } from './ledger.js';
import { checkColumns, type JobRow, paymentColumns, specColumns } from './rows.js';
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

/** Whether the treasury can fund `runs` check runs of `job` (their escrow holds); true without a market. */
export async function treasuryCanFund(trx: Kysely<Database>, ctx: StoreContext, job: Pick<JobRecord, 'payment' | 'spec'>, runs = 1): Promise<boolean> {
  const hold = checkRunHold(job);
  if (!job.payment || hold <= 0) return true;
  return (await balanceIn(trx, ctx, ACCOUNTS.treasury, job.payment.asset, true)) >= hold * runs;
}

/**
 * Insert a check run of `of` (full spec) and hold its escrow from the treasury. The caller checked the
 * treasury can fund it (INSUFFICIENT_FUNDS otherwise, and the caller's transaction rolls back).
 */
export async function insertCheckJobIn(
  trx: Kysely<Database>,
  _ctx: StoreContext,
  q: { of: JobRecord; kind: 'audit' | 'referee'; avoidProviderIds: string[]; now: number; id?: string },
): Promise<{ id: string; events: NewEvent[] }> {
  const id = q.id ?? newId('job', q.now, cryptoRandom);
  // The same program, inputs and env; only the retry budget is the check run's own (see checkRunHold).
  const spec = { ...q.of.spec, maxRetries: checkRetries(q.of.spec) };
  const payment = q.of.payment;
  const hold = checkRunHold(q.of);
  const row: JobRow = {
    id,
    buyer_id: SYSTEM_AUDIT_BUYER,
    name: spec.name,
    state: 'queued',
    ...specColumns(spec),
    idempotency_key: null,
    attempt_count: 0,
    current_attempt_id: null,
    run_after: null,
    exit_code: null,
    error: null,
    cancel_requested: 0,
    avoid_node_ids: '[]',
    priority: PRIORITY_RANK[jobPriority(spec)],
    ...paymentColumns(payment),
    ...checkColumns({ kind: q.kind, checkOf: q.of.id, avoidProviderIds: [...new Set(q.avoidProviderIds)].sort(), holdPay: true }),
    created_at: q.now,
    updated_at: q.now,
    started_at: null,
    finished_at: null,
  };
  await trx.insertInto('jobs').values(row).execute();
  if (payment && hold > 0) {
    await postTransferIn(trx, {
      kind: 'escrow.hold',
      postings: [
        { account: ACCOUNTS.treasury, asset: payment.asset, amount: -hold },
        { account: ACCOUNTS.escrow(id), asset: payment.asset, amount: hold },
      ],
      at: q.now,
      memo: `hold for ${q.kind} run ${id} of job ${q.of.id}, from the treasury's audit budget: ${formatAmount(hold, payment.asset)} (${spec.maxRetries + 1} tries)`,
      jobId: id,
    });
  }
  const events: NewEvent[] = [
    { at: q.now, subject: 'job', subjectId: id, type: 'job.submitted', data: { buyerId: SYSTEM_AUDIT_BUYER, name: spec.name, idempotencyKey: null } },
    { at: q.now, subject: 'job', subjectId: q.of.id, type: `verification.${q.kind}_queued`, data: { checkJobId: id } },
  ];
  return { id, events };
}

/** A check run ended: its escrow's unspent rest went to the system buyer's wallet; it goes back to the treasury. */
export async function sweepAuditWalletIn(trx: Kysely<Database>, ctx: StoreContext, jobId: string, asset: Asset, now: number): Promise<void> {
  const wallet = ACCOUNTS.wallet(SYSTEM_AUDIT_BUYER);
  const left = await balanceIn(trx, ctx, wallet, asset, true);
  if (left <= 0) return;
  await postTransferIn(trx, {
    kind: 'escrow.release',
    postings: [
      { account: wallet, asset, amount: -left },
      { account: ACCOUNTS.treasury, asset, amount: left },
    ],
    at: now,
    memo: `check run ${jobId} ended: ${formatAmount(left, asset)} unspent back to the treasury's audit budget`,
    jobId,
  });
}
