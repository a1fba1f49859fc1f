/**
 * The verification step's state machine (issue 11): opening labels, audit agree/disagree, referee quorum
 * (executor wrong, auditor wrong, no quorum), check runs without a result, and disputes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { advanceStep, MAX_AUDIT_REFEREES, MAX_DISPUTE_REFEREES, openReplicaStep, openStep, REPLICATED, type StepCheck, type StepSnapshot, verificationSummary } from '../src/index.js';

const R = (d: string, exitCode: number | null = 0) => ({ status: 'result' as const, result: { outputDigest: d, exitCode } });
const running = { status: 'running' as const };
const none = { status: 'no-result' as const };
const audit = (outcome: StepCheck['outcome']): StepCheck => ({ jobId: 'audit', kind: 'audit', forDispute: false, outcome });
const ref = (id: string, outcome: StepCheck['outcome'], forDispute = false): StepCheck => ({ jobId: id, kind: 'referee', forDispute, outcome });
const snap = (checks: StepCheck[], over: Partial<StepSnapshot> = {}): StepSnapshot => ({
  state: 'auditing',
  reason: 'first-audits',
  executor: { outputDigest: 'good', exitCode: 0 },
  checks,
  disputed: false,
  ...over,
});

describe('verification step: opening', () => {
  it('audited and funded → auditing; unfunded → unaudited (audit-budget); sampled out; not deterministic', () => {
    assert.deepEqual(openStep({ audit: true, p: 1, draw: null, reason: 'first-audits' }, true), { state: 'auditing', label: 'audit-pending', reason: 'first-audits' });
    assert.deepEqual(openStep({ audit: true, p: 0.1, draw: 0.05, reason: 'sampled' }, false), { state: 'window', label: 'unaudited', reason: 'audit-budget' });
    assert.deepEqual(openStep({ audit: false, p: 0.1, draw: 0.5, reason: 'sampled-out' }, true), { state: 'window', label: 'sampled-out', reason: 'sampled-out' });
    assert.deepEqual(openStep({ audit: false, p: 0, draw: null, reason: 'not-deterministic' }, true), { state: 'window', label: 'not-verifiable', reason: 'not-deterministic' });
  });
});

describe('verification step: audits', () => {
  it('waits while the audit runs; an agreeing audit passes and pays both', () => {
    assert.equal(advanceStep(snap([audit(running)])), null);
    const p = advanceStep(snap([audit(R('good'))]));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.label, 'audited-passed');
    assert.equal(p?.executor, 'pass');
    assert.equal(p?.auditPassed, true);
    assert.deepEqual(p?.paidChecks, ['audit']);
  });

  it('the same output with another exit code is a mismatch', () => {
    assert.equal(advanceStep(snap([audit(R('good', 1))]))?.queueReferees, 1);
  });

  it('an audit without a result leaves the step unaudited in its window, pay held', () => {
    const p = advanceStep(snap([audit(none)]));
    assert.equal(p?.state, 'window');
    assert.equal(p?.label, 'unaudited');
    assert.equal(p?.executor, 'hold');
    assert.equal(p?.resolved, false);
  });

  it('a mismatch queues referees one at a time (each avoids the earlier ones); two agreeing with the auditor convict the executor', () => {
    const first = advanceStep(snap([audit(R('true'))]));
    assert.equal(first?.state, 'refereeing');
    assert.equal(first?.queueReferees, 1);
    const second = advanceStep(snap([audit(R('true')), ref('r1', R('true'))], { state: 'refereeing' }));
    assert.equal(second?.state, 'refereeing');
    assert.equal(second?.queueReferees, 1, 'one vote is no quorum: the next referee');
    assert.equal(advanceStep(snap([audit(R('true')), ref('r1', R('true')), ref('r2', running)], { state: 'refereeing' })), null);
    const p = advanceStep(snap([audit(R('true')), ref('r1', R('true')), ref('r2', R('true'))], { state: 'refereeing' }));
    assert.equal(p?.state, 'failed');
    assert.equal(p?.label, 'wrong-result');
    assert.equal(p?.executor, 'wrong');
    assert.deepEqual(p?.paidChecks, ['audit', 'r1', 'r2']);
    assert.deepEqual(p?.wrongChecks, []);
  });

  it('two referees agreeing with the executor: the auditor is wrong and the executor passes', () => {
    const p = advanceStep(snap([audit(R('lie')), ref('r1', R('good')), ref('r2', R('good'))], { state: 'refereeing' }));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.executor, 'pass');
    assert.deepEqual(p?.wrongChecks, ['audit']);
    assert.deepEqual(p?.paidChecks, ['r1', 'r2']);
  });

  it('split referees ask for one more; past the cap the step is left unaudited', () => {
    assert.equal(advanceStep(snap([audit(R('x')), ref('r1', R('good')), ref('r2', R('x'))], { state: 'refereeing' }))?.queueReferees, 1);
    const refs = Array.from({ length: MAX_AUDIT_REFEREES }, (_, i) => ref(`r${i}`, i % 2 ? R('good') : none));
    const p = advanceStep(snap([audit(R('x')), ...refs.slice(0, MAX_AUDIT_REFEREES)], { state: 'refereeing' }));
    // r1 and r3 voted good (2 = quorum): decided for the executor.
    assert.equal(p?.executor, 'pass');
    const undecided = Array.from({ length: MAX_AUDIT_REFEREES }, (_, i) => ref(`r${i}`, none));
    const q = advanceStep(snap([audit(R('x')), ...undecided], { state: 'refereeing' }));
    assert.equal(q?.state, 'window');
    assert.equal(q?.label, 'unaudited');
  });

  it('a settled step does not move', () => {
    assert.equal(advanceStep(snap([audit(R('good'))], { state: 'passed' })), null);
  });
});

describe('verification step: disputes', () => {
  const d = (checks: StepCheck[]) => snap(checks, { state: 'refereeing', disputed: true, reason: 'sampled-out' });
  it('2 referees matching the node reject the dispute; 2 agreeing on another result uphold it; one alone decides nothing', () => {
    assert.equal(advanceStep(d([ref('d1', running, true)])), null);
    assert.equal(advanceStep(d([ref('d1', R('good'), true)]))?.queueReferees, 1, 'one matching referee: another one');
    assert.equal(advanceStep(d([ref('d1', R('other'), true)]))?.queueReferees, 1, 'one lying referee cannot convict');
    const rejected = advanceStep(d([ref('d1', R('other'), true), ref('d2', R('good'), true), ref('d3', R('good'), true)]));
    assert.equal(rejected?.dispute, 'rejected');
    assert.equal(rejected?.label, 'dispute-rejected');
    assert.equal(rejected?.executor, 'pass');
    assert.deepEqual([rejected?.paidChecks, rejected?.wrongChecks], [['d2', 'd3'], ['d1']], 'the outvoted referee is confirmed wrong, not paid');
    const upheld = advanceStep(d([ref('d1', R('other'), true), ref('d2', R('other'), true)]));
    assert.equal(upheld?.dispute, 'upheld');
    assert.equal(upheld?.label, 'wrong-result');
    assert.equal(upheld?.executor, 'wrong');
    const split = advanceStep(d([ref('d1', R('x'), true), ref('d2', R('y'), true), ref('d3', R('good'), true), ref('d4', R('z'), true)]));
    assert.equal(split?.dispute, 'void', 'no 2 agreeing within the bound: void, the bond returns');
  });

  it('referees without a result are replaced, then the dispute is void and the window label returns', () => {
    assert.equal(advanceStep(d([ref('d1', none, true)]))?.queueReferees, 1);
    const void_ = advanceStep(d(Array.from({ length: MAX_DISPUTE_REFEREES }, (_, i) => ref(`d${i}`, none, true))));
    assert.equal(void_?.dispute, 'void');
    assert.equal(void_?.state, 'window');
    assert.equal(void_?.label, 'sampled-out');
  });
});

describe('verification summary', () => {
  it('says p and the window honestly', () => {
    assert.match(verificationSummary({ state: 'passed', label: 'audited-passed', p: 0.1, windowClosesAt: 0 }), /audited with p=0\.10: an independent re-run on another operator matched/);
    assert.match(verificationSummary({ state: 'window', label: 'sampled-out', p: 0.1, windowClosesAt: 0 }), /sampled out \(p=0\.10\); disputable until 1970-01-01T00:00:00\.000Z; pay held until then/);
  });
});

describe('verification step: replicas: 2', () => {
  const rep = (checks: StepCheck[], over: Partial<StepSnapshot> = {}) => snap(checks, { reason: REPLICATED, ...over });
  it('opens as a replica run (funded by the hold taken at submission), or unaudited with the reason when that hold is gone', () => {
    assert.deepEqual(openReplicaStep(true), { state: 'auditing', label: 'replica-pending', reason: 'replicated' });
    assert.deepEqual(openReplicaStep(false), { state: 'window', label: 'unaudited', reason: 'replica-unfunded' });
  });

  it('an agreeing replica: replicated-agreed, both paid, and it counts as an audit pass', () => {
    assert.equal(advanceStep(rep([audit(running)])), null);
    const p = advanceStep(rep([audit(R('good'))]));
    assert.equal(p?.state, 'passed');
    assert.equal(p?.label, 'replicated-agreed');
    assert.equal(p?.executor, 'pass');
    assert.equal(p?.auditPassed, true);
    assert.deepEqual(p?.paidChecks, ['audit']);
    assert.match(p?.verdict ?? '', /second run \(replicas: 2\) on another operator produced the same output/);
  });

  it('a mismatch: referees (label replica-pending meanwhile); the liar is convicted either way', () => {
    const first = advanceStep(rep([audit(R('true'))]));
    assert.equal(first?.state, 'refereeing');
    assert.equal(first?.label, 'replica-pending');
    assert.equal(first?.queueReferees, 1);
    const execWrong = advanceStep(rep([audit(R('true')), ref('r1', R('true')), ref('r2', R('true'))], { state: 'refereeing' }));
    assert.equal(execWrong?.label, 'wrong-result');
    assert.equal(execWrong?.executor, 'wrong');
    assert.deepEqual(execWrong?.paidChecks, ['audit', 'r1', 'r2']);
    const replicaWrong = advanceStep(rep([audit(R('bad')), ref('r1', R('good')), ref('r2', R('good'))], { state: 'refereeing' }));
    assert.equal(replicaWrong?.state, 'passed');
    assert.equal(replicaWrong?.label, 'replicated-agreed');
    assert.equal(replicaWrong?.executor, 'pass');
    assert.deepEqual(replicaWrong?.wrongChecks, ['audit']);
    assert.match(replicaWrong?.verdict ?? '', /the replica was wrong/);
  });

  it('a replica without a result, or referees without a quorum: unaudited in the window', () => {
    const p = advanceStep(rep([audit(none)]));
    assert.equal(p?.label, 'unaudited');
    assert.match(p?.verdict ?? '', /replica run ended without a result/);
    const refs = Array.from({ length: MAX_AUDIT_REFEREES }, (_, i) => ref(`r${i}`, R(`x${i}`)));
    assert.equal(advanceStep(rep([audit(R('bad')), ...refs], { state: 'refereeing' }))?.label, 'unaudited');
  });

  it('summaries say replicated, never audited with p', () => {
    assert.match(verificationSummary({ state: 'auditing', label: 'replica-pending', p: 1, windowClosesAt: 0 }), /replicas: 2: the second run on another operator .* in progress; pay held/);
    assert.match(verificationSummary({ state: 'passed', label: 'replicated-agreed', p: 1, windowClosesAt: 0 }), /^replicated and agreed: a second run on another operator/);
  });
});
