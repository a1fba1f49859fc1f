/**
 * The verification step of a job as a pure state machine (TRUST.md layers 4–5): the store loads a snapshot
 * (the executor's committed result and the check runs made so far) and applies the plan this returns in one
 * transaction. Opening: audited (state auditing) or not (state window, with the honest label). Advancing:
 * after any check run ended, decide, queue referees, or wait. A result is the output digest and the exit
 * code together: a run that produced the same files but exited differently did not reproduce the job.
 */
import type { VerifyTerms } from '../records.js';
import type { AuditDecision } from './audit-rate.js';
import type { OutputSetFacts } from './checker.js';
import type { VerificationLabel, VerificationState } from './records.js';
import { mismatchVerdict } from './verification.js';

/** TRUST.md: disputable for 7 days; open tier p_floor 10%. */
export const DEFAULT_VERIFY_TERMS: Readonly<VerifyTerms> = { disputeWindowMs: 7 * 24 * 3_600_000, auditFloorBps: 1000 };
/** Referees that must agree with one side of an audit mismatch (core verification.ts mismatchVerdict). */
export const REFEREE_QUORUM = 2;
/** Referee runs an audit mismatch may take before it is left undecided (unaudited, pay held to the window). */
export const MAX_AUDIT_REFEREES = 5;
/** Referee runs that must agree to decide a dispute, either way. */
export const DISPUTE_QUORUM = 2;
/** Referee runs a dispute may take before, with no quorum either way, it is void (the bond returned). */
export const MAX_DISPUTE_REFEREES = 4;

export interface RunResult {
  outputDigest: string;
  exitCode: number | null;
}

/** One key per result: digest and exit code must both match. */
export const resultKey = (r: RunResult): string => `${r.outputDigest}#${r.exitCode ?? 'none'}`;

export type CheckOutcome = { status: 'running' } | { status: 'result'; result: RunResult } | { status: 'no-result' };

export interface StepCheck {
  jobId: string;
  kind: 'audit' | 'referee' | 'checker';
  /** A referee run of the buyer's dispute (not of an audit mismatch). */
  forDispute: boolean;
  outcome: CheckOutcome;
  /** A checker run (spec.verify): the two runs it compares ('executor' or a check run's job id). */
  pair?: readonly [string, string];
  /** spec.verify: what the run's stored outputs are, for the checker's inputs (null: not stored inline). */
  outputs?: OutputSetFacts | null;
}

export interface StepSnapshot {
  state: VerificationState;
  /** Why the job was (not) audited: sets the label a void dispute returns to. */
  reason: string;
  executor: RunResult;
  checks: readonly StepCheck[];
  disputed: boolean;
  /** spec.verify: results are compared by the buyer's checker (checker-step.ts), and the executor's outputs as stored. */
  checker?: { executorOutputs: OutputSetFacts | null };
}

export interface StepOpening {
  state: 'auditing' | 'window';
  label: VerificationLabel;
  reason: string;
}

/**
 * The step as it opens, from the audit decision and whether the treasury's audit budget can pay the run.
 * `outputsCheckable` false (spec.verify, and the executor's outputs cannot be handed to the buyer's checker):
 * an audit could never be compared, so none is run.
 */
export function openStep(d: AuditDecision, auditFunded: boolean, outputsCheckable = true): StepOpening {
  if (d.audit && !outputsCheckable) return { state: 'window', label: 'unaudited', reason: OUTPUTS_NOT_INLINE };
  if (d.audit && auditFunded) return { state: 'auditing', label: 'audit-pending', reason: d.reason };
  if (d.audit) return { state: 'window', label: 'unaudited', reason: 'audit-budget' };
  return { state: 'window', label: d.reason === 'not-deterministic' ? 'not-verifiable' : 'sampled-out', reason: d.reason };
}

/** The step's reason when the buyer asked for replicas: 2 (always re-run, never drawn). */
export const REPLICATED = 'replicated';
/** spec.verify: the reasons a step was left unaudited because the buyer's checker could not decide. */
export const OUTPUTS_NOT_INLINE = 'outputs-not-inline';
export const CHECKER_FAILED = 'checker-failed';

