/**
 * The verification step with a buyer's checker (spec.verify, issue 11): identical results skip the checker,
 * a differing audit queues a checker run, its exit code decides, referees are each checked against both
 * sides until a quorum sides with one, checker failures and outputs the checker cannot receive leave the
 * step unaudited, and disputes are checked the same way. Also the pure verdicts (checker.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_INPUT_BYTES } from '@gpux/protocol';
import {
  advanceVerification,
  CHECKER_FAILED,
  checkerCanCompare,
  checkerMismatchVerdict,
  MAX_AUDIT_REFEREES,
  NO_OUTPUTS,
  OUTPUTS_NOT_INLINE,
  openStep,
  type OutputSetFacts,
  REPLICATED,
  type StepCheck,
  type StepSnapshot,
  verificationSummary,
} from '../src/index.js';

const SMALL: OutputSetFacts = { files: 1, chars: 100, longestPath: 12 };
const R = (d: string, exitCode: number | null = 0) => ({ status: 'result' as const, result: { outputDigest: d, exitCode } });
const running = { status: 'running' as const };
const none = { status: 'no-result' as const };
const audit = (outcome: StepCheck['outcome'], outputs: OutputSetFacts | null = SMALL): StepCheck => ({ jobId: 'audit', kind: 'audit', forDispute: false, outcome, outputs });
const ref = (id: string, outcome: StepCheck['outcome'], forDispute = false): StepCheck => ({ jobId: id, kind: 'referee', forDispute, outcome, outputs: SMALL });
/** A checker run comparing `a` and `b` that exited `exit` (null: still running; 'none': ended without a verdict). */
const chk = (id: string, a: string, b: string, exit: number | null | 'none'): StepCheck => ({
  jobId: id,
  kind: 'checker',
  forDispute: false,
  pair: [a, b],
  outcome: exit === null ? running : exit === 'none' ? none : R('verdict', exit),
});
const snap = (checks: StepCheck[], over: Partial<StepSnapshot> = {}): StepSnapshot => ({
  state: 'auditing',
  reason: 'first-audits',
  executor: { outputDigest: 'exec', exitCode: 0 },
  checks,
  disputed: false,
  checker: { executorOutputs: SMALL },
  ...over,
});

describe('checker verdicts (pure)', () => {
  it('two output sets fit one checker run only within the inline-input bounds, and only when both are stored inline', () => {
    assert.equal(checkerCanCompare(SMALL, SMALL), true);
    assert.equal(checkerCanCompare(SMALL, null), false);
    assert.equal(checkerCanCompare({ files: 40, chars: 10, longestPath: 5 }, { files: 30, chars: 10, longestPath: 5 }), false, 'more than 64 files');
    assert.equal(checkerCanCompare({ files: 1, chars: MAX_INPUT_BYTES, longestPath: 5 }, { files: 1, chars: 1, longestPath: 5 }), false, 'more than 1 MiB');
    assert.equal(checkerCanCompare({ files: 1, chars: 1, longestPath: 254 }, NO_OUTPUTS), false, 'a/ + 254 characters is no valid path');
  });

  it('a side wins when `quorum` referees agree with it and not with the other; both, neither or unknown is no vote', () => {
    assert.deepEqual(checkerMismatchVerdict([], 2), { kind: 'referee-needed' });
    assert.deepEqual(checkerMismatchVerdict([{ executor: true, auditor: false }], 2), { kind: 'referee-needed' });
    assert.deepEqual(checkerMismatchVerdict([{ executor: true, auditor: false }, { executor: true, auditor: false }], 2), { kind: 'decided', winner: 'executor' });
    assert.deepEqual(checkerMismatchVerdict([{ executor: false, auditor: true }, { executor: true, auditor: true }, { executor: false, auditor: true }], 2), { kind: 'decided', winner: 'auditor' });
    assert.deepEqual(
      checkerMismatchVerdict([{ executor: true, auditor: true }, { executor: false, auditor: false }, { executor: true, auditor: null }, { executor: null, auditor: true }], 2),
      { kind: 'referee-needed' },
    );
  });
});

describe('checker step: opening', () => {
  it('an audit whose executor outputs cannot be handed to the checker is never run: unaudited, outputs-not-inline', () => {
    assert.deepEqual(openStep({ audit: true, p: 1, draw: null, reason: 'first-audits' }, true, false), { state: 'window', label: 'unaudited', reason: OUTPUTS_NOT_INLINE });
    assert.equal(openStep({ audit: false, p: 0.1, draw: 0.5, reason: 'sampled-out' }, true, false).label, 'sampled-out');
  });
});

