/**
 * Conformance: the verification step (issue 11, TRUST.md layers 4–5) as the store runs it inside the
 * attempt-end transaction. A paid job with held pay that ends with a signed result opens its step: the
 * audit draw is recorded, and when audited a check run (kind audit, the system buyer, avoiding the
 * executor's operator) is queued with its hold from the treasury. A check run's end decides: agreement
 * releases pending:<attempt> to the provider; a mismatch queues referees one at a time, each avoiding every
 * earlier party's operator, until two agree; a wrong executor forfeits its pay to the buyer, is slashed
 * min(stake, 20 × price) (10% to the reporter) and banned, with a penalty row. After 10 passes in a row the
 * rate drops to the floor; a sampled-out step waits for its window (closeVerificationWindows releases it).
 * deterministic: false is never re-executed. Disputes hold a bond and a referee decides. A check run
 * retried after losing its node needs no top-up. replicas: 2 holds the replica run's escrow from the buyer at
 * submission and always re-runs (p = 1, no draw) on another operator, as the buyer's run; a job that ends
 * without a result, or is cancelled queued, gets that hold back. Every scenario ends with the ledger balanced.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ACCOUNTS,
  type AttemptPriceRecord,
  holdFor,
  type JobRecord,
  move,
  REPORTER_SHARE_BPS,
  type Store,
  stakeToLock,
  transitionDecider,
  type VerificationRecord,
} from '@gpux/core';
import { isInlineInput, type JobSpecInput, outputRootDigest, sha256Hex } from '@gpux/protocol';
import { advertisement, code, DIGEST_A, DIGEST_B, type OpenStore, placement, result, spec, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const BUYER = 'buyer-v';
const CAP = 3_000_000;
const PRICE = 2_000_000;
const TIMEOUT = 600;
const WINDOW_MS = 60_000;
const SPEC: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, resources: { gpu: { count: 1 } } };
const HELD = holdFor(spec(SPEC), CAP);
const STAKE = 50 * stakeToLock(PRICE, 1, TIMEOUT);
const SYSTEM_AUDIT = ACCOUNTS.wallet('system:audit');

const bal = (store: Store, account: string) => store.getBalance(account, 'usdc');

async function mint(store: Store, account: string, amount: number): Promise<void> {
  await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at: T0, memo: `test funds for ${account}` });
}

async function assertBalanced(store: Store): Promise<void> {
  for (const t of await store.ledgerTotals()) {
    assert.equal(t.inside, t.minted, `${t.asset}: money inside equals money minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

const price = (providerId: string): AttemptPriceRecord => ({ asset: 'usdc', pricePerUnitHour: PRICE, units: 1, feeBps: 500, providerId, stakeLock: stakeToLock(PRICE, 1, TIMEOUT), marketClass: 'h100-80gb' });

/** A world: a funded buyer and treasury, and staked nodes `node-<p>` of providers `prov-<p>`. */
async function world(store: Store, providers: readonly string[], treasury = 100 * HELD): Promise<void> {
  await mint(store, ACCOUNTS.wallet(BUYER), 100 * HELD);
  if (treasury > 0) await mint(store, ACCOUNTS.treasury, treasury);
  for (const p of providers) {
    await store.registerNode({ id: `node-${p}`, publicKey: `key-${p}`, advertisement: advertisement({ gpus: [{ index: 0, uuid: `GPU-${p}`, vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }] }), now: T0, providerId: `prov-${p}` });
    await mint(store, ACCOUNTS.stake(`node-${p}`), STAKE);
  }
}

async function submitHeld(store: Store, id: string, now: number, over: Partial<JobSpecInput> = {}): Promise<JobRecord> {
  const s = spec({ ...SPEC, ...over });
  const r = await store.submitJob({
    id,
    buyerId: BUYER,
    spec: s,
    idempotencyKey: null,
    now,
    payment: { asset: 'usdc', capPerUnitHour: CAP, units: 1, held: holdFor(s, CAP) },
    holdPay: true,
    verifyTerms: { disputeWindowMs: WINDOW_MS, auditFloorBps: 1000 },
  });
  return r.job;
}

/** Run job `jobId` on node-<p> for a minute and report `digest` with a commitment; returns the attempt id. */
async function runOn(store: Store, jobId: string, p: string, start: number, digest: string, o: { auditDraw?: number; attemptId?: string } = {}): Promise<string> {
  const attemptId = o.attemptId ?? `att-${jobId}-${p}`;
  const [a] = await store.assign([{ ...placement(jobId, attemptId, `node-${p}`, start + 120_000), price: price(`prov-${p}`) }], start - 1);
  assert.ok(a, `assign ${jobId} to node-${p}`);
  await store.startAttempt(attemptId, `node-${p}`, start);
  await store.finishAttempt(
    result(attemptId, `node-${p}`, start + 60_000, { outputDigest: digest, commitment: `{"attemptId":"${attemptId}","outputDigest":"${digest}"}`, commitmentSignature: `sig-${attemptId}`, ...(o.auditDraw !== undefined ? { auditDraw: o.auditDraw } : {}) }),
    decide,
  );
  return attemptId;
}