/**
 * The step of a job submitted with replicas: 2: forced to a second run (p = 1, no draw) on another operator,
 * paid by the buyer from the replica hold taken at submission. `funded` false only when that hold is gone
 * (never for a job submitted with it): then the job is unaudited in its window, with the reason said.
 */
export function openReplicaStep(funded: boolean): StepOpening {
  if (funded) return { state: 'auditing', label: 'replica-pending', reason: REPLICATED };
  return { state: 'window', label: 'unaudited', reason: 'replica-unfunded' };
}

/** The labels of an open and an agreed step: a replicated job says so, an audited one says audited. */
export const pendingLabel = (reason: string): VerificationLabel => (reason === REPLICATED ? 'replica-pending' : 'audit-pending');
export const agreedLabel = (reason: string): VerificationLabel => (reason === REPLICATED ? 'replicated-agreed' : 'audited-passed');

/** The label of a step in its window, from why it was not audited (a void dispute returns to it). */
export function windowLabel(reason: string): VerificationLabel {
  if (reason === 'not-deterministic') return 'not-verifiable';
  if (reason === 'sampled-out') return 'sampled-out';
  return 'unaudited';
}

export interface StepPlan {
  state: VerificationState;
  label: VerificationLabel;
  verdict: string | null;
  /** The step is over: pay released or forfeited (state passed or failed). */
  resolved: boolean;
  /** The executor's pay: released (pass), forfeited with a penalty (wrong), or still held (hold). */
  executor: 'pass' | 'wrong' | 'hold';
  /** True when an audit re-run agreed with the executor (its audit history and reputation count a pass). */
  auditPassed: boolean;
  /** Check runs whose own pay is released, and those confirmed wrong (their operator is penalized). */
  paidChecks: string[];
  wrongChecks: string[];
  /** Referee runs to queue now. */
  queueReferees: number;
  /** spec.verify: checker runs to queue now, each comparing two runs ('executor' or a check run's job id). */
  queueCheckers?: Array<readonly [string, string]>;
  /** The step's new reason, when it changes (spec.verify: checker-failed, outputs-not-inline). */
  reason?: string;
  /** What became of a dispute: the referee sided with the node, with the buyer, or produced nothing. */
  dispute?: 'rejected' | 'upheld' | 'void';
  /** The output both sides were judged against (the referees' quorum), when one was found. */
  truth?: string;
}

/** A plan with nothing moving but what `p` says. */
export const stepPlan = (p: Partial<StepPlan> & Pick<StepPlan, 'state' | 'label'>): StepPlan => ({
  verdict: null,
  resolved: false,
  executor: 'hold',
  auditPassed: false,
  paidChecks: [],
  wrongChecks: [],
  queueReferees: 0,
  ...p,
});

export type Ended = StepCheck & { outcome: { status: 'result'; result: RunResult } };
export const hasResult = (c: StepCheck): c is Ended => c.outcome.status === 'result';

/** The plan after a check run ended, or null to wait (a run of this round is still going). */
export function advanceStep(s: StepSnapshot): StepPlan | null {
  if (s.state !== 'auditing' && s.state !== 'refereeing') return null;
  return s.disputed ? advanceDispute(s) : advanceAudit(s);
}

