/**
 * The verification invariants after every step (issue 11): the check runs the steps wrote join the model
 * (their holds from the treasury, or the buyer's for a replica); a wrong result never passes a check and a
 * right one is never convicted; a step that is over (every check run ended) leaves its escrows, its pending
 * pay and its bond at 0; each wrong-result penalty names a wrong result, slashes min(stake, 20 × its charge)
 * and never more than the stake, and bans the node; the system buyer's wallet is always empty.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, DISPUTE_QUORUM, type JobRecord, MAX_DISPUTE_REFEREES, STAKE_MULTIPLE, type Store, type VerificationRecord } from '@gpux/core';
import type { Run } from './model.js';
import { ASSETS, isTerminal, NODES, SYSTEM_AUDIT } from './world.js';

/** Labels that say the executor's result was found right, and the one that says it was wrong. */
const PASSED = ['audited-passed', 'replicated-agreed', 'dispute-rejected'];

/** The commands that may move a verification step (end a run, close a window, open a dispute, hold a replica). */
const MOVERS: ReadonlySet<string> = new Set(['submit', 'finish', 'expire', 'cancel', 'close', 'dispute']);

export async function checkVerification(run: Run, store: Store, jobs: readonly JobRecord[]): Promise<void> {
  // Sequential runs skip the commands that cannot move a step (the checks are a good part of a run's time).
  if (run.lastCommand !== undefined && !MOVERS.has(run.lastCommand)) return;
  for (const asset of ASSETS) assert.equal(await store.getBalance(ACCOUNTS.wallet(SYSTEM_AUDIT), asset), 0, `${asset}: the system buyer's wallet is swept back to the treasury`);
  const roots = jobs.filter((j) => run.jobs.get(j.id)?.kind === 'buyer' && run.jobs.get(j.id)?.holdPay);
  if (roots.length === 0) return;
  const steps = await store.getVerifications(roots.map((j) => j.id));
  await registerCheckRuns(run, store, steps);
  for (const [id, h] of run.replicaHolds) {
    if (run.jobs.has(id)) continue;
    const m = run.jobs.get(h.rootId);
    const root = roots.find((j) => j.id === h.rootId);
    if (!m || !root) continue;
    const left = await store.getBalance(ACCOUNTS.escrow(id), m.payment.asset);
    const expected = isTerminal(root.state) ? [0] : [h.held];
    assert.ok(expected.includes(left), `replica hold of ${h.rootId} (${root.state}, no replica run): ${left}, expected ${expected.join(' or ')}`);
  }
  for (const v of steps) {
    const what = `verification of ${v.jobId} (${v.state}/${v.label}, executor ${v.attemptId} on ${v.nodeId})`;
    const lied = run.lies.has(v.attemptId);
    if (PASSED.includes(v.label)) assert.ok(!lied, `${what}: a wrong result passed its check`);
    if (v.label === 'wrong-result') assert.ok(lied, `${what}: a right result was convicted`);
    if (run.stepLabels.get(v.jobId) !== v.label) run.count(`step ${v.label}${v.label === 'unaudited' ? ` (${v.reason})` : ''}`);
    run.stepLabels.set(v.jobId, v.label);
    checkDispute(run, v, what);
    if (v.resolvedAt !== null && !run.settledSteps.has(v.jobId)) await checkSettled(run, store, v, what);
  }
  // A verified job that ended without a result to verify opened no step: its held pay went at once.
  const opened = new Set(steps.map((v) => v.jobId));
  for (const j of roots) {
    if (!isTerminal(j.state) || opened.has(j.id) || run.settledSteps.has(j.id)) continue;
    await assertEmpty(run, store, j.id, `${j.id} (${j.state}, no step)`);
    run.settledSteps.add(j.id);
  }
  await checkPenalties(run, store);
}

/**
 * A decided dispute (its referees may lie; liars never agree, each wrong result its own digest): upheld
 * exactly when right and rejected exactly when false, each by DISPUTE_QUORUM referee runs with one result;
 * void (back to its window, the bond returned) only when no result had a quorum within MAX_DISPUTE_REFEREES.
 */
function checkDispute(run: Run, v: VerificationRecord, what: string): void {
  const d = run.disputes.get(v.jobId);
  if (!d || v.dispute === null) return;
  const outcome = v.label === 'wrong-result' ? 'upheld' : v.label === 'dispute-rejected' ? 'rejected' : v.resolvedAt !== null || v.state === 'window' ? 'void' : null;
  if (outcome === null) return;
  const referees = v.checks.filter((c) => c.kind === 'referee' && !d.checksBefore.has(c.jobId));
  const votes = new Map<string, number>();
  for (const c of referees) if (c.outputDigest !== null) run.add(votes, `${c.outputDigest}|${c.exitCode}`, 1);
  const quorum = [...votes.values()].filter((n) => n >= DISPUTE_QUORUM).length;
  const tally = `referee results ${JSON.stringify([...votes])}`;
  assert.ok(referees.length <= MAX_DISPUTE_REFEREES, `${what}: ${referees.length} referee runs, at most ${MAX_DISPUTE_REFEREES}`);
  if (outcome === 'void') assert.equal(quorum, 0, `${what}: a dispute is void only without a quorum (${tally})`);
  else {
    assert.equal(outcome === 'upheld', d.right, `${what}: a ${d.right ? 'right' : 'false'} dispute was ${outcome}`);
    assert.equal(quorum, 1, `${what}: a dispute ${outcome} by a quorum of ${DISPUTE_QUORUM} (${tally})`);
  }
  const k = `dispute ${outcome}`;
  if (run.stepLabels.get(`${v.jobId}|dispute`) !== k) run.count(`${k} (${referees.length} referees)`);
  run.stepLabels.set(`${v.jobId}|dispute`, k);
}

