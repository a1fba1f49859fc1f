/**
 * Reading the verification step: the verifications row and its check runs (jobs of kind audit/referee, and
 * checker with spec.verify, with check_of = the job, and the attempt that carries each one's result), as
 * core records and as the pure step's snapshot.
 */
import {
  CHECKER_FAILED,
  type CheckOutcome,
  type CheckRunRecord,
  EXECUTOR,
  OUTPUTS_NOT_INLINE,
  type OutputSetFacts,
  type PenaltyRecord,
  resultKey,
  type StepCheck,
  type StepSnapshot,
  type VerificationLabel,
  type VerificationRecord,
  type VerificationState,
} from '@gpux/core';
import { type Asset, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import { chunks, type StoreContext } from './context.js';
import type { Database, PenaltiesTable, VerificationsTable } from './schema.js';
import { pairOfName } from './verification-checkers.js';

export type VerificationRow = Selectable<VerificationsTable>;

/** A check run with what the step needs: its outcome, node and operator (for the next run's avoid list). */
export interface CheckRun extends CheckRunRecord {
  /** Who the run was submitted for: the system audit buyer (treasury-paid), or the job's buyer for a replica. */
  buyerId: string;
  attemptId: string | null;
  providerId: string | null;
  createdAt: number;
  outcome: CheckOutcome;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

/** The check runs of these jobs, oldest first, by checked job id. */
export async function loadChecks(db: Kysely<Database>, ctx: StoreContext, jobIds: readonly string[]): Promise<Map<string, CheckRun[]>> {
  const out = new Map<string, CheckRun[]>();
  if (jobIds.length === 0) return out;
  const jobs: { id: string; buyer_id: string; name: string; kind: string | undefined; check_of: string | null | undefined; state: string; exit_code: number | null; current_attempt_id: string | null; created_at: number }[] = [];
  for (const part of chunks([...new Set(jobIds)], 1, ctx.q)) {
    jobs.push(
      ...(await db
        .selectFrom('jobs')
        .select(['id', 'buyer_id', 'name', 'kind', 'check_of', 'state', 'exit_code', 'current_attempt_id', 'created_at'])
        .where('check_of', 'in', part)
        .where('kind', 'in', ['audit', 'referee', 'checker'])
        .orderBy('created_at')
        .orderBy('id')
        .execute()),
    );
  }
  const attemptIds = jobs.map((j) => j.current_attempt_id).filter((x): x is string => x !== null);
  const attempts = new Map<string, { node_id: string; output_digest: string | null; exit_code: number | null; state: string; provider: string | null }>();
  for (const part of chunks(attemptIds, 1, ctx.q)) {
    const rows = await db
      .selectFrom('attempts')
      .leftJoin('nodes', 'nodes.id', 'attempts.node_id')
      .select(['attempts.id', 'attempts.node_id', 'attempts.output_digest', 'attempts.exit_code', 'attempts.state', 'nodes.provider_id'])
      .where('attempts.id', 'in', part)
      .execute();
    for (const r of rows) attempts.set(r.id, { node_id: r.node_id, output_digest: r.output_digest, exit_code: num(r.exit_code), state: r.state, provider: r.provider_id ?? null });
  }
  for (const j of jobs) {
    const a = j.current_attempt_id ? attempts.get(j.current_attempt_id) : undefined;
    const terminal = TERMINAL_JOB_STATES.includes(j.state as JobState);
    // A committed result: the run succeeded, or its program exited non-zero (both are outputs to compare).
    const committed = (j.state === 'succeeded' || (j.state === 'failed' && j.exit_code !== null)) && a?.output_digest;
    const outcome: CheckOutcome = !terminal
      ? { status: 'running' }
      : committed && a?.output_digest
        ? { status: 'result', result: { outputDigest: a.output_digest, exitCode: a.exit_code } }
        : { status: 'no-result' };
    const pair = j.kind === 'checker' ? pairOfName(j.name) : null;
    const run: CheckRun = {
      jobId: j.id,
      kind: j.kind as CheckRun['kind'],
      ...(pair ? { pair } : {}),
      buyerId: j.buyer_id,
      state: j.state,
      nodeId: a?.node_id ?? null,
      outputDigest: outcome.status === 'result' ? outcome.result.outputDigest : null,
      exitCode: outcome.status === 'result' ? outcome.result.exitCode : null,
      attemptId: j.current_attempt_id,
      providerId: a?.provider ?? null,
      createdAt: Number(j.created_at),
      outcome,
    };
    const list = out.get(j.check_of as string) ?? [];
    list.push(run);
    out.set(j.check_of as string, list);
  }
  return out;
}

/** A referee queued at or after the dispute is the dispute's. */
export const isDisputeCheck = (v: VerificationRow, c: CheckRun): boolean => c.kind === 'referee' && v.dispute_at !== null && c.createdAt >= Number(v.dispute_at);

/**
 * The pure step's snapshot. `outputs` (spec.verify only: what each attempt's stored outputs are, by attempt
 * id) makes it a checker step (core trust/checker-step.ts); without it, checker runs are left out.
 */
export function snapshotOf(v: VerificationRow, checks: readonly CheckRun[], outputs?: ReadonlyMap<string, OutputSetFacts | null>): StepSnapshot {
  const facts = (attemptId: string | null) => (attemptId === null ? null : (outputs?.get(attemptId) ?? null));
  return {
    state: v.state as VerificationState,
    reason: v.reason,
    executor: { outputDigest: v.output_digest, exitCode: num(v.exit_code) },
    checks: checks
      .filter((c) => outputs || c.kind !== 'checker')
      .map(
        (c): StepCheck => ({
          jobId: c.jobId,
          kind: c.kind,
          forDispute: isDisputeCheck(v, c),
          outcome: c.outcome,
          ...(c.pair ? { pair: c.pair } : {}),
          ...(outputs ? { outputs: facts(c.attemptId) } : {}),
        }),
      ),
    disputed: v.dispute_at !== null && v.state === 'refereeing',
    ...(outputs ? { checker: { executorOutputs: facts(v.attempt_id) } } : {}),
  };
}

/**
 * Whether each run agreed with the executor, for the record: identical results do; with spec.verify the
 * last checker run of the pair says (null while it runs, or when none could run); without it, digests differ.
 * A checker run "agreed" when it exited 0. The step's record is checker-based when it has checker runs or
 * was left unaudited for a checker reason.
 */
function agreements(v: VerificationRow, checks: readonly CheckRun[]): Array<boolean | null> {
  const checkers = checks.filter((c) => c.kind === 'checker');
  const checkerMode = checkers.length > 0 || v.reason === CHECKER_FAILED || v.reason === OUTPUTS_NOT_INLINE;
  const executor = { outputDigest: v.output_digest, exitCode: num(v.exit_code) };
  const verdictOf = (c: CheckRun): boolean | null => (c.outcome.status === 'result' ? c.outcome.result.exitCode === 0 : null);
  return checks.map((c) => {
    if (c.kind === 'checker') return verdictOf(c);
    if (c.outcome.status !== 'result') return null;
    if (resultKey(c.outcome.result) === resultKey(executor)) return true;
    if (!checkerMode || c.outcome.result.exitCode !== executor.exitCode) return false;
    const runs = checkers.filter((k) => k.pair?.includes(EXECUTOR) && k.pair.includes(c.jobId));
    const last = runs[runs.length - 1];
    return last ? verdictOf(last) : null;
  });
}

export function verificationFromRow(v: VerificationRow, checks: readonly CheckRun[]): VerificationRecord {
  const agreed = agreements(v, checks);
  // Passed by the buyer's checker: a checker run comparing the executor with another run said they agree.
  const byChecker = (v.state === 'passed' || v.state === 'released') && checks.some((c, i) => c.kind === 'checker' && c.pair?.includes(EXECUTOR) && agreed[i] === true);
  return {
    jobId: v.job_id,
    attemptId: v.attempt_id,
    nodeId: v.node_id,
    providerId: v.provider_id,
    state: v.state as VerificationState,
    label: v.label as VerificationLabel,
    p: Number(v.p),
    draw: v.draw === null ? null : Number(v.draw),
    reason: v.reason,
    outputDigest: v.output_digest,
    exitCode: num(v.exit_code),
    windowClosesAt: Number(v.window_closes_at),
    checks: checks.map(({ jobId, kind, state, nodeId, outputDigest, exitCode, pair }, i) => ({ jobId, kind, state, nodeId, outputDigest, exitCode, ...(pair ? { pair } : {}), agreed: agreed[i] ?? null })),
    dispute:
      v.dispute_at === null
        ? null
        : { buyerId: v.dispute_buyer_id ?? '', reason: v.dispute_reason ?? '', bond: Number(v.dispute_bond ?? 0), asset: (v.dispute_asset ?? 'usdc') as Asset, at: Number(v.dispute_at) },
    verdict: v.verdict,
    ...(byChecker ? { byChecker } : {}),
    createdAt: Number(v.created_at),
    resolvedAt: num(v.resolved_at),
  };
}

export function penaltyFromRow(r: Selectable<PenaltiesTable>): PenaltyRecord {
  return {
    id: r.id,
    nodeId: r.node_id,
    kind: r.kind as PenaltyRecord['kind'],
    jobId: r.job_id,
    attemptId: r.attempt_id,
    evidence: JSON.parse(r.evidence),
    transferId: r.transfer_id,
    slashed: Number(r.slashed),
    fee: Number(r.fee),
    banned: Number(r.banned) === 1,
    suspended: Number(r.suspended) === 1,
    reason: r.reason,
    at: Number(r.at),
  };
}