describe('checker step: audits', () => {
  it('identical results pass without a checker run', () => {
    const p = advanceVerification(snap([audit(R('exec'))]));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.label, 'audited-passed');
    assert.equal(p?.queueCheckers, undefined);
    assert.match(p?.verdict ?? '', /same output and exit code/);
  });

  it('a differing audit queues a checker of (executor, audit); exit 0 passes; while it runs the step waits', () => {
    const first = advanceVerification(snap([audit(R('other'))]));
    assert.equal(first?.state, 'auditing');
    assert.equal(first?.label, 'audit-pending');
    assert.deepEqual(first?.queueCheckers, [['executor', 'audit']]);
    assert.equal(advanceVerification(snap([audit(R('other')), chk('c1', 'executor', 'audit', null)])), null);
    const p = advanceVerification(snap([audit(R('other')), chk('c1', 'executor', 'audit', 0)]));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.executor, 'pass');
    assert.equal(p?.auditPassed, true);
    assert.deepEqual(p?.paidChecks, ['audit']);
    assert.match(p?.verdict ?? '', /according to the buyer's checker/);
  });

  it('a replica compared by the checker: replicated-agreed', () => {
    const p = advanceVerification(snap([audit(R('other')), chk('c1', 'executor', 'audit', 0)], { reason: REPLICATED }));
    assert.equal(p?.label, 'replicated-agreed');
  });

  it('different exit codes disagree without a checker run', () => {
    const p = advanceVerification(snap([audit(R('other', 1))]));
    assert.equal(p?.queueCheckers, undefined);
    assert.equal(p?.queueReferees, 1);
  });

  it('the checker ending without a verdict is retried once, then the step is unaudited (checker-failed)', () => {
    const again = advanceVerification(snap([audit(R('other')), chk('c1', 'executor', 'audit', 'none')]));
    assert.deepEqual(again?.queueCheckers, [['executor', 'audit']]);
    const p = advanceVerification(snap([audit(R('other')), chk('c1', 'executor', 'audit', 'none'), chk('c2', 'executor', 'audit', 'none')]));
    assert.equal(p?.state, 'window');
    assert.equal(p?.label, 'unaudited');
    assert.equal(p?.reason, CHECKER_FAILED);
    assert.equal(p?.executor, 'hold');
    assert.deepEqual(p?.paidChecks, ['audit']);
  });

  it('outputs stored without content cannot be checked: unaudited, outputs-not-inline', () => {
    const p = advanceVerification(snap([audit(R('other'), null)]));
    assert.equal(p?.state, 'window');
    assert.equal(p?.reason, OUTPUTS_NOT_INLINE);
    const q = advanceVerification(snap([audit(R('other'))], { checker: { executorOutputs: null } }));
    assert.equal(q?.reason, OUTPUTS_NOT_INLINE);
  });

  it('disagreement: one referee at a time, each checked against both sides; two siding with the auditor convict the executor', () => {
    const base = [audit(R('truth')), chk('c1', 'executor', 'audit', 3)];
    const r1 = advanceVerification(snap(base));
    assert.equal(r1?.state, 'refereeing');
    assert.equal(r1?.queueReferees, 1);
    const afterRef = advanceVerification(snap([...base, ref('r1', R('truth2'))], { state: 'refereeing' }));
    assert.deepEqual(afterRef?.queueCheckers, [
      ['executor', 'r1'],
      ['audit', 'r1'],
    ]);
    const voted1 = [...base, ref('r1', R('truth2')), chk('c2', 'executor', 'r1', 1), chk('c3', 'audit', 'r1', 0)];
    assert.equal(advanceVerification(snap(voted1, { state: 'refereeing' }))?.queueReferees, 1, 'one vote is no quorum');
    // The second referee's output is identical to the auditor's: no checker needed on that side.
    const withR2 = [...voted1, ref('r2', R('truth'))];
    assert.deepEqual(advanceVerification(snap(withR2, { state: 'refereeing' }))?.queueCheckers, [['executor', 'r2']]);
    assert.equal(advanceVerification(snap([...withR2, chk('c4', 'executor', 'r2', null)], { state: 'refereeing' })), null);
    const p = advanceVerification(snap([...withR2, chk('c4', 'executor', 'r2', 1)], { state: 'refereeing' }));
    assert.equal(p?.state, 'failed');
    assert.equal(p?.label, 'wrong-result');
    assert.equal(p?.executor, 'wrong');
    assert.deepEqual(p?.paidChecks, ['audit', 'r1', 'r2']);
    assert.deepEqual(p?.wrongChecks, []);
  });

  it('two referees siding with the executor: the auditor is wrong, and so is a referee that sided with it', () => {
    const checks = [
      audit(R('lie')),
      chk('c1', 'executor', 'audit', 1),
      ref('r1', R('x1')),
      chk('c2', 'executor', 'r1', 0),
      chk('c3', 'audit', 'r1', 1),
      ref('r2', R('x2')),
      chk('c4', 'executor', 'r2', 1),
      chk('c5', 'audit', 'r2', 0),
      ref('r3', R('x3')),
      chk('c6', 'executor', 'r3', 0),
      chk('c7', 'audit', 'r3', 1),
    ];
    const p = advanceVerification(snap(checks, { state: 'refereeing' }));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.executor, 'pass');
    assert.deepEqual(p?.wrongChecks, ['audit', 'r2']);
    assert.deepEqual(p?.paidChecks, ['r1', 'r3']);
    assert.match(p?.verdict ?? '', /the auditor was wrong/);
  });

  it('referees whose comparisons cannot be decided do not vote; past the cap the step is unaudited', () => {
    const checks: StepCheck[] = [audit(R('a')), chk('c1', 'executor', 'audit', 1)];
    for (let i = 1; i <= MAX_AUDIT_REFEREES; i++) checks.push(ref(`r${i}`, R(`r${i}`)), chk(`e${i}`, 'executor', `r${i}`, 0), chk(`a${i}`, 'audit', `r${i}`, 0));
    const p = advanceVerification(snap(checks, { state: 'refereeing' }));
    assert.equal(p?.state, 'window');
    assert.equal(p?.label, 'unaudited');
    assert.match(p?.verdict ?? '', /no quorum/);
  });
});

