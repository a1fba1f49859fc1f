/**
 * The verification step of a job with spec.verify (issue 11): as verification-step.ts, but two results are
 * compared by the buyer's checker instead of by output digest. Identical results skip the checker. The audit
 * (or replica) ends → a checker run compares it with the executor → agree: passed; disagree: referees one
 * at a time, each followed by checker runs against the executor and against the auditor, until `quorum`
 * referees side with one of them (checker.ts checkerMismatchVerdict). A dispute's referee is compared with
 * the executor by a checker too. Outputs the checker cannot be given leave the step unaudited
 * (outputs-not-inline), and so do checker runs that never give a verdict (checker-failed). Pure.
 */
import { checkerMismatchVerdict, EXECUTOR, known, type PairVerdict, pairVerdict, type Side } from './checker.js';
import {
  advanceStep,
  stepPlan,
  type Ended,
  hasResult,
  agreedLabel,
  CHECKER_FAILED,
  DISPUTE_QUORUM,
  MAX_AUDIT_REFEREES,
  MAX_DISPUTE_REFEREES,
  OUTPUTS_NOT_INLINE,
  pendingLabel,
  REFEREE_QUORUM,
  REPLICATED,
  resultKey,
  type StepCheck,
  type StepPlan,
  type StepSnapshot,
  windowLabel,
} from './verification-step.js';

/** The step's next plan: by the buyer's checker when the snapshot has one (spec.verify), else by digest. */
export function advanceVerification(s: StepSnapshot): StepPlan | null {
  return s.checker ? advanceCheckerStep(s) : advanceStep(s);
}

const plan = stepPlan;
const running = (c: StepCheck): boolean => c.outcome.status === 'running';
const sideOf = (c: Ended): Side => ({ id: c.jobId, result: c.outcome.result, outputs: c.outputs });

export function advanceCheckerStep(s: StepSnapshot): StepPlan | null {
  if (s.state !== 'auditing' && s.state !== 'refereeing') return null;
  return s.disputed ? disputeByChecker(s) : auditByChecker(s);
}

/** The step left unaudited in its window because the checker could not decide a needed comparison. */
function undecided(v: 'failed' | 'uncheckable', paidChecks: string[], what: string): StepPlan {
  const reason = v === 'failed' ? CHECKER_FAILED : OUTPUTS_NOT_INLINE;
  const why = v === 'failed' ? "the buyer's checker ended without a verdict" : "the outputs cannot be handed to the buyer's checker (stored without their content, or too large for inline inputs)";
  return plan({ state: 'window', label: 'unaudited', reason, paidChecks, verdict: `${what}: ${why}; unaudited, disputable until the window closes` });
}

function auditByChecker(s: StepSnapshot): StepPlan | null {
  const audit = s.checks.find((c) => c.kind === 'audit' && !c.forDispute);
  if (!audit || running(audit)) return null;
  const judged = s.checks.filter((c) => c.kind !== 'checker' && !c.forDispute).filter(hasResult);
  const allPaid = judged.map((c) => c.jobId);
  const replicated = s.reason === REPLICATED;
  const run = replicated ? 'replica' : 'audit';
  if (!hasResult(audit)) {
    return plan({ state: 'window', label: 'unaudited', verdict: `the ${run} run ended without a result: unaudited, disputable until the window closes`, paidChecks: allPaid });
  }
  const exec: Side = { id: EXECUTOR, result: s.executor, outputs: s.checker?.executorOutputs };
  const aud = sideOf(audit);
  const first = pairVerdict(exec, aud, s.checks);
  if (first === 'pending') return null;
  if (first === 'unqueued') return plan({ state: s.state, label: pendingLabel(s.reason), queueCheckers: [[EXECUTOR, audit.jobId]] });
  if (first === 'failed' || first === 'uncheckable') return undecided(first, allPaid, `the ${run} run's result differs from the executor's`);
  if (first === 'agree') {
    const identical = resultKey(s.executor) === resultKey(audit.outcome.result);
    const who = replicated ? 'the second run (replicas: 2) on another operator' : 'an independent re-run on another operator';
    const verdict = identical ? `${who} produced the same output and exit code` : `${who} agreed with the executor's result according to the buyer's checker`;
    return plan({ state: 'passed', label: agreedLabel(s.reason), resolved: true, executor: 'pass', auditPassed: true, paidChecks: [audit.jobId], verdict });
  }
  const referees = s.checks.filter((c) => c.kind === 'referee' && !c.forDispute);
  if (referees.some(running)) return null;
  // Each referee with a result is compared with both sides; comparisons still needed are queued together.
  const need: Array<readonly [string, string]> = [];
  let waiting = false;
  const verdicts = new Map<string, { executor: PairVerdict; auditor: PairVerdict }>();
  for (const r of referees.filter(hasResult)) {
    const side = sideOf(r);
    const v = { executor: pairVerdict(exec, side, s.checks), auditor: pairVerdict(aud, side, s.checks) };
    verdicts.set(r.jobId, v);
    if (v.executor === 'unqueued') need.push([EXECUTOR, r.jobId]);
    if (v.auditor === 'unqueued') need.push([audit.jobId, r.jobId]);
    waiting ||= v.executor === 'pending' || v.auditor === 'pending';
  }
  if (need.length > 0) return plan({ state: 'refereeing', label: pendingLabel(s.reason), queueCheckers: need });
  if (waiting) return null;
  const votes = [...verdicts.values()].map((v) => ({ executor: known(v.executor), auditor: known(v.auditor) }));
  const d = checkerMismatchVerdict(votes, REFEREE_QUORUM);
  if (d.kind === 'decided') {
    const execWrong = d.winner === 'auditor';
    // Agreement with the winning side: its own run agrees, the other side does not, a referee as its checker said.
    const withWinner = (c: StepCheck): boolean | null => {
      if (c.jobId === audit.jobId) return execWrong;
      const v = verdicts.get(c.jobId);
      return v ? known(v[d.winner]) : null;
    };
    const wrongChecks = judged.filter((c) => withWinner(c) === false).map((c) => c.jobId);
    const paidChecks = judged.filter((c) => withWinner(c) !== false).map((c) => c.jobId);
    return plan({
      state: execWrong ? 'failed' : 'passed',
      label: execWrong ? 'wrong-result' : agreedLabel(s.reason),
      resolved: true,
      executor: execWrong ? 'wrong' : 'pass',
      auditPassed: !execWrong,
      paidChecks,
      wrongChecks,
      verdict: execWrong
        ? `${REFEREE_QUORUM} referee runs on independent operators agreed with the ${run} run and not with the executor's committed result, according to the buyer's checker`
        : `the ${run} run disagreed, but ${REFEREE_QUORUM} referee runs on independent operators agreed with the executor's result according to the buyer's checker; the ${replicated ? 'replica' : 'auditor'} was wrong`,
    });
  }
  if (referees.length >= MAX_AUDIT_REFEREES) {
    return plan({ state: 'window', label: 'unaudited', paidChecks: allPaid, verdict: `the ${run} disagreed and ${referees.length} referee runs reached no quorum by the buyer's checker: unaudited, disputable until the window closes` });
  }
  return plan({ state: 'refereeing', label: pendingLabel(s.reason), queueReferees: 1 });
}