function advanceAudit(s: StepSnapshot): StepPlan | null {
  const audit = s.checks.find((c) => c.kind === 'audit' && !c.forDispute);
  if (!audit || audit.outcome.status === 'running') return null;
  const withResults = s.checks.filter((c) => !c.forDispute).filter(hasResult);
  const allPaid = withResults.map((c) => c.jobId);
  const replicated = s.reason === REPLICATED;
  const run = replicated ? 'replica' : 'audit';
  if (audit.outcome.status === 'no-result') {
    return stepPlan({ state: 'window', label: 'unaudited', verdict: `the ${run} run ended without a result: unaudited, disputable until the window closes`, paidChecks: allPaid });
  }
  const exec = resultKey(s.executor);
  const auditKey = resultKey(audit.outcome.result);
  if (auditKey === exec) {
    const verdict = replicated
      ? 'the second run (replicas: 2) on another operator produced the same output and exit code'
      : 'an independent re-run on another operator produced the same output and exit code';
    return stepPlan({ state: 'passed', label: agreedLabel(s.reason), resolved: true, executor: 'pass', auditPassed: true, paidChecks: [audit.jobId], verdict });
  }
  const referees = s.checks.filter((c) => c.kind === 'referee' && !c.forDispute);
  if (referees.some((c) => c.outcome.status === 'running')) return null;
  const votes = referees.filter(hasResult);
  const v = mismatchVerdict(exec, auditKey, votes.map((c) => resultKey(c.outcome.result)), REFEREE_QUORUM);
  if (v.kind === 'decided') {
    const wrongChecks = withResults.filter((c) => resultKey(c.outcome.result) !== v.truth).map((c) => c.jobId);
    const paidChecks = withResults.filter((c) => resultKey(c.outcome.result) === v.truth).map((c) => c.jobId);
    const execWrong = v.wrong.includes('executor');
    return stepPlan({
      state: execWrong ? 'failed' : 'passed',
      label: execWrong ? 'wrong-result' : agreedLabel(s.reason),
      resolved: true,
      executor: execWrong ? 'wrong' : 'pass',
      auditPassed: !execWrong,
      paidChecks,
      wrongChecks,
      truth: v.truth,
      verdict: execWrong
        ? `${REFEREE_QUORUM} referee runs on independent operators contradicted the executor's committed result`
        : `the ${run} run disagreed, but ${REFEREE_QUORUM} referee runs on independent operators matched the executor's result; the ${replicated ? 'replica' : 'auditor'} was wrong`,
    });
  }
  if (referees.length >= MAX_AUDIT_REFEREES) {
    return stepPlan({ state: 'window', label: 'unaudited', paidChecks: allPaid, verdict: `the ${run} disagreed and ${referees.length} referee runs reached no quorum: unaudited, disputable until the window closes` });
  }
  // One referee at a time: each one is placed after the earlier ones ended, so it can avoid their operators
  // too (two referees queued together could both land on one third operator, whose single vote would count twice).
  return stepPlan({ state: 'refereeing', label: pendingLabel(s.reason), queueReferees: 1 });
}

/**
 * A dispute is decided like an audit mismatch: by DISPUTE_QUORUM referee runs on independent operators that
 * agree, with the node's committed result (the dispute was false) or on one other result (it was right). One
 * lying referee can neither convict an honest node nor cost an honest buyer its bond; referees that settle
 * nothing within MAX_DISPUTE_REFEREES make the dispute void (the bond returns).
 */
function advanceDispute(s: StepSnapshot): StepPlan | null {
  const referees = s.checks.filter((c) => c.forDispute);
  if (referees.length === 0 || referees.some((c) => c.outcome.status === 'running')) return null;
  const ended = referees.filter(hasResult);
  const executor = resultKey(s.executor);
  const votes = new Map<string, number>();
  for (const c of ended) {
    const k = resultKey(c.outcome.result);
    votes.set(k, (votes.get(k) ?? 0) + 1);
  }
  // Once a quorum settles the truth, referees that contradicted it are confirmed wrong, as in an audit mismatch.
  const judged = (truth: string) => ({
    paidChecks: ended.filter((c) => resultKey(c.outcome.result) === truth).map((c) => c.jobId),
    wrongChecks: ended.filter((c) => resultKey(c.outcome.result) !== truth).map((c) => c.jobId),
  });
  if ((votes.get(executor) ?? 0) >= DISPUTE_QUORUM) {
    return stepPlan({
      state: 'passed',
      label: 'dispute-rejected',
      resolved: true,
      executor: 'pass',
      ...judged(executor),
      dispute: 'rejected',
      verdict: `${DISPUTE_QUORUM} referee runs on independent operators matched the node's result: the dispute was false and the bond goes to the node's provider`,
    });
  }
  const truth = [...votes].find(([k, n]) => k !== executor && n >= DISPUTE_QUORUM)?.[0];
  if (truth !== undefined) {
    return stepPlan({
      state: 'failed',
      label: 'wrong-result',
      resolved: true,
      executor: 'wrong',
      ...judged(truth),
      dispute: 'upheld',
      truth,
      verdict: `${DISPUTE_QUORUM} referee runs on independent operators agreed on a result other than the node's committed one: the dispute was right`,
    });
  }
  if (referees.length < MAX_DISPUTE_REFEREES) return stepPlan({ state: 'refereeing', label: 'disputed', queueReferees: 1 });
  return stepPlan({
    state: 'window',
    label: windowLabel(s.reason),
    dispute: 'void',
    paidChecks: ended.map((c) => c.jobId),
    verdict: `the dispute's ${referees.length} referee runs settled nothing (${ended.length} with a result, no ${DISPUTE_QUORUM} agreeing): the dispute is void and the bond returned`,
  });
}