async function step(store: Store, jobId: string): Promise<VerificationRecord> {
  const v = await store.getVerification(jobId);
  assert.ok(v, `job ${jobId} has a verification step`);
  return v;
}

/** The newest check run of the step (its job record). */
async function lastCheck(store: Store, jobId: string): Promise<JobRecord> {
  const v = await step(store, jobId);
  const c = v.checks[v.checks.length - 1];
  assert.ok(c, `job ${jobId} has a check run`);
  const j = await store.getJob(c.jobId);
  assert.ok(j);
  return j;
}

export function verificationTests(open: OpenStore): void {
  test('an audited pass: the step opens with p=1 and an audit run funded by the treasury; agreement releases the held pay', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b']);
      await submitHeld(store, 'job-1', T0);
      const att = await runOn(store, 'job-1', 'a', T0 + 1_000, DIGEST_A, { auditDraw: 0.5 });
      const opened = await step(store, 'job-1');
      assert.equal(opened.state, 'auditing');
      assert.equal(opened.label, 'audit-pending');
      assert.equal(opened.p, 1);
      assert.equal(opened.reason, 'first-audits');
      assert.equal(opened.providerId, 'prov-a');
      const pending = await bal(store, ACCOUNTS.pending(att));
      assert.ok(pending > 0, 'the provider share is held');
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), 0);
      const audit = await lastCheck(store, 'job-1');
      assert.equal(audit.kind, 'audit');
      assert.equal(audit.checkOf, 'job-1');
      assert.equal(audit.buyerId, 'system:audit');
      assert.deepEqual(audit.avoidProviderIds, ['prov-a']);
      assert.equal(audit.holdPay, true);
      assert.equal(audit.spec.command.join(' '), spec(SPEC).command.join(' '), 'the same program');
      assert.equal(await bal(store, ACCOUNTS.escrow(audit.id)), HELD * (Math.min(audit.spec.maxRetries, 2) + 1), 'a hold for every try');

      const auditAtt = await runOn(store, audit.id, 'b', T0 + 100_000, DIGEST_A);
      const v = await step(store, 'job-1');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'audited-passed');
      assert.notEqual(v.resolvedAt, null);
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), pending, 'pending:<attempt> drained into the provider wallet');
      assert.equal(await bal(store, ACCOUNTS.pending(auditAtt)), 0, "the auditor's own pay released too");
      assert.ok((await bal(store, ACCOUNTS.wallet('prov-b'))) > 0);
      assert.equal(await bal(store, SYSTEM_AUDIT), 0, "the check run's unspent escrow went back to the treasury");
      assert.equal(await bal(store, ACCOUNTS.escrow(audit.id)), 0);
      await assertBalanced(store);
    }));

  test('a lying executor: referees one at a time, each avoiding every earlier operator; two agreeing convict it (pay forfeited, slashed, banned, penalty)', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c', 'd']);
      await submitHeld(store, 'job-1', T0);
      const att = await runOn(store, 'job-1', 'a', T0 + 1_000, DIGEST_B, { auditDraw: 0.5 });
      const pending = await bal(store, ACCOUNTS.pending(att));
      const buyerBefore = await bal(store, ACCOUNTS.wallet(BUYER));
      const audit = await lastCheck(store, 'job-1');
      await runOn(store, audit.id, 'b', T0 + 100_000, DIGEST_A);
      let v = await step(store, 'job-1');
      assert.equal(v.state, 'refereeing');
      assert.equal(v.checks.length, 2, 'one referee queued, not two at once');
      const r1 = await lastCheck(store, 'job-1');
      assert.equal(r1.kind, 'referee');
      assert.deepEqual([...(r1.avoidProviderIds ?? [])].sort(), ['prov-a', 'prov-b']);
      await runOn(store, r1.id, 'c', T0 + 200_000, DIGEST_A);
      v = await step(store, 'job-1');
      assert.equal(v.state, 'refereeing', 'one vote is no quorum');
      const r2 = await lastCheck(store, 'job-1');
      assert.notEqual(r2.id, r1.id);
      assert.deepEqual([...(r2.avoidProviderIds ?? [])].sort(), ['prov-a', 'prov-b', 'prov-c'], 'the second referee avoids the first one’s operator');
      const stakeBefore = await bal(store, ACCOUNTS.stake('node-a'));
      const treasuryBefore = await bal(store, ACCOUNTS.treasury);
      await runOn(store, r2.id, 'd', T0 + 300_000, DIGEST_A);

      v = await step(store, 'job-1');
      assert.equal(v.state, 'failed');
      assert.equal(v.label, 'wrong-result');
      const attempt = (await store.listAttempts('job-1'))[0];
      assert.ok(attempt);
      const charged = attempt.settlement.charged;
      const slashed = Math.min(stakeBefore, 20 * charged);
      const toReporter = Math.floor((slashed * REPORTER_SHARE_BPS) / 10_000);
      assert.equal(stakeBefore - (await bal(store, ACCOUNTS.stake('node-a'))), slashed);
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), 0, 'the liar is never paid');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), buyerBefore + pending + slashed - toReporter, 'pay back and the slash less the reporter share');
      assert.ok((await bal(store, ACCOUNTS.treasury)) >= treasuryBefore + toReporter, 'the reporter share (the coordinator found it) and the unspent referee holds back');
      const page = await store.listPenalties('node-a', { limit: 10 });
      assert.equal(page.items.length, 1);
      assert.equal(page.items[0]?.kind, 'wrong-result');
      assert.equal(page.items[0]?.slashed, slashed);
      assert.equal(page.items[0]?.banned, true);
      assert.equal(page.items[0]?.jobId, 'job-1');
      assert.equal((page.items[0]?.evidence as { executor?: { outputDigest: string } } | undefined)?.executor?.outputDigest, DIGEST_B);
      assert.notEqual((await store.getNode('node-a'))?.removedAt ?? null, null, 'banned: removed for good');
      assert.equal(await bal(store, SYSTEM_AUDIT), 0);
      await assertBalanced(store);
    }));

  test('a lying auditor: two referees side with the executor; the auditor is penalized, the executor paid', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c', 'd']);
      await submitHeld(store, 'job-1', T0);
      const att = await runOn(store, 'job-1', 'a', T0 + 1_000, DIGEST_A, { auditDraw: 0.5 });
      const pending = await bal(store, ACCOUNTS.pending(att));
      const audit = await lastCheck(store, 'job-1');
      await runOn(store, audit.id, 'b', T0 + 100_000, DIGEST_B);
      await runOn(store, (await lastCheck(store, 'job-1')).id, 'c', T0 + 200_000, DIGEST_A);
      await runOn(store, (await lastCheck(store, 'job-1')).id, 'd', T0 + 300_000, DIGEST_A);
      const v = await step(store, 'job-1');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'audited-passed');
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), pending);
      assert.equal((await store.listPenalties('node-b', { limit: 10 })).items[0]?.kind, 'wrong-result');
      assert.notEqual((await store.getNode('node-b'))?.removedAt ?? null, null);
      assert.equal((await store.listPenalties('node-a', { limit: 10 })).items.length, 0);
      await assertBalanced(store);
    }));

  test('after 10 passes in a row the rate drops to the floor; a sampled-out step waits for its window, then releases', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b']);
      for (let i = 0; i < 10; i++) {
        const t = T0 + i * 1_000_000;
        await submitHeld(store, `job-${i}`, t);
        await runOn(store, `job-${i}`, 'a', t + 1_000, DIGEST_A, { auditDraw: 0.99 });
        assert.equal((await step(store, `job-${i}`)).p, 1, `job ${i}: still in the first 10`);
        await runOn(store, (await lastCheck(store, `job-${i}`)).id, 'b', t + 100_000, DIGEST_A);
        assert.equal((await step(store, `job-${i}`)).label, 'audited-passed');
      }
      const t = T0 + 20_000_000;
      await submitHeld(store, 'job-s', t);
      const att = await runOn(store, 'job-s', 'a', t + 1_000, DIGEST_A, { auditDraw: 0.5 });
      const v = await step(store, 'job-s');
      assert.equal(v.p, 0.1, 'max(p_floor, 1/10)');
      assert.equal(v.draw, 0.5);
      assert.equal(v.reason, 'sampled-out');
      assert.equal(v.state, 'window');
      assert.equal(v.label, 'sampled-out');
      assert.deepEqual(v.checks, []);
      assert.equal(v.windowClosesAt, t + 61_000 + WINDOW_MS);
      const pending = await bal(store, ACCOUNTS.pending(att));
      const walletBefore = await bal(store, ACCOUNTS.wallet('prov-a'));
      assert.deepEqual(await store.closeVerificationWindows(v.windowClosesAt - 1, 10), [], 'not before the window closes');
      const moved = await store.closeVerificationWindows(v.windowClosesAt, 10);
      assert.deepEqual(
        moved.map((m) => [m.jobId, m.state, m.label]),
        [['job-s', 'released', 'sampled-out']],
      );
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), walletBefore + pending);
      assert.deepEqual(await store.closeVerificationWindows(v.windowClosesAt + 1, 10), [], 'once');
      await assertBalanced(store);
    }));

  test('deterministic: false is never re-executed and cannot be disputed; an empty treasury leaves a job unaudited', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b'], 0);
      await submitHeld(store, 'job-nd', T0, { deterministic: false });
      await runOn(store, 'job-nd', 'a', T0 + 1_000, DIGEST_A, { auditDraw: 0.01 });
      const nd = await step(store, 'job-nd');
      assert.deepEqual([nd.state, nd.label, nd.p, nd.draw, nd.checks.length], ['window', 'not-verifiable', 0, null, 0]);
      await assert.rejects(store.openDispute({ jobId: 'job-nd', buyerId: BUYER, reason: 'x', bond: 1000, refereeJobId: 'ref-nd', now: T0 + 70_000 }), code('CONFLICT'));

      await submitHeld(store, 'job-u', T0);
      await runOn(store, 'job-u', 'a', T0 + 1_000, DIGEST_A);
      const u = await step(store, 'job-u');
      assert.deepEqual([u.state, u.label, u.reason], ['window', 'unaudited', 'audit-budget']);
      assert.equal(await bal(store, ACCOUNTS.treasury) >= 0, true);
      await assertBalanced(store);
    }));

  test('disputes: decided by 2 agreeing referees; a false one forfeits the bond to the provider (less the referee runs); a right one returns it and convicts the node', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c', 'd']);
      // Give node-a its 10 passes so a draw of 0.5 samples its jobs out (the window is what a dispute needs).
      for (let i = 0; i < 10; i++) {
        const t = T0 + i * 1_000_000;
        await submitHeld(store, `job-${i}`, t);
        await runOn(store, `job-${i}`, 'a', t + 1_000, DIGEST_A);
        await runOn(store, (await lastCheck(store, `job-${i}`)).id, 'b', t + 100_000, DIGEST_A);
      }
      const t = T0 + 20_000_000;
      await submitHeld(store, 'job-f', t);
      const attF = await runOn(store, 'job-f', 'a', t + 1_000, DIGEST_A, { auditDraw: 0.5 });
      assert.equal((await step(store, 'job-f')).state, 'window');
      const bond = 1_000;
      const buyerBefore = await bal(store, ACCOUNTS.wallet(BUYER));
      const provBefore = await bal(store, ACCOUNTS.wallet('prov-a'));
      const pendingF = await bal(store, ACCOUNTS.pending(attF));
      await assert.rejects(store.openDispute({ jobId: 'job-f', buyerId: 'someone-else', reason: 'x', bond, refereeJobId: 'ref-x', now: t + 70_000 }), code('JOB_NOT_FOUND'));
      await assert.rejects(store.openDispute({ jobId: 'job-f', buyerId: BUYER, reason: 'x', bond: 0, refereeJobId: 'ref-x', now: t + 70_000 }), code('REQUEST_INVALID'));
      const d = await store.openDispute({ jobId: 'job-f', buyerId: BUYER, reason: 'looks wrong', bond, refereeJobId: 'ref-f', now: t + 70_000 });
      assert.deepEqual([d.state, d.label, d.dispute?.bond], ['refereeing', 'disputed', bond]);
      assert.equal(await bal(store, ACCOUNTS.bond('job-f')), bond);
      await assert.rejects(store.openDispute({ jobId: 'job-f', buyerId: BUYER, reason: 'again', bond, refereeJobId: 'ref-f2', now: t + 71_000 }), code('CONFLICT'));
      const ref = await store.getJob('ref-f');
      assert.equal(ref?.kind, 'referee');
      assert.deepEqual(ref?.avoidProviderIds, ['prov-a']);
      const refAtt = await runOn(store, 'ref-f', 'c', t + 100_000, DIGEST_A);
      assert.deepEqual([(await step(store, 'job-f')).state, (await step(store, 'job-f')).label], ['refereeing', 'disputed'], 'one referee decides nothing');
      const ref2 = await lastCheck(store, 'job-f');
      assert.notEqual(ref2.id, 'ref-f');
      assert.deepEqual([...(ref2.avoidProviderIds ?? [])].sort(), ['prov-a', 'prov-c'], 'the second referee avoids the node and the first referee');
      const ref2Att = await runOn(store, ref2.id, 'd', t + 110_000, DIGEST_A);
      const f = await step(store, 'job-f');
      assert.deepEqual([f.state, f.label], ['passed', 'dispute-rejected']);
      const charged = async (jobId: string, attemptId: string) => (await store.listAttempts(jobId)).find((a) => a.id === attemptId)?.settlement.charged ?? 0;
      const refCost = (await charged('ref-f', refAtt)) + (await charged(ref2.id, ref2Att));
      assert.equal(await bal(store, ACCOUNTS.bond('job-f')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), buyerBefore - bond);
      assert.equal(await bal(store, ACCOUNTS.wallet('prov-a')), provBefore + pendingF + bond - Math.min(bond, refCost), 'pay released and the bond less the referee run');

      await submitHeld(store, 'job-r', t + 200_000);
      const attR = await runOn(store, 'job-r', 'a', t + 201_000, DIGEST_B, { auditDraw: 0.5 });
      const pendingR = await bal(store, ACCOUNTS.pending(attR));
      const buyer2 = await bal(store, ACCOUNTS.wallet(BUYER));
      const stakeBefore = await bal(store, ACCOUNTS.stake('node-a'));
      await store.openDispute({ jobId: 'job-r', buyerId: BUYER, reason: 'wrong answer', bond, refereeJobId: 'ref-r', now: t + 270_000 });
      await runOn(store, 'ref-r', 'c', t + 300_000, DIGEST_A);
      assert.equal((await step(store, 'job-r')).state, 'refereeing', 'one referee cannot convict');
      await runOn(store, (await lastCheck(store, 'job-r')).id, 'd', t + 310_000, DIGEST_A);
      const r = await step(store, 'job-r');
      assert.deepEqual([r.state, r.label], ['failed', 'wrong-result']);
      const slashed = stakeBefore - (await bal(store, ACCOUNTS.stake('node-a')));
      assert.ok(slashed > 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), buyer2 + pendingR + slashed, 'bond back, pay back, the whole slash (the buyer reported it)');
      assert.equal(await bal(store, ACCOUNTS.bond('job-r')), 0);
      assert.equal((await store.listPenalties('node-a', { limit: 10 })).items[0]?.kind, 'wrong-result');
      await assertBalanced(store);
    }));

  test('a check run that loses its node is retried without a top-up (its hold covers every try) and still decides', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c']);
      await submitHeld(store, 'job-1', T0);
      const att = await runOn(store, 'job-1', 'a', T0 + 1_000, DIGEST_A);
      const audit = await lastCheck(store, 'job-1');
      const [a1] = await store.assign([{ ...placement(audit.id, 'att-lost', 'node-b', T0 + 150_000), price: price('prov-b') }], T0 + 99_999);
      assert.ok(a1);
      await store.startAttempt('att-lost', 'node-b', T0 + 100_000);
      const lost = await store.expireLeases(T0 + 150_001, decide, 10);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-lost'],
      );
      const requeued = await store.getJob(audit.id);
      assert.equal(requeued?.state, 'queued', `retried, not failed: ${requeued?.error}`);
      assert.equal((await step(store, 'job-1')).state, 'auditing');
      await runOn(store, audit.id, 'c', T0 + 200_000, DIGEST_A);
      assert.equal((await step(store, 'job-1')).label, 'audited-passed');
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0);
      assert.equal(await bal(store, SYSTEM_AUDIT), 0);
      await assertBalanced(store);
    }));

  test('replicas: 2: the replica hold is taken at submission; the step always re-runs on another operator, paid by the buyer; agreement is replicated-agreed', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b']);
      const treasury = await bal(store, ACCOUNTS.treasury);
      await submitHeld(store, 'job-r', T0, { replicas: 2 });
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 100 * HELD - 2 * HELD, 'both runs held up front');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-r')), HELD);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-r-replica')), HELD, "the replica's hold, in its own escrow");
      assert.equal((await store.escrowOfBuyer(BUYER)).usdc, 2 * HELD, "the buyer's escrow view counts the replica's hold");
      const att = await runOn(store, 'job-r', 'a', T0 + 1_000, DIGEST_A, { auditDraw: 0.99 });
      assert.equal(await bal(store, ACCOUNTS.escrow('job-r-replica')), HELD, "the job's end released only its own escrow");
      const opened = await step(store, 'job-r');
      assert.equal(opened.state, 'auditing');
      assert.equal(opened.label, 'replica-pending');
      assert.equal(opened.reason, 'replicated');
      assert.equal(opened.p, 1);
      assert.equal(opened.draw, null, 'no draw: a replicated job is always re-run');
      const replica = await lastCheck(store, 'job-r');
      assert.equal(replica.id, 'job-r-replica');
      assert.equal(replica.kind, 'audit');
      assert.equal(replica.buyerId, BUYER, "the replica run is the buyer's");
      assert.deepEqual(replica.avoidProviderIds, ['prov-a']);
      const execFee = (await bal(store, ACCOUNTS.treasury)) - treasury;
      assert.ok(execFee > 0, 'the treasury took its fee of the first run, and held nothing for the replica');

      const replicaAtt = await runOn(store, replica.id, 'b', T0 + 100_000, DIGEST_A);
      const v = await step(store, 'job-r');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'replicated-agreed');
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0);
      assert.equal(await bal(store, ACCOUNTS.pending(replicaAtt)), 0);
      const paid = (await bal(store, ACCOUNTS.wallet('prov-a'))) + (await bal(store, ACCOUNTS.wallet('prov-b')));
      assert.ok((await bal(store, ACCOUNTS.wallet('prov-a'))) > 0 && (await bal(store, ACCOUNTS.wallet('prov-b'))) > 0, 'both providers paid');
      const fees = (await bal(store, ACCOUNTS.treasury)) - treasury;
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 100 * HELD - paid - fees, 'the buyer paid both runs and got the rest of both holds back');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-r')), 0);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-r-replica')), 0);
      assert.equal((await store.getReputation('node-a'))?.auditsPassed, 1, 'an agreement counts as an audit pass');
      await assertBalanced(store);
    }));

  test('replicas: 2 with a lying executor: treasury-paid referees side with the replica; the executor is convicted and the buyer repaid', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c', 'd']);
      await submitHeld(store, 'job-rl', T0, { replicas: 2 });
      const att = await runOn(store, 'job-rl', 'a', T0 + 1_000, DIGEST_B);
      const pending = await bal(store, ACCOUNTS.pending(att));
      const replica = await lastCheck(store, 'job-rl');
      await runOn(store, replica.id, 'b', T0 + 100_000, DIGEST_A);
      const r1 = await lastCheck(store, 'job-rl');
      assert.equal(r1.kind, 'referee');
      assert.equal(r1.buyerId, 'system:audit', 'referees are paid by the treasury');
      assert.deepEqual(r1.avoidProviderIds, ['prov-a', 'prov-b']);
      await runOn(store, r1.id, 'c', T0 + 200_000, DIGEST_A);
      assert.equal((await step(store, 'job-rl')).label, 'replica-pending');
      const r2 = await lastCheck(store, 'job-rl');
      await runOn(store, r2.id, 'd', T0 + 300_000, DIGEST_A);
      const v = await step(store, 'job-rl');
      assert.equal(v.state, 'failed');
      assert.equal(v.label, 'wrong-result');
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0, "the executor's pay was forfeited");
      const pen = await store.listPenalties('node-a', { limit: 10 });
      assert.equal(pen.items[0]?.kind, 'wrong-result');
      assert.equal(pen.items[0]?.jobId, 'job-rl');
      assert.ok(pending > 0);
      await assertBalanced(store);
    }));

  test('replicas: 2 that never runs its replica: cancelled queued, or ended without a result, the replica hold goes back', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b']);
      await submitHeld(store, 'job-rc', T0, { replicas: 2 });
      await store.requestCancel('job-rc', T0 + 1);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-rc-replica')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 100 * HELD, 'both holds back');

      await submitHeld(store, 'job-rf', T0 + 2, { replicas: 2, maxRetries: 0 });
      const [a] = await store.assign([{ ...placement('job-rf', 'att-rf', 'node-a', T0 + 120_000), price: price('prov-a') }], T0 + 10);
      assert.ok(a);
      await store.startAttempt('att-rf', 'node-a', T0 + 20);
      await store.finishAttempt(result('att-rf', 'node-a', T0 + 30_000, { outcome: 'failed', exitCode: null, error: 'crashed (test)' }), decide);
      assert.equal((await store.getJob('job-rf'))?.state, 'failed');
      assert.equal(await store.getVerification('job-rf'), undefined, 'no result: no step');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-rf-replica')), 0, 'the replica hold went back');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-rf')), 0);
      assert.equal(await store.getJob('job-rf-replica'), undefined);
      await assertBalanced(store);
    }));

  // spec.verify (a buyer's checker): different outputs are compared by a checker run, not by digest.
  const VERIFY = { verify: { image: 'buyer/checker:1', command: ['sh', '-c', 'diff -r "$GPUX_INPUTS/a" "$GPUX_INPUTS/b"'] } };
  const files = (text: string, inline = true) => {
    const outputs = [{ path: 'out/answer.txt', size: Buffer.byteLength(text), sha256: sha256Hex(text), ...(inline ? { content: Buffer.from(text).toString('base64') } : {}) }];
    return { outputs, outputDigest: outputRootDigest(outputs) };
  };
  /** Run `jobId` on node-<p> reporting these outputs (and the checker-style exit code); returns the attempt id. */
  async function runWith(store: Store, jobId: string, p: string, start: number, out: ReturnType<typeof files>, exitCode = 0): Promise<string> {
    const attemptId = `att-${jobId}-${p}`;
    const [a] = await store.assign([{ ...placement(jobId, attemptId, `node-${p}`, start + 120_000), price: price(`prov-${p}`) }], start - 1);
    assert.ok(a, `assign ${jobId} to node-${p}`);
    await store.startAttempt(attemptId, `node-${p}`, start);
    const outcome = exitCode === 0 ? 'succeeded' : 'failed';
    await store.finishAttempt(result(attemptId, `node-${p}`, start + 60_000, { outcome, exitCode, ...out, commitment: `{"attemptId":"${attemptId}"}`, commitmentSignature: `sig-${attemptId}` }), decide);
    return attemptId;
  }

  test('verify: a differing audit is compared by a checker run (the buyer image, both output sets as inputs, no GPU, treasury-paid); exit 0 passes', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c']);
      await submitHeld(store, 'job-v', T0, VERIFY);
      const att = await runWith(store, 'job-v', 'a', T0 + 1_000, files('loss 0.301\nat 10:00\n'));
      const audit = await lastCheck(store, 'job-v');
      assert.equal(audit.kind, 'audit');
      await runWith(store, audit.id, 'b', T0 + 100_000, files('loss 0.301\nat 10:05\n'));
      const opened = await step(store, 'job-v');
      assert.equal(opened.state, 'auditing', 'different digests: the checker decides, not the digest');
      const checker = await lastCheck(store, 'job-v');
      assert.equal(checker.kind, 'checker');
      assert.equal(checker.buyerId, 'system:audit');
      assert.equal(checker.checkOf, 'job-v');
      assert.equal(checker.spec.image, 'buyer/checker:1');
      assert.deepEqual(checker.spec.command, VERIFY.verify.command);
      assert.equal(checker.spec.resources.gpu.count, 0);
      assert.equal(checker.spec.network, undefined);
      assert.deepEqual(
        checker.spec.inputs.map((f) => [f.path, isInlineInput(f) ? Buffer.from(f.content, 'base64').toString() : 'not inline']),
        [
          ['a/out/answer.txt', 'loss 0.301\nat 10:00\n'],
          ['b/out/answer.txt', 'loss 0.301\nat 10:05\n'],
        ],
      );
      assert.deepEqual(checker.avoidProviderIds, ['prov-a', 'prov-b'], "none of the compared runs' operators");
      assert.ok((await bal(store, ACCOUNTS.escrow(checker.id))) > 0, 'held from the treasury');
      assert.equal(opened.checks.find((c) => c.kind === 'audit')?.agreed, null, 'unknown until the checker ends');

      const checkAtt = await runWith(store, checker.id, 'c', T0 + 200_000, files(''));
      const v = await step(store, 'job-v');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'audited-passed');
      assert.equal(v.byChecker, true);
      assert.match(v.verdict ?? '', /according to the buyer's checker/);
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [
          ['audit', true],
          ['checker', true],
        ],
      );
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0, "the executor's pay released");
      assert.equal(await bal(store, ACCOUNTS.pending(checkAtt)), 0, 'the checker run is paid when it ends');
      assert.equal(await bal(store, ACCOUNTS.escrow(checker.id)), 0);
      assert.equal(await bal(store, SYSTEM_AUDIT), 0);
      await assertBalanced(store);
    }));

  test('verify: the checker disagreeing sends the step to referees, each checked against both sides; two siding with the auditor convict the executor', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c', 'd', 'e', 'f']);
      await submitHeld(store, 'job-vl', T0, VERIFY);
      const att = await runWith(store, 'job-vl', 'a', T0 + 1_000, files('garbage\n'));
      const audit = await lastCheck(store, 'job-vl');
      await runWith(store, audit.id, 'b', T0 + 100_000, files('loss 0.3\nat 1\n'));
      const c1 = await lastCheck(store, 'job-vl');
      await runWith(store, c1.id, 'c', T0 + 150_000, files('differ\n'), 1);
      const r1 = await lastCheck(store, 'job-vl');
      assert.equal(r1.kind, 'referee');
      assert.deepEqual(r1.avoidProviderIds, ['prov-a', 'prov-b'], "a checker's operator is no party to the result");
      await runWith(store, r1.id, 'c', T0 + 200_000, files('loss 0.3\nat 2\n'));
      const afterR1 = (await step(store, 'job-vl')).checks.filter((c) => c.kind === 'checker');
      assert.equal(afterR1.length, 3, 'the referee is checked against the executor and against the auditor');
      const vsExec = afterR1.find((c) => c.pair?.[0] === 'executor' && c.pair[1] === r1.id);
      const vsAudit = afterR1.find((c) => c.pair?.[0] === audit.id && c.pair[1] === r1.id);
      assert.ok(vsExec && vsAudit, JSON.stringify(afterR1));
      await runWith(store, vsExec?.jobId as string, 'd', T0 + 250_000, files('differ\n'), 1);
      await runWith(store, vsAudit?.jobId as string, 'd', T0 + 260_000, files(''));
      const r2 = await lastCheck(store, 'job-vl');
      assert.equal(r2.kind, 'referee');
      assert.deepEqual(r2.avoidProviderIds, ['prov-a', 'prov-b', 'prov-c']);
      await runWith(store, r2.id, 'd', T0 + 300_000, files('loss 0.3\nat 3\n'));
      const more = (await step(store, 'job-vl')).checks.filter((c) => c.kind === 'checker' && c.pair?.[1] === r2.id);
      assert.equal(more.length, 2);
      for (const [i, c] of more.entries()) await runWith(store, c.jobId, 'e', T0 + 350_000 + i * 10_000, c.pair?.[0] === 'executor' ? files('differ\n') : files(''), c.pair?.[0] === 'executor' ? 1 : 0);
      const v = await step(store, 'job-vl');
      assert.equal(v.state, 'failed', JSON.stringify(v));
      assert.equal(v.label, 'wrong-result');
      assert.equal(await bal(store, ACCOUNTS.pending(att)), 0);
      const pen = await store.listPenalties('node-a', { limit: 10 });
      assert.equal(pen.items[0]?.kind, 'wrong-result');
      await assertBalanced(store);
    }));

  test('verify: outputs stored without content cannot be checked: unaudited (outputs-not-inline), no audit run, not disputable', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b']);
      await submitHeld(store, 'job-vn', T0, VERIFY);
      await runWith(store, 'job-vn', 'a', T0 + 1_000, files('too large to return inline\n', false));
      const v = await step(store, 'job-vn');
      assert.equal(v.state, 'window');
      assert.equal(v.label, 'unaudited');
      assert.equal(v.reason, 'outputs-not-inline');
      assert.deepEqual(v.checks, []);
      await assert.rejects(store.openDispute({ jobId: 'job-vn', buyerId: BUYER, reason: 'x', bond: 1, refereeJobId: 'ref-vn', now: T0 + 100_000 }), (e: Error) => /not stored inline/.test(e.message));
      await assertBalanced(store);
    }));

  test('verify: a checker run that never gives a verdict is re-queued once, then the step is unaudited (checker-failed)', () =>
    withStore(open, async (store) => {
      await world(store, ['a', 'b', 'c']);
      await submitHeld(store, 'job-vf', T0, { ...VERIFY, maxRetries: 0 });
      await runWith(store, 'job-vf', 'a', T0 + 1_000, files('one\n'));
      const audit = await lastCheck(store, 'job-vf');
      await runWith(store, audit.id, 'b', T0 + 100_000, files('two\n'));
      for (const [i, at] of [T0 + 200_000, T0 + 400_000].entries()) {
        const checker = await lastCheck(store, 'job-vf');
        assert.equal(checker.kind, 'checker', `checker run ${i + 1}`);
        // Each checker run has its own retries (2): an executor crash each time.
        for (let t = 0; t < 3; t++) {
          const id = `att-${checker.id}-${t}`;
          const [a] = await store.assign([{ ...placement(checker.id, id, 'node-c', at + t * 10_000 + 120_000), price: price('prov-c') }], at + t * 10_000);
          assert.ok(a, `assign try ${t}`);
          await store.startAttempt(id, 'node-c', at + t * 10_000 + 1);
          await store.finishAttempt(result(id, 'node-c', at + t * 10_000 + 2, { outcome: 'failed', exitCode: null, error: 'crashed (test)' }), decide);
        }
        assert.equal((await store.getJob(checker.id))?.state, 'failed');
      }
      const v = await step(store, 'job-vf');
      assert.equal(v.state, 'window');
      assert.equal(v.label, 'unaudited');
      assert.equal(v.reason, 'checker-failed');
      assert.equal(v.checks.filter((c) => c.kind === 'checker').length, 2);
      assert.equal(await bal(store, SYSTEM_AUDIT), 0);
      await assertBalanced(store);
    }));
}