/** The check runs (audits, replicas, referees) the steps wrote join the model with their holds. */
async function registerCheckRuns(run: Run, store: Store, steps: readonly VerificationRecord[]): Promise<void> {
  const rootOf = new Map(steps.flatMap((v) => v.checks.map((c) => [c.jobId, v.jobId] as const)));
  const fresh = [...rootOf.keys()].filter((id) => !run.jobs.has(id));
  if (fresh.length === 0) return;
  for (const job of await store.getJobs(fresh)) {
    assert.ok(job.payment && (job.kind === 'audit' || job.kind === 'referee'), `check run ${job.id} is a priced audit or referee`);
    assert.equal(job.holdPay, true, `check run ${job.id} holds its pay until verification too`);
    const system = job.buyerId === SYSTEM_AUDIT;
    const rootId = rootOf.get(job.id) as string;
    const root = run.jobs.get(rootId);
    assert.ok(system || job.buyerId === root?.buyerId, `check run ${job.id} is the system's or (a replica) its buyer's`);
    // An audit or referee holds every try from the treasury; a replica's one attempt was held from the buyer at submission.
    const holdTotal = system ? job.payment.held * (job.spec.maxRetries + 1) : job.payment.held;
    run.jobs.set(job.id, {
      id: job.id,
      buyerId: job.buyerId,
      payment: job.payment,
      billChecked: false,
      kind: job.kind,
      rootId,
      holdPay: true,
      funder: system ? ACCOUNTS.treasury : ACCOUNTS.wallet(job.buyerId),
      holdTotal,
    });
    run.count(`${system ? job.kind : 'replica'} run queued`);
  }
}

/** Once a step is over and its check runs ended: every escrow, pending and the bond of the step at 0. */
async function checkSettled(run: Run, store: Store, v: VerificationRecord, what: string): Promise<void> {
  const checks = await store.getJobs(v.checks.map((c) => c.jobId));
  if (!checks.every((j) => isTerminal(j.state))) return;
  for (const id of [v.jobId, ...checks.map((c) => c.id)]) await assertEmpty(run, store, id, what);
  const m = run.jobs.get(v.jobId);
  assert.equal(await store.getBalance(ACCOUNTS.bond(v.jobId), m?.payment.asset ?? 'usdc'), 0, `${what}: its dispute bond is settled`);
  run.settledSteps.add(v.jobId);
  run.count(`step settled ${v.label}`);
}

async function assertEmpty(run: Run, store: Store, jobId: string, what: string): Promise<void> {
  const asset = run.jobs.get(jobId)?.payment.asset ?? 'usdc';
  assert.equal(await store.getBalance(ACCOUNTS.escrow(jobId), asset), 0, `${what}: escrow of ${jobId} is empty`);
  for (const a of await store.listAttempts(jobId)) assert.equal(await store.getBalance(ACCOUNTS.pending(a.id), asset), 0, `${what}: pending:${a.id} is empty`);
}

/**
 * New wrong-result penalties: each names a wrong result (an honest node is never penalized), slashes
 * min(stake, 20 × the attempt's charge) and so never more than the stake, and bans the node.
 */
async function checkPenalties(run: Run, store: Store): Promise<void> {
  for (const n of NODES) {
    const rows = (await store.listPenalties(n.id, { limit: 100 })).items.filter((p) => p.kind === 'wrong-result' && !run.penaltiesSeen.has(p.id)).reverse();
    for (const p of rows) {
      const what = `penalty ${p.id} on ${n.id} (attempt ${p.attemptId} of ${p.jobId})`;
      run.penaltiesSeen.add(p.id);
      assert.ok(p.attemptId !== null && run.lies.has(p.attemptId), `${what}: an honest result was penalized (liars: ${[...run.liars].join(', ') || 'none'})`);
      const before = run.staked.get(n.id) ?? 0;
      assert.ok(p.slashed <= before, `${what}: slashed ${p.slashed}, more than the stake ${before}`);
      if (run.sequential) {
        const a = await store.getAttempt(p.attemptId);
        assert.equal(p.slashed, Math.min(before, STAKE_MULTIPLE * (a?.settlement.charged ?? 0)), `${what}: min(stake ${before}, ${STAKE_MULTIPLE} × charge ${a?.settlement.charged})`);
      }
      assert.equal(p.banned, true, `${what}: the node is banned`);
      assert.notEqual((await store.getNode(n.id))?.removedAt ?? null, null, `${what}: the banned node is removed`);
      run.add(run.staked, n.id, -p.slashed);
      run.add(run.penaltySlashed, n.id, p.slashed);
      run.slashedNodes.add(n.id);
      run.banned.add(n.id);
      run.count(p.slashed > 0 ? 'wrong result slashed' : 'wrong result without stake');
    }
  }
}