/** One honest sentence for the buyer (API, CLI, dashboard). `until` is the window's close, ISO 8601. */
export function verificationSummary(v: { state: VerificationState; label: VerificationLabel; p: number; windowClosesAt: number; reason?: string; byChecker?: boolean | undefined }): string {
  const p = `p=${v.p.toFixed(2)}`;
  const until = new Date(v.windowClosesAt).toISOString();
  switch (v.label) {
    case 'audit-pending':
      return `drawn for audit (${p}): an independent re-run on another operator is in progress; pay held until it ends`;
    case 'audited-passed':
      if (v.byChecker) return `audited with ${p}: an independent re-run on another operator agreed according to the buyer's checker`;
      return `audited with ${p}: an independent re-run on another operator matched`;
    case 'replica-pending':
      return 'replicas: 2: the second run on another operator (or, on a mismatch, referee runs) is in progress; pay held until it ends';
    case 'replicated-agreed':
      if (v.byChecker) return "replicated and agreed: a second run on another operator (or, on a mismatch, referee runs) agreed with this result according to the buyer's checker";
      return 'replicated and agreed: a second run on another operator (or, on a mismatch, referee runs) matched this result';
    case 'sampled-out':
      return v.state === 'released' ? `sampled out (${p}); the dispute window closed on ${until} and pay was released` : `sampled out (${p}); disputable until ${until}; pay held until then`;
    case 'not-verifiable':
      return v.state === 'released'
        ? `not verifiable (the job declared deterministic: false), never re-executed; the window closed on ${until}`
        : `not verifiable (the job declared deterministic: false), never re-executed; disputable until ${until}; pay held until then`;
    case 'unaudited':
      if (v.reason === OUTPUTS_NOT_INLINE || v.reason === CHECKER_FAILED) {
        const why = v.reason === OUTPUTS_NOT_INLINE ? 'the outputs are too large to hand to the buyer\'s checker inline' : "the buyer's checker ended without a verdict";
        return v.state === 'released' ? `${why}; the window closed on ${until}` : `${why}; disputable until ${until}; pay held until then`;
      }
      // The label (unaudited) is printed beside the summary: not repeated here.
      return v.state === 'released' ? `no audit could run; the window closed on ${until}` : `drawn (${p}) but no audit could run; disputable until ${until}; pay held until then`;
    case 'disputed':
      return 'disputed by the buyer: referee runs on independent operators decide (2 must agree); pay and bond held until then';
    case 'dispute-rejected':
      if (v.byChecker) return "dispute rejected: the buyer's checker found a referee run on an independent operator in agreement with the node's result; the bond went to the node's provider";
      return "dispute rejected: a referee run on an independent operator matched the node's result; the bond went to the node's provider";
    case 'wrong-result':
      return "wrong result: referee runs on independent operators contradicted the node's committed result; pay returned to the buyer, the node slashed and banned";
  }
}