/**
 * A dispute of a checker job, decided like the digest path (verification-step.ts advanceDispute): DISPUTE_QUORUM
 * referee runs the buyer's checker finds agreeing with the node reject it; DISPUTE_QUORUM it finds disagreeing
 * uphold it; otherwise more referees, up to MAX_DISPUTE_REFEREES, then the dispute is void.
 */
function disputeByChecker(s: StepSnapshot): StepPlan | null {
  const referees = s.checks.filter((c) => c.forDispute);
  if (referees.length === 0 || referees.some(running)) return null;
  const ended = referees.filter(hasResult);
  // No referee result yet: another referee, or void (as the digest step does).
  if (ended.length === 0) return advanceStep(s);
  const exec: Side = { id: EXECUTOR, result: s.executor, outputs: s.checker?.executorOutputs };
  const paidChecks = ended.map((c) => c.jobId);
  const unqueued: Array<[string, string]> = [];
  const agree: string[] = [];
  const disagree: string[] = [];
  let truth: string | undefined;
  for (const r of ended) {
    const v = pairVerdict(exec, sideOf(r), s.checks);
    if (v === 'pending') return null;
    if (v === 'unqueued') unqueued.push([EXECUTOR, r.jobId]);
    else if (v === 'failed' || v === 'uncheckable') {
      const why = v === 'failed' ? "the buyer's checker ended without a verdict" : "the outputs cannot be handed to the buyer's checker";
      return plan({ state: 'window', label: windowLabel(s.reason), dispute: 'void', paidChecks, verdict: `a referee run differs from the node's result and ${why}: the dispute is void and the bond returned` });
    } else if (v === 'agree') agree.push(r.jobId);
    else {
      disagree.push(r.jobId);
      truth = resultKey(r.outcome.result);
    }
  }
  if (unqueued.length > 0) return plan({ state: 'refereeing', label: 'disputed', queueCheckers: unqueued });
  if (agree.length >= DISPUTE_QUORUM) {
    return plan({
      state: 'passed',
      label: 'dispute-rejected',
      resolved: true,
      executor: 'pass',
      // The referee the quorum contradicted is confirmed wrong, as in an audit mismatch.
      paidChecks: agree,
      wrongChecks: disagree,
      dispute: 'rejected',
      verdict: `${DISPUTE_QUORUM} referee runs on independent operators agreed with the node's result according to the buyer's checker: the dispute was false and the bond goes to the node's provider`,
    });
  }
  if (disagree.length >= DISPUTE_QUORUM && truth !== undefined) {
    return plan({
      state: 'failed',
      label: 'wrong-result',
      resolved: true,
      executor: 'wrong',
      paidChecks: disagree,
      wrongChecks: agree,
      dispute: 'upheld',
      truth,
      verdict: `${DISPUTE_QUORUM} referee runs on independent operators disagreed with the node's committed result according to the buyer's checker: the dispute was right`,
    });
  }
  if (referees.length < MAX_DISPUTE_REFEREES) return plan({ state: 'refereeing', label: 'disputed', queueReferees: 1 });
  return plan({ state: 'window', label: windowLabel(s.reason), dispute: 'void', paidChecks, verdict: `the dispute's ${referees.length} referee runs reached no quorum by the buyer's checker: the dispute is void and the bond returned` });
}
