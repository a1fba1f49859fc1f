/**
 * Judging canaries (issue 11, TRUST.md layer 6 and its penalty "failed canary: as a wrong result"), inside
 * the transaction that ended the canary's attempt (or its referee's):
 * - the node's committed result equals the known answer: a pass (audits passed in a row +1, reputation
 *   canary-passed), its held pay released;
 * - it differs: the catalog alone convicts no one (an entry may not be reproducible), so one referee runs on
 *   an operator independent of the node, of the answer's operators and of earlier referees. The referee
 *   matches the known answer: core penaltyPlan('canary-failed') (pay forfeited and min(stake, 20 × price)
 *   slashed, to the treasury; banned) with its evidence, reputation canary-failed. It matches the node: the
 *   entry is wrong and leaves the catalog, no penalty. Neither (or no result): another referee, up to
 *   MAX_CANARY_REFEREES, then the entry is dropped;
 * - no result (infrastructure): nothing decided, held pay released.
 * The canary's unspent escrow (released to its buyer-looking account) goes back to the treasury.
 * Lock order: the canary's job row, its attempts, its canary_runs row, then node rows.
 */
import { ACCOUNTS, resultKey } from '@gpux/core';
import { type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import { selectJobRow } from './jobs.js';
import { type AttemptRow, attemptPriceFromRow, jobFromRow } from './rows.js';
import type { Database } from './schema.js';
import type { AttemptEndedInput } from './verification.js';
import { insertCheckJobIn, sweepToTreasuryIn, treasuryCanFund } from './verification-jobs.js';
import { applyWrongResultIn, recordAuditIn, releasePendingIn } from './verification-money.js';

/** Referee runs one canary mismatch may take before its catalog entry is dropped undecided. */
export const MAX_CANARY_REFEREES = 3;

const isTerminal = (s: string) => TERMINAL_JOB_STATES.includes(s as JobState);
const num = (v: number | null): number | null => (v === null ? null : Number(v));
type RunRow = Awaited<ReturnType<typeof lockRun>>;

function lockRun(trx: Kysely<Database>, ctx: StoreContext, jobId: string) {
  return trx
    .selectFrom('canary_runs')
    .selectAll()
    .where('job_id', '=', jobId)
    .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
}

const attemptsOf = (trx: Kysely<Database>, jobIds: readonly string[]): Promise<AttemptRow[]> =>
  jobIds.length === 0 ? Promise.resolve([]) : trx.selectFrom('attempts').selectAll().where('job_id', 'in', jobIds).orderBy('id').execute();

/** One-line dispatch from afterAttemptEndIn for jobs of kind canary (they never open a verification step). */
export async function canaryEndedIn(trx: Kysely<Database>, ctx: StoreContext, e: AttemptEndedInput): Promise<NewEvent[]> {
  const ended = isTerminal(e.job.state) && !isTerminal(e.previousJobState);
  if (ended) return judgeCanaryIn(trx, ctx, e.job.id, e.now);
  // Requeued, or an attempt ending after its job: it carries no judged result, and is paid as a buyer's would be.
  const rows = await trx.selectFrom('attempts').selectAll().where('id', '=', e.attempt.id).execute();
  return releasePendingIn(trx, ctx, rows, e.now, 'attempt ended without a result');
}

/** One-line dispatch from afterAttemptEndIn when a check run ended: a referee of a canary moves the canary. */
export async function canaryRefereeEndedIn(trx: Kysely<Database>, ctx: StoreContext, checkOf: string, now: number): Promise<NewEvent[]> {
  const run = await trx.selectFrom('canary_runs').select('state').where('job_id', '=', checkOf).executeTakeFirst();
  return run?.state === 'refereeing' ? judgeCanaryIn(trx, ctx, checkOf, now) : [];
}

/** Decide what can be decided about canary `jobId` now (idempotent: a decided run is left alone). */
export async function judgeCanaryIn(trx: Kysely<Database>, ctx: StoreContext, jobId: string, now: number): Promise<NewEvent[]> {
  const jobRow = await selectJobRow(trx, ctx, jobId, true);
  const run = await lockRun(trx, ctx, jobId);
  if (!jobRow || !run || (run.state !== 'running' && run.state !== 'refereeing')) return [];
  const job = jobFromRow(jobRow);
  if (!isTerminal(job.state)) return [];
  const events: NewEvent[] = [];
  if (job.payment) await sweepToTreasuryIn(trx, ctx, jobId, job.payment.asset, now, run.buyer_id);
  const attempts = await attemptsOf(trx, [jobId]);
  if (run.state === 'running') {
    const exec = attempts.find((a) => a.id === job.currentAttemptId);
    const committed = (job.state === 'succeeded' || (job.state === 'failed' && job.exitCode !== null)) && exec?.output_digest && exec.commitment;
    if (!exec || !committed) {
      events.push(...(await releasePendingIn(trx, ctx, attempts, now, 'attempt ended without a result')));
      return [...events, ...(await closeRunIn(trx, run, 'no-result', 'the canary ended without a result (infrastructure): nothing decided', now))];
    }
    const provider = await trx.selectFrom('nodes').select('provider_id').where('id', '=', exec.node_id).executeTakeFirst();
    const result = { outputDigest: exec.output_digest as string, exitCode: num(exec.exit_code) };
    await trx
      .updateTable('canary_runs')
      .set({ attempt_id: exec.id, node_id: exec.node_id, provider_id: provider?.provider_id ?? attemptPriceFromRow(exec)?.providerId ?? null, output_digest: result.outputDigest, exit_code: result.exitCode })
      .where('job_id', '=', jobId)
      .execute();
    const filled = { ...run, attempt_id: exec.id, node_id: exec.node_id, provider_id: provider?.provider_id ?? null, output_digest: result.outputDigest, exit_code: result.exitCode };
    if (resultKey(result) === knownKey(filled)) {
      events.push(...(await releasePendingIn(trx, ctx, attempts, now, 'audited-passed')));
      await recordAuditIn(trx, ctx, exec.node_id, true, now, 'canary');
      return [...events, ...(await closeRunIn(trx, filled, 'passed', 'the node reproduced the known answer', now))];
    }
    // Mismatch: the node's other attempts (retries that ended without this result) are paid; this one waits.
    events.push(...(await releasePendingIn(trx, ctx, attempts.filter((a) => a.id !== exec.id), now, 'attempt ended without a result')));
    events.push({ at: now, subject: 'job', subjectId: jobId, type: 'canary.mismatch', data: { nodeId: exec.node_id, outputDigest: result.outputDigest, exitCode: result.exitCode, knownDigest: run.known_digest } });
    return [...events, ...(await nextRefereeIn(trx, ctx, job, filled, [], now))];
  }
  return [...events, ...(await refereeVerdictIn(trx, ctx, job, run, attempts, now))];
}

const knownKey = (r: NonNullable<RunRow>) => resultKey({ outputDigest: r.known_digest, exitCode: num(r.known_exit_code) });
const nodeKey = (r: NonNullable<RunRow>) => resultKey({ outputDigest: r.output_digest ?? '', exitCode: num(r.exit_code) });

async function refereeVerdictIn(trx: Kysely<Database>, ctx: StoreContext, job: ReturnType<typeof jobFromRow>, run: NonNullable<RunRow>, attempts: AttemptRow[], now: number): Promise<NewEvent[]> {
  const referees = await trx.selectFrom('jobs').selectAll().where('check_of', '=', job.id).where('kind', '=', 'referee').orderBy('created_at').orderBy('id').execute();
  if (referees.length === 0 || referees.some((r) => !isTerminal(r.state))) return [];
  const refAttempts = await attemptsOf(
    trx,
    referees.map((r) => r.id),
  );
  const events = await releasePendingIn(trx, ctx, refAttempts, now, 'check run of a canary');
  const last = referees[referees.length - 1] as (typeof referees)[number];
  const la = refAttempts.find((a) => a.id === last.current_attempt_id);
  const lastResult = (last.state === 'succeeded' || (last.state === 'failed' && last.exit_code !== null)) && la?.output_digest ? resultKey({ outputDigest: la.output_digest, exitCode: num(la.exit_code) }) : null;
  const exec = attempts.find((a) => a.id === run.attempt_id);
  const refProviders = await trx
    .selectFrom('nodes')
    .select('provider_id')
    .where(
      'id',
      'in',
      refAttempts.map((a) => a.node_id).concat(['']),
    )
    .execute();
  const refEvidence = { jobId: last.id, nodeId: la?.node_id ?? null, outputDigest: la?.output_digest ?? null, exitCode: la ? num(la.exit_code) : null };
  if (lastResult !== null && lastResult === knownKey(run) && exec) {
    events.push(...(await applyCanaryFailedIn(trx, ctx, run, exec, refEvidence, now)));
    return [...events, ...(await closeRunIn(trx, run, 'failed', 'a referee run on an independent operator reproduced the known answer; the node did not', now))];
  }
  const dropEntry = async (why: string) => {
    await trx.deleteFrom('canary_specs').where('id', '=', run.spec_id).execute();
    events.push(...(await releasePendingIn(trx, ctx, attempts, now, 'audited-passed')));
    return [...events, ...(await closeRunIn(trx, run, 'dropped', why, now))];
  };
  if (lastResult !== null && lastResult === nodeKey(run)) return dropEntry('a referee run matched the node, not the catalog: the known answer was wrong and left the catalog; no penalty');
  if (Number(run.referees) >= MAX_CANARY_REFEREES) return dropEntry(`${run.referees} referee runs matched neither the node nor the known answer: the entry left the catalog; no penalty`);
  const avoid = refProviders.map((p) => p.provider_id).filter((p): p is string => p !== null);
  return [...events, ...(await nextRefereeIn(trx, ctx, job, run, avoid, now))];
}

/** Queue one referee (paid from the treasury); when the treasury cannot pay, nothing is decided and pay is released. */
async function nextRefereeIn(trx: Kysely<Database>, ctx: StoreContext, job: ReturnType<typeof jobFromRow>, run: NonNullable<RunRow>, earlier: string[], now: number): Promise<NewEvent[]> {
  if (!(await treasuryCanFund(trx, ctx, job))) {
    const events = await releasePendingIn(trx, ctx, await attemptsOf(trx, [job.id]), now, 'audited-passed');
    return [...events, ...(await closeRunIn(trx, run, 'no-result', "the treasury's audit budget cannot pay a referee run: nothing decided", now))];
  }
  const avoid = [run.provider_id, ...JSON.parse(run.known_operators), ...earlier].filter((p): p is string => typeof p === 'string' && p !== '');
  const { events } = await insertCheckJobIn(trx, ctx, { of: job, kind: 'referee', avoidProviderIds: avoid, now });
  await trx
    .updateTable('canary_runs')
    .set({ state: 'refereeing', referees: Number(run.referees) + 1 })
    .where('job_id', '=', job.id)
    .execute();
  return events;
}

async function closeRunIn(trx: Kysely<Database>, run: NonNullable<RunRow>, state: 'passed' | 'failed' | 'dropped' | 'no-result', verdict: string, now: number): Promise<NewEvent[]> {
  await trx.updateTable('canary_runs').set({ state, verdict, resolved_at: now }).where('job_id', '=', run.job_id).execute();
  return [{ at: now, subject: 'job', subjectId: run.job_id, type: `canary.${state === 'no-result' ? 'no_result' : state}`, data: { specId: run.spec_id, nodeId: run.node_id, verdict } }];
}

/** TRUST.md "failed canary": as a wrong result, with the treasury as the buyer (verification-money.ts applyWrongResultIn). */
async function applyCanaryFailedIn(trx: Kysely<Database>, ctx: StoreContext, run: NonNullable<RunRow>, a: AttemptRow, referee: Record<string, unknown>, now: number): Promise<NewEvent[]> {
  const evidence = {
    jobId: a.job_id,
    knownAnswer: { specId: run.spec_id, sourceJobId: run.source_job_id, outputDigest: run.known_digest, exitCode: num(run.known_exit_code), operators: JSON.parse(run.known_operators) },
    node: { attemptId: a.id, nodeId: a.node_id, outputDigest: a.output_digest, exitCode: num(a.exit_code), commitment: a.commitment ?? null, commitmentSignature: a.commitment_signature ?? null },
    referee,
  };
  const { events } = await applyWrongResultIn(trx, ctx, { kind: 'canary-failed', attempt: a, buyerAccount: ACCOUNTS.treasury, reporter: 'coordinator', evidence, now });
  return events;
}