describe('checker step: disputes', () => {
  const disputed = (checks: StepCheck[]) => snap(checks, { state: 'refereeing', disputed: true, reason: 'sampled-out' });
  it("each dispute referee is checked against the executor; 2 agreeing reject the dispute, 2 disagreeing uphold it, one alone decides nothing", () => {
    assert.deepEqual(advanceVerification(disputed([ref('d1', R('other'), true)]))?.queueCheckers, [['executor', 'd1']]);
    assert.equal(advanceVerification(disputed([ref('d1', R('other'), true), chk('c1', 'executor', 'd1', 2)]))?.queueReferees, 1, 'one disagreeing referee cannot convict');
    const rejected = advanceVerification(disputed([ref('d1', R('other'), true), chk('c1', 'executor', 'd1', 0), ref('d2', R('other2'), true), chk('c2', 'executor', 'd2', 0)]));
    assert.equal(rejected?.dispute, 'rejected');
    assert.equal(rejected?.label, 'dispute-rejected');
    const upheld = advanceVerification(disputed([ref('d1', R('other'), true), chk('c1', 'executor', 'd1', 2), ref('d2', R('other2'), true), chk('c2', 'executor', 'd2', 1)]));
    assert.equal(upheld?.dispute, 'upheld');
    assert.equal(upheld?.executor, 'wrong');
  });

  it('a checker that cannot decide voids the dispute (bond returned); a referee without a result is replaced', () => {
    const v = advanceVerification(disputed([ref('d1', R('other'), true), chk('c1', 'executor', 'd1', 'none'), chk('c2', 'executor', 'd1', 'none')]));
    assert.equal(v?.dispute, 'void');
    assert.equal(v?.label, 'sampled-out');
    assert.equal(advanceVerification(disputed([ref('d1', none, true)]))?.queueReferees, 1);
  });
});

describe('checker step: summaries', () => {
  it('say when the buyer checker decided, and why a step is unaudited', () => {
    const at = { state: 'passed' as const, p: 1, windowClosesAt: 0 };
    assert.match(verificationSummary({ ...at, label: 'audited-passed', byChecker: true }), /agreed according to the buyer's checker/);
    assert.match(verificationSummary({ ...at, label: 'audited-passed' }), /matched/);
    assert.match(verificationSummary({ ...at, state: 'window', label: 'unaudited', reason: OUTPUTS_NOT_INLINE }), /too large to hand to the buyer's checker/);
    assert.match(verificationSummary({ ...at, state: 'window', label: 'unaudited', reason: CHECKER_FAILED }), /checker ended without a verdict/);
  });
});
