/**
 * The verification step in the store (issue 11, TRUST.md layers 4–5). The rules are core's
 * (trust/verification-step.ts, audit-rate.ts, penalties.ts); this file loads their inputs and applies their
 * plans in the caller's transaction:
 * - a buyer's job with held pay that ended with a committed result opens its step (audit draw recorded, and
 *   when audited an audit run queued, funded by the treasury; with replicas: 2 always a replica run, on
 *   another operator, paid by the buyer from the hold taken at submission: verification-jobs.ts);
 * - a check run that ended advances the step (pass, referees, penalties, pay released or forfeited); with
 *   spec.verify two different results are compared by the buyer's checker (checker runs:
 *   verification-checkers.ts; rules: core trust/checker-step.ts);
 * - windows close (pay released), disputes open (bond held, a referee queued), penalties are listed.
 * Lock order: the ending job's row and attempts (the caller's), then the checked job's row, its
 * verifications row, then node rows (penalties, audit history).
 */
import {
  ACCOUNTS,
  AUDIT_FLOOR,
  advanceVerification,
  auditDecision,
  type AttemptRecord,
  BPS,
  checkerCanCompare,
  DEFAULT_VERIFY_TERMS,
  GpuxError,
  type JobRecord,
  NO_OUTPUTS,
  OUTPUTS_NOT_INLINE,
  openReplicaStep,
  openStep,
  type Page,
  penaltyPlan,
  type PenaltyRecord,
  type StepPlan,
  type VerificationRecord,
  windowLabel,
} from '@gpux/core';
import { type Asset, formatAmount, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import { canaryEndedIn, canaryRefereeEndedIn } from './canaries.js';
import { canaryCatalogIn } from './canary-catalog.js';
import { inTx, type StoreContext } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { insertEvents, type NewEvent } from './events.js';
import { selectJobRow } from './jobs.js';
import { postTransferIn } from './ledger.js';
import { type AttemptRow, jobFromRow } from './rows.js';
import type { Database } from './schema.js';
import { attemptOfSide, outputSetsIn, queueCheckersIn } from './verification-checkers.js';
import { insertCheckJobIn, releaseReplicaHoldIn, replicaHoldIn, SYSTEM_AUDIT_BUYER, sweepToTreasuryIn, treasuryCanFund } from './verification-jobs.js';
import { applyWrongResultIn, auditHistoryIn, recordAuditIn, releasePendingIn } from './verification-money.js';
import { type CheckRun, isDisputeCheck, loadChecks, penaltyFromRow, snapshotOf, type VerificationRow, verificationFromRow } from './verification-rows.js';

/** What the attempt-end transaction tells the verification step (after the job moved). */
export interface AttemptEndedInput {
  /**
   * The job as written by this attempt end (its new state), from its whole row (spec with env and inputs): an
   * audit re-runs exactly what the executor ran.
   */
  job: JobRecord;
  /** The attempt as ended (state, commitment, output digest). */
  attempt: AttemptRecord;
  /** The job's state before this attempt end. */
  previousJobState: string;
  /** FinishAttemptInput.auditDraw (absent for ends the coordinator made: leases, gang stops). */
  auditDraw?: number;
  now: number;
}

const isTerminal = (s: string) => TERMINAL_JOB_STATES.includes(s as JobState);
const isCheck = (j: { kind?: string | undefined }) => j.kind === 'audit' || j.kind === 'referee' || j.kind === 'checker';
/** A committed result: the job succeeded, or its program exited non-zero (the exit code is part of the result). */
const committedResult = (j: JobRecord) => j.state === 'succeeded' || (j.state === 'failed' && j.exitCode !== null);

function lockStep(trx: Kysely<Database>, ctx: StoreContext, jobId: string): Promise<VerificationRow | undefined> {
  return trx
    .selectFrom('verifications')
    .selectAll()
    .where('job_id', '=', jobId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

function attemptRows(trx: Kysely<Database>, where: { jobId?: string; ids?: string[] }): Promise<AttemptRow[]> {
  let qb = trx.selectFrom('attempts').selectAll();
  if (where.jobId !== undefined) qb = qb.where('job_id', '=', where.jobId);
  if (where.ids !== undefined) {
    if (where.ids.length === 0) return Promise.resolve([]);
    qb = qb.where('id', 'in', where.ids);
  }
  return qb.orderBy('id').execute();
}

/**
 * Called inside every transaction that ends an attempt (finishAttempt, expireLeases), after the job row is
 * written and before the events are inserted. Opens the job's verification step when a buyer's job ended
 * with a committed result, and advances the step when a check run (audit, referee) ended. Pay held for an
 * attempt whose result will never be verified (lost, failed without a result, a job that ends without
 * one) is released at once. Returns events.
 */
export async function afterAttemptEndIn(trx: Kysely<Database>, ctx: StoreContext, e: AttemptEndedInput): Promise<NewEvent[]> {
  const { job, attempt, now } = e;
  if (!job.holdPay) return [];
  const ended = isTerminal(job.state) && !isTerminal(e.previousJobState);
  const thisAttempt = () => attemptRows(trx, { ids: [attempt.id] });
  if (job.kind === 'canary') return canaryEndedIn(trx, ctx, e);
  if (isCheck(job)) {
    if (!ended) {
      // The run goes on, but money may have reached its buyer's wallet (an abandoned lease's fee pays "the buyer"):
      // the treasury funded the run, so it goes back now; the system buyer's wallet never holds anything.
      if (job.payment) await sweepToTreasuryIn(trx, ctx, job.id, job.payment.asset, now);
      return releasePendingIn(trx, ctx, await thisAttempt(), now, 'the check run attempt ended without deciding');
    }
    const events: NewEvent[] = [];
    if (job.payment) await sweepToTreasuryIn(trx, ctx, job.id, job.payment.asset, now);
    // Only the attempt carrying the check's result is judged; the others ran and are paid now. A checker
    // run (spec.verify) is the buyer's own program and no one re-runs it: all its attempts are paid now.
    const judged = committedResult(job) && job.kind !== 'checker' ? job.currentAttemptId : null;
    const others = (await attemptRows(trx, { jobId: job.id })).filter((a) => a.id !== judged);
    events.push(...(await releasePendingIn(trx, ctx, others, now, 'check run attempt without a judged result')));
    if (job.checkOf) events.push(...(await advanceStepIn(trx, ctx, job.checkOf, now)));
    if (job.checkOf && job.kind !== 'checker') events.push(...(await canaryRefereeEndedIn(trx, ctx, job.checkOf, now)));
    return events;
  }
  if (ended && committedResult(job) && attempt.commitment && attempt.outputDigest) return openStepIn(trx, ctx, job, attempt, e.auditDraw, now);
  if (ended) {
    const why = `job ${job.state} without a result to verify`;
    const events = await releasePendingIn(trx, ctx, await attemptRows(trx, { jobId: job.id }), now, why);
    return [...events, ...(job.payment ? await releaseReplicaHoldIn(trx, ctx, job, job.payment.asset, now, why) : [])];
  }
  if (!isTerminal(job.state)) {
    // Requeued (or a gang still running): a member that succeeded waits for the job's step; others are paid.
    return attempt.state === 'succeeded' ? [] : releasePendingIn(trx, ctx, await thisAttempt(), now, 'attempt ended without a result');
  }
  // An attempt of a job that already ended: its step (if still open) releases it with the others.
  const v = await lockStep(trx, ctx, job.id);
  if (v && (v.state === 'auditing' || v.state === 'refereeing' || v.state === 'window')) return [];
  return releasePendingIn(trx, ctx, await thisAttempt(), now, 'attempt ended after its job');
}

/** Open the step of a job that ended with `attempt`'s committed result. Idempotent. */
async function openStepIn(trx: Kysely<Database>, ctx: StoreContext, job: JobRecord, attempt: AttemptRecord, draw: number | undefined, now: number): Promise<NewEvent[]> {
  if (await lockStep(trx, ctx, job.id)) return [];
  // SQLite reads the node's audit streak in the same statement; PostgreSQL locks its row apart (auditHistoryIn).
  const node = await trx
    .selectFrom('nodes')
    .select(['provider_id', 'tier'])
    .$if(!ctx.q.forUpdate, (qb) => qb.select((eb) => eb.selectFrom('node_audits').select('consecutive_passes').whereRef('node_audits.node_id', '=', 'nodes.id').as('passes')))
    .where('id', '=', attempt.nodeId)
    .executeTakeFirst();
  const providerId = node?.provider_id ?? attempt.price?.providerId ?? null;
  const terms = job.verifyTerms ?? DEFAULT_VERIFY_TERMS;
  const replicated = job.spec.replicas === 2;
  let decision: { p: number; draw: number | null };
  let opening: ReturnType<typeof openStep>;
  if (replicated) {
    // replicas: 2: always re-run (p = 1, no draw), paid by the buyer from the hold taken at submission.
    decision = { p: 1, draw: null };
    opening = openReplicaStep(!job.payment || (await replicaHoldIn(trx, ctx, job)) > 0);
  } else {
    const passes = node && !ctx.q.forUpdate ? Number(node.passes ?? 0) : await auditHistoryIn(trx, ctx, attempt.nodeId);
    // The draw was taken from the coordinator's CSPRNG after the commitment arrived (FinishAttemptInput.auditDraw).
    const random = { next: () => draw ?? cryptoRandom.next(), bytes: (n: number) => cryptoRandom.bytes(n) };
    // The executor's tier sets the floor (TRUST.md: attested and curated audit less); never above the open floor of the job's terms.
    const openFloor = terms.auditFloorBps / BPS;
    const tier = node?.tier === 'curated' || node?.tier === 'attested' ? node.tier : 'open';
    const d = auditDecision({ consecutivePasses: passes }, tier, random, {
      deterministic: job.spec.deterministic !== false,
      floors: { open: openFloor, attested: Math.min(AUDIT_FLOOR.attested, openFloor), curated: Math.min(AUDIT_FLOOR.curated, openFloor) },
    });
    decision = d;
    // spec.verify: an audit is worth running only if the executor's outputs can be handed to the checker.
    const checkable = !job.spec.verify || checkerCanCompare((await outputSetsIn(trx, [attempt.id])).get(attempt.id)?.facts, NO_OUTPUTS);
    opening = openStep(d, d.audit && checkable && (await treasuryCanFund(trx, ctx, job)), checkable);
  }
  const windowClosesAt = now + terms.disputeWindowMs;
  await trx
    .insertInto('verifications')
    .values({
      job_id: job.id,
      attempt_id: attempt.id,
      node_id: attempt.nodeId,
      provider_id: providerId,
      buyer_id: job.buyerId,
      asset: job.payment?.asset ?? null,
      state: opening.state,
      label: opening.label,
      p: decision.p,
      draw: decision.draw,
      reason: opening.reason,
      output_digest: attempt.outputDigest as string,
      exit_code: attempt.exitCode,
      window_closes_at: windowClosesAt,
      dispute_buyer_id: null,
      dispute_reason: null,
      dispute_bond: null,
      dispute_asset: null,
      dispute_at: null,
      dispute_referee_id: null,
      verdict: null,
      created_at: now,
      resolved_at: null,
    })
    .execute();
  const events: NewEvent[] = [
    {
      at: now,
      subject: 'job',
      subjectId: job.id,
      type: 'verification.opened',
      data: { attemptId: attempt.id, nodeId: attempt.nodeId, state: opening.state, label: opening.label, p: decision.p, draw: decision.draw, reason: opening.reason, windowClosesAt },
    },
  ];
  if (opening.state === 'auditing') {
    const avoid = [providerId ?? attempt.nodeId];
    events.push(...(await insertCheckJobIn(trx, ctx, { of: job, kind: 'audit', avoidProviderIds: avoid, now, replica: replicated })).events);
  }
  return events;
}

/** Re-evaluate the step of `jobId` from its check runs and apply the plan (nothing while a run is going). */
export async function advanceStepIn(trx: Kysely<Database>, ctx: StoreContext, jobId: string, now: number): Promise<NewEvent[]> {
  const jobRow = await selectJobRow(trx, ctx, jobId, true);
  const v = await lockStep(trx, ctx, jobId);
  if (!jobRow || !v) return [];
  const checks = (await loadChecks(trx, ctx, [jobId])).get(jobId) ?? [];
  const job = jobFromRow(jobRow);
  // spec.verify: the outputs of the executor and of every run with a result, for the checker's inputs.
  const results = checks.filter((c) => c.kind !== 'checker' && c.outcome.status === 'result' && c.attemptId).map((c) => c.attemptId as string);
  const sets = job.spec.verify ? await outputSetsIn(trx, [v.attempt_id, ...results]) : undefined;
  const facts = sets && new Map([...sets].map(([id, set]) => [id, set?.facts ?? null]));
  let plan = advanceVerification(snapshotOf(v, checks, facts));
  if (!plan) return [];
  const events: NewEvent[] = [];
  const disputed = v.dispute_at !== null;
  if (plan.queueReferees > 0) {
    const referees = await queueReferees(trx, ctx, job, v, checks, plan.queueReferees, now);
    if (referees === null) plan = notQueued(plan, v, checks, disputed, 'unfunded');
    else events.push(...referees);
  }
  if (plan.queueCheckers && plan.queueCheckers.length > 0 && sets) {
    const avoid = partiesOf(v, checks);
    const queued = await queueCheckersIn(trx, ctx, { job, pairs: plan.queueCheckers, attemptOf: attemptOfSide(v.attempt_id, checks), sets, avoid, now });
    if ('not' in queued) plan = notQueued(plan, v, checks, disputed, queued.not);
    else events.push(...queued.events);
  }
  events.push(...(await applyPlanIn(trx, ctx, job, v, checks, plan, now)));
  return events;
}

/**
 * Referees avoid the executor's operator and the operator of every earlier check run of this job (auditor,
 * earlier referees, of the audit and of a dispute): core trust/auditor.ts's independence. The step queues
 * them one at a time, so every earlier run's operator is known when the next one is written.
 */
async function queueReferees(
  trx: Kysely<Database>,
  ctx: StoreContext,
  job: JobRecord,
  v: VerificationRow,
  checks: readonly CheckRun[],
  n: number,
  now: number,
): Promise<NewEvent[] | null> {
  if (!(await treasuryCanFund(trx, ctx, job, n))) return null;
  const avoid = partiesOf(v, checks);
  const events: NewEvent[] = [];
  for (let i = 0; i < n; i++) events.push(...(await insertCheckJobIn(trx, ctx, { of: job, kind: 'referee', avoidProviderIds: avoid, now })).events);
  return events;
}

/**
 * The operators whose work a new check run of this step may not be placed with: the executor's and every
 * earlier check run's. A node without a provider is its own operator (core scheduler filters.ts operatorOk).
 */
function partiesOf(v: VerificationRow, checks: readonly CheckRun[]): string[] {
  // Checker runs only run the buyer's checker; their operators are not parties to the result.
  const parties = checks.filter((c) => c.kind !== 'checker');
  return [v.provider_id ?? v.node_id, ...parties.map((c) => c.providerId ?? c.nodeId)].filter((p): p is string => p !== null);
}

/**
 * The runs the plan asked for cannot be queued: the treasury cannot pay them, or (checker runs) the outputs
 * cannot make the checker's inputs. An audit mismatch stays unaudited in its window; a dispute is void.
 */
function notQueued(plan: StepPlan, v: VerificationRow, checks: readonly CheckRun[], disputed: boolean, why: 'unfunded' | 'uncheckable'): StepPlan {
  const paid = checks.filter((c) => c.kind !== 'checker' && c.outcome.status === 'result' && isDisputeCheck(v, c) === disputed).map((c) => c.jobId);
  const checker = (plan.queueCheckers?.length ?? 0) > 0;
  const what = checker ? "the buyer's checker" : 'referee runs';
  const verdict = why === 'unfunded' ? `the treasury's audit budget cannot pay ${what} now` : "the outputs cannot be handed to the buyer's checker";
  const next = { ...plan, queueReferees: 0, queueCheckers: [], state: 'window' as const, paidChecks: paid };
  if (disputed) return { ...next, label: windowLabel(v.reason), dispute: 'void', verdict: `${verdict}: the dispute is void and the bond returned` };
  const reason = !checker ? {} : { reason: why === 'unfunded' ? 'audit-budget' : OUTPUTS_NOT_INLINE };
  return { ...next, ...reason, label: 'unaudited', verdict: `${verdict}: unaudited, disputable until the window closes` };
}

async function applyPlanIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  job: JobRecord,
  v: VerificationRow,
  checks: readonly CheckRun[],
  plan: StepPlan,
  now: number,
): Promise<NewEvent[]> {
  const events: NewEvent[] = [];
  const attempts = await attemptRows(trx, { jobId: job.id });
  const executor = attempts.find((a) => a.id === v.attempt_id);
  const byJob = new Map(checks.map((c) => [c.jobId, c]));
  const checkAttempts = await attemptRows(trx, { ids: [...plan.paidChecks, ...plan.wrongChecks].map((id) => byJob.get(id)?.attemptId).filter((x): x is string => !!x) });
  const checkAttempt = (jobId: string) => checkAttempts.find((a) => a.id === byJob.get(jobId)?.attemptId);
  const evidence = (wrong: CheckRun | null) => ({
    jobId: job.id,
    executor: { attemptId: v.attempt_id, nodeId: v.node_id, outputDigest: v.output_digest, exitCode: v.exit_code, commitment: executor?.commitment ?? null, commitmentSignature: executor?.commitment_signature ?? null },
    ...(wrong ? { wrongRun: { jobId: wrong.jobId, kind: wrong.kind, nodeId: wrong.nodeId, outputDigest: wrong.outputDigest, exitCode: wrong.exitCode } } : {}),
    checks: checks.map((c) => ({ jobId: c.jobId, kind: c.kind, nodeId: c.nodeId, outputDigest: c.outputDigest, exitCode: c.exitCode, ...(c.pair ? { pair: c.pair } : {}) })),
    truth: plan.truth ?? null,
  });
  if (plan.executor === 'pass') {
    events.push(...(await releasePendingIn(trx, ctx, attempts, now, plan.label)));
  } else if (plan.executor === 'wrong' && executor) {
    const upheld = plan.dispute === 'upheld';
    const res = await applyWrongResultIn(trx, ctx, {
      attempt: executor,
      buyerAccount: ACCOUNTS.wallet(v.buyer_id),
      reporter: upheld ? 'buyer' : 'coordinator',
      ...(upheld ? { reporterId: v.buyer_id } : {}),
      evidence: evidence(null),
      now,
    });
    events.push(...res.events);
    events.push(...(await releasePendingIn(trx, ctx, attempts.filter((a) => a.id !== executor.id), now, 'another attempt of a job whose result was wrong')));
  }
  if (plan.auditPassed) await recordAuditIn(trx, ctx, v.node_id, true, now);
  for (const id of plan.paidChecks) {
    const a = checkAttempt(id);
    if (a) events.push(...(await releasePendingIn(trx, ctx, [a], now, 'check run agreed with the verdict')));
  }
  for (const id of plan.wrongChecks) {
    const a = checkAttempt(id);
    const c = byJob.get(id);
    // A check run confirmed wrong: its operator is penalized like any wrong result. Its forfeited pay goes to
    // whoever paid for it: the treasury for an audit or referee, the job's buyer for a replica (replicas: 2).
    const paidBy = c && c.buyerId !== SYSTEM_AUDIT_BUYER ? ACCOUNTS.wallet(c.buyerId) : ACCOUNTS.treasury;
    if (a && c) events.push(...(await applyWrongResultIn(trx, ctx, { attempt: a, buyerAccount: paidBy, reporter: 'coordinator', evidence: evidence(c), now })).events);
  }
  if (plan.dispute) events.push(...(await settleBondIn(trx, ctx, v, checks, plan.dispute, now)));
  await trx
    .updateTable('verifications')
    .set({ state: plan.state, label: plan.label, verdict: plan.verdict, resolved_at: plan.resolved ? now : null, ...(plan.reason ? { reason: plan.reason } : {}) })
    .where('job_id', '=', v.job_id)
    .execute();
  // Two independent operators agreed (an audit or a replica): the spec may become a known answer, unless
  // its output is not bit-exact (spec.verify): a canary is judged by digest.
  if ((plan.label === 'audited-passed' || plan.label === 'replicated-agreed') && !job.spec.verify) await canaryCatalogIn(trx, ctx, job, v, checks, now);
  events.push({ at: now, subject: 'job', subjectId: job.id, type: `verification.${plan.state}`, data: { label: plan.label, verdict: plan.verdict, ...(plan.reason ? { reason: plan.reason } : {}), ...(plan.dispute ? { dispute: plan.dispute } : {}) } });
  return events;
}

/** The dispute bond: to the node's provider (less the referee run's cost, to the treasury) or back to the buyer. */
async function settleBondIn(trx: Kysely<Database>, _ctx: StoreContext, v: VerificationRow, checks: readonly CheckRun[], outcome: 'rejected' | 'upheld' | 'void', now: number): Promise<NewEvent[]> {
  const bond = Number(v.dispute_bond ?? 0);
  const asset = (v.dispute_asset ?? 'usdc') as Asset;
  if (bond <= 0) return [];
  const bondAccount = ACCOUNTS.bond(v.job_id);
  if (outcome === 'rejected' && v.provider_id) {
    const refereeIds = checks.filter((c) => isDisputeCheck(v, c) && c.attemptId).map((c) => c.attemptId as string);
    const refereeCost = (await attemptRows(trx, { ids: refereeIds })).reduce((s, a) => s + Number(a.settled_charged), 0);
    const plan = penaltyPlan({ kind: 'false-dispute', bond, refereeCost }, { stake: '', pay: '', buyer: ACCOUNTS.wallet(v.buyer_id), provider: ACCOUNTS.wallet(v.provider_id), bond: bondAccount });
    await postTransferIn(trx, {
      kind: 'dispute.forfeit',
      postings: plan.legs.flatMap((l) => [
        { account: l.from, asset, amount: -l.amount },
        { account: l.to, asset, amount: l.amount },
      ]),
      at: now,
      memo: plan.reason,
      jobId: v.job_id,
    });
    return [{ at: now, subject: 'job', subjectId: v.job_id, type: 'dispute.rejected', data: { bond, refereeCost: Math.min(bond, refereeCost), asset } }];
  }
  await postTransferIn(trx, {
    kind: 'dispute.return',
    postings: [
      { account: bondAccount, asset, amount: -bond },
      { account: ACCOUNTS.wallet(v.buyer_id), asset, amount: bond },
    ],
    at: now,
    memo: `dispute on job ${v.job_id} ${outcome === 'upheld' ? 'upheld' : 'void'}: bond ${formatAmount(bond, asset)} returned to the buyer`,
    jobId: v.job_id,
  });
  return [{ at: now, subject: 'job', subjectId: v.job_id, type: outcome === 'upheld' ? 'dispute.upheld' : 'dispute.void', data: { bond, asset } }];
}

async function recordOf(db: Kysely<Database>, ctx: StoreContext, jobId: string): Promise<VerificationRecord | undefined> {
  const v = await db.selectFrom('verifications').selectAll().where('job_id', '=', jobId).executeTakeFirst();
  if (!v) return undefined;
  return verificationFromRow(v, (await loadChecks(db, ctx, [jobId])).get(jobId) ?? []);
}

export function getVerification(ctx: StoreContext, jobId: string): Promise<VerificationRecord | undefined> {
  return recordOf(ctx.db, ctx, jobId);
}

export async function getVerifications(ctx: StoreContext, jobIds: readonly string[]): Promise<VerificationRecord[]> {
  const ids = [...new Set(jobIds)];
  if (ids.length === 0) return [];
  const rows = await ctx.db.selectFrom('verifications').selectAll().where('job_id', 'in', ids).execute();
  const checks = await loadChecks(ctx.db, ctx, rows.map((r) => r.job_id));
  return rows.map((r) => verificationFromRow(r, checks.get(r.job_id) ?? []));
}

/**
 * Steps whose window closed with nothing open: pay released, state released (each in its own
 * transaction). Also re-evaluates steps whose check runs all ended without the attempt-end path seeing it
 * (a check run that failed its queue timeout), so no step waits forever. Returns the steps that moved.
 */
export async function closeVerificationWindows(ctx: StoreContext, now: number, limit: number): Promise<VerificationRecord[]> {
  const n = Math.max(1, Math.floor(limit));
  const due = await ctx.db.selectFrom('verifications').select('job_id').where('state', '=', 'window').where('window_closes_at', '<=', now).orderBy('window_closes_at').orderBy('job_id').limit(n).execute();
  const out: VerificationRecord[] = [];
  for (const { job_id } of due) {
    const moved = await inTx(ctx, async (trx) => {
      const jobRow = await selectJobRow(trx, ctx, job_id, true);
      const v = await lockStep(trx, ctx, job_id);
      if (!jobRow || !v || v.state !== 'window' || Number(v.window_closes_at) > now) return false;
      const events = await releasePendingIn(trx, ctx, await attemptRows(trx, { jobId: job_id }), now, 'the dispute window closed');
      const verdict = v.verdict ?? 'the dispute window closed with no dispute';
      await trx.updateTable('verifications').set({ state: 'released', verdict, resolved_at: now }).where('job_id', '=', job_id).execute();
      events.push({ at: now, subject: 'job', subjectId: job_id, type: 'verification.released', data: { label: v.label, verdict } });
      await insertEvents(trx, ctx, events);
      return true;
    });
    if (moved) {
      const r = await recordOf(ctx.db, ctx, job_id);
      if (r) out.push(r);
    }
  }
  const terminal = [...TERMINAL_JOB_STATES];
  const stuck = await ctx.db
    .selectFrom('verifications as v')
    .select('v.job_id')
    .where('v.state', 'in', ['auditing', 'refereeing'])
    .where(({ not, exists, selectFrom }) =>
      not(
        exists(
          selectFrom('jobs as c')
            .select('c.id')
            .whereRef('c.check_of', '=', 'v.job_id')
            .where('c.state', 'not in', terminal),
        ),
      ),
    )
    .limit(n)
    .execute();
  for (const { job_id } of stuck) {
    const moved = await inTx(ctx, async (trx) => {
      const events = await advanceStepIn(trx, ctx, job_id, now);
      await insertEvents(trx, ctx, events);
      return events.length > 0;
    });
    if (moved) {
      const r = await recordOf(ctx.db, ctx, job_id);
      if (r) out.push(r);
    }
  }
  return out;
}

/** See VerificationPort.openDispute. */
export async function openDispute(ctx: StoreContext, q: { jobId: string; buyerId: string; reason: string; bond: number; refereeJobId: string; now: number }): Promise<VerificationRecord> {
  if (!Number.isSafeInteger(q.bond) || q.bond <= 0) {
    throw new GpuxError('REQUEST_INVALID', `a dispute bond must be a positive amount of minor units, got ${q.bond}`, { problems: [{ path: 'bond', message: 'a positive integer' }] });
  }
  await inTx(ctx, async (trx) => {
    const jobRow = await selectJobRow(trx, ctx, q.jobId, true);
    if (!jobRow || jobRow.buyer_id !== q.buyerId) throw new GpuxError('JOB_NOT_FOUND', `no job ${q.jobId}`);
    const v = await lockStep(trx, ctx, q.jobId);
    const conflict = (why: string) => new GpuxError('CONFLICT', `job ${q.jobId} cannot be disputed: ${why}`);
    if (!v) throw conflict('it has no verification step (it has not ended with a result, or its pay was not held for verification)');
    if (v.dispute_at !== null) throw conflict('it was already disputed');
    if (v.state === 'auditing' || v.state === 'refereeing') throw conflict('its audit is still running; wait for its verdict');
    if (v.state !== 'window') throw conflict(`its verification is already decided (${v.label})`);
    if (v.reason === 'not-deterministic') throw conflict('it declared deterministic: false, so no re-run can check its output');
    if (v.reason === OUTPUTS_NOT_INLINE) throw conflict("its outputs are not stored inline, so the buyer's checker (verify) cannot compare a referee run with them");
    if (q.now >= Number(v.window_closes_at)) throw conflict(`its dispute window closed at ${new Date(Number(v.window_closes_at)).toISOString()}`);
    const job = jobFromRow(jobRow);
    const asset = (v.asset ?? 'usdc') as Asset;
    await postTransferIn(trx, {
      kind: 'dispute.bond',
      postings: [
        { account: ACCOUNTS.wallet(q.buyerId), asset, amount: -q.bond },
        { account: ACCOUNTS.bond(q.jobId), asset, amount: q.bond },
      ],
      at: q.now,
      memo: `dispute bond on job ${q.jobId}: ${formatAmount(q.bond, asset)}`,
      jobId: q.jobId,
    });
    if (!(await treasuryCanFund(trx, ctx, job))) throw conflict("the treasury's audit budget cannot pay a referee run now; try again later");
    const avoid = partiesOf(v, (await loadChecks(trx, ctx, [q.jobId])).get(q.jobId) ?? []);
    const { events } = await insertCheckJobIn(trx, ctx, { of: job, kind: 'referee', avoidProviderIds: avoid, now: q.now, id: q.refereeJobId });
    await trx
      .updateTable('verifications')
      .set({
        state: 'refereeing',
        label: 'disputed',
        dispute_buyer_id: q.buyerId,
        dispute_reason: q.reason,
        dispute_bond: q.bond,
        dispute_asset: asset,
        dispute_at: q.now,
        dispute_referee_id: q.refereeJobId,
      })
      .where('job_id', '=', q.jobId)
      .execute();
    events.push({ at: q.now, subject: 'job', subjectId: q.jobId, type: 'verification.disputed', data: { bond: q.bond, asset, reason: q.reason, refereeJobId: q.refereeJobId } });
    await insertEvents(trx, ctx, events);
  });
  const r = await recordOf(ctx.db, ctx, q.jobId);
  if (!r) throw new Error(`invariant: verification of ${q.jobId} vanished`);
  return r;
}

/** The node's penalties (equivocations included: they write a penalty row too), newest first, keyset pages on (at, id). */
export async function listPenalties(ctx: StoreContext, nodeId: string, q: { limit: number; cursor?: string }): Promise<Page<PenaltyRecord>> {
  const limit = Math.max(1, Math.min(1000, Math.floor(q.limit)));
  let qb = ctx.db.selectFrom('penalties').selectAll().where('node_id', '=', nodeId);
  if (q.cursor) {
    const [at, id] = decodeCursor(q.cursor, ['number', 'string'] as const);
    qb = qb.where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('id', '<', id)])]));
  }
  const rows = await qb
    .orderBy('at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit).map(penaltyFromRow);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.at, last.id]) : null };
}
