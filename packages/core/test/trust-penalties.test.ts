/**
 * Trust penalties (TRUST.md's table) as plans: exact legs per event, slash never above the stake, legs always
 * balance as postings, lease fees after the first per 7 days and suspension past 3, and an honest history
 * (lease losses at most one a week, true disputes) never costs stake. Plus reputation and the referee rule.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  ACCOUNTS,
  applyReputationEvent,
  canaryDecision,
  emptyReputation,
  LEASE_LOSS_WINDOW_MS,
  mismatchVerdict,
  MAX_AMOUNT,
  type PenaltyEvent,
  penaltyAccounts,
  penaltyPlan,
  penaltyPostings,
  type ReputationEventKind,
  replicaVerdict,
  reputationScore,
  seededRandom,
} from '../src/index.js';

const acc = penaltyAccounts({ nodeId: 'n1', jobId: 'j1', buyerId: 'b1', providerId: 'p1', reporterId: 'r1', bondAccount: 'escrow:j1' });
const DAY = 86_400_000;
const sumFrom = (legs: { from: string; amount: number }[], from: string) => legs.filter((l) => l.from === from).reduce((s, l) => s + l.amount, 0);

describe('penalty plans', () => {
  it('wrong result: pay back to the buyer, 20 × price from stake, 10% to the reporter, banned', () => {
    const p = penaltyPlan({ kind: 'wrong-result', stake: 100_000, jobPrice: 1_000, pay: 950, reporter: 'auditor' }, acc);
    assert.equal(p.slashed, 20_000);
    assert.equal(p.ban, true);
    assert.deepEqual(p.legs, [
      { from: 'escrow:j1', to: 'wallet:b1', amount: 950, what: 'pay-forfeit' },
      { from: 'stake:n1', to: 'wallet:r1', amount: 2_000, what: 'slash' },
      { from: 'stake:n1', to: 'wallet:b1', amount: 18_000, what: 'slash' },
    ]);
    const capped = penaltyPlan({ kind: 'wrong-result', stake: 5_000, jobPrice: 1_000, pay: 0, reporter: 'coordinator' }, acc);
    assert.equal(capped.slashed, 5_000);
    assert.equal(capped.legs.find((l) => l.to === ACCOUNTS.treasury)?.amount, 500, "the coordinator's own audit: reporter share to the treasury");
  });

  it('failed canary: as a wrong result, the buyer being the treasury', () => {
    const p = penaltyPlan({ kind: 'canary-failed', stake: 100_000, jobPrice: 1_000, pay: 950 }, acc);
    assert.equal(p.event, 'canary-failed');
    assert.equal(p.slashed, 20_000);
    assert.ok(p.legs.filter((l) => l.what === 'slash').every((l) => l.to === ACCOUNTS.treasury));
  });

  it('equivocation: all stake, banned', () => {
    const p = penaltyPlan({ kind: 'equivocation', stake: 77_777, pay: 10 }, acc);
    assert.equal(p.slashed, 77_777);
    assert.ok(p.ban);
    assert.match(p.reason, /two different signed commitments/);
  });

  it('abandoned lease: first in 7 days free, then 1 × price, suspended past 3, stake never touched', () => {
    const at = 100 * DAY;
    const ev = (earlier: number[], walletBalance = 1e6): PenaltyEvent => ({ kind: 'lease-abandoned', lostJobPrice: 400, walletBalance, earlierLosses: earlier, at });
    assert.equal(penaltyPlan(ev([]), acc).legs.length, 0);
    assert.equal(penaltyPlan(ev([at - 8 * DAY]), acc).legs.length, 0, 'a loss 8 days ago is outside the window');
    const second = penaltyPlan(ev([at - DAY]), acc);
    assert.deepEqual(second.legs, [{ from: 'wallet:p1', to: 'wallet:b1', amount: 400, what: 'lease-fee' }]);
    assert.equal(second.suspend, false);
    assert.equal(penaltyPlan(ev([at - 3 * DAY, at - 2 * DAY]), acc).suspend, false);
    const fourth = penaltyPlan(ev([at - 3 * DAY, at - 2 * DAY, at - DAY]), acc);
    assert.equal(fourth.suspend, true);
    assert.equal(fourth.slashed, 0);
    const broke = penaltyPlan(ev([at - DAY], 150), acc);
    assert.equal(broke.legs[0]?.amount, 150);
    assert.equal(broke.unpaid, 250);
  });

  it('attestation invalid blocks dispatch without money; a false dispute gives the bond to the node', () => {
    const a = penaltyPlan({ kind: 'attestation-invalid' }, acc);
    assert.deepEqual([a.legs, a.dispatchBlocked, a.ban, a.slashed], [[], true, false, 0]);
    const d = penaltyPlan({ kind: 'false-dispute', bond: 5_000, refereeCost: 1_200 }, acc);
    assert.deepEqual(d.legs, [
      { from: 'escrow:j1', to: ACCOUNTS.treasury, amount: 1_200, what: 'referee-cost' },
      { from: 'escrow:j1', to: 'wallet:p1', amount: 3_800, what: 'bond-forfeit' },
    ]);
    assert.equal(d.slashed, 0);
  });

  // All money in the network is at most 2^53 − 1, so the amounts one event involves together fit in it too.
  const amount = fc.integer({ min: 0, max: Math.floor(MAX_AMOUNT / 4) });
  const price = fc.integer({ min: 0, max: Math.floor(MAX_AMOUNT / 20) });
  const events: fc.Arbitrary<PenaltyEvent> = fc.oneof(
    fc.record({ kind: fc.constant('equivocation' as const), stake: amount, pay: amount }),
    fc.record({ kind: fc.constant('wrong-result' as const), stake: amount, jobPrice: price, pay: amount, reporter: fc.constantFrom('coordinator' as const, 'auditor' as const, 'buyer' as const) }),
    fc.record({ kind: fc.constant('canary-failed' as const), stake: amount, jobPrice: price, pay: amount }),
    fc.record({
      kind: fc.constant('lease-abandoned' as const),
      lostJobPrice: amount,
      walletBalance: amount,
      earlierLosses: fc.array(fc.integer({ min: 0, max: 30 * DAY }), { maxLength: 8 }),
      at: fc.constant(30 * DAY),
    }),
    fc.constant({ kind: 'attestation-invalid' as const }),
    fc.record({ kind: fc.constant('false-dispute' as const), bond: amount, refereeCost: amount }),
  );

  it('property: legs never take more than the stake, are positive integers, and always balance', () => {
    fc.assert(
      fc.property(events, (ev) => {
        const p = penaltyPlan(ev, acc);
        const stake = 'stake' in ev ? ev.stake : 0;
        assert.equal(sumFrom(p.legs, acc.stake), p.slashed);
        assert.ok(p.slashed <= stake);
        for (const l of p.legs) assert.ok(Number.isSafeInteger(l.amount) && l.amount > 0);
        const postings = penaltyPostings(p, 'usdc');
        assert.equal(postings.reduce((s, x) => s + BigInt(x.amount), 0n), 0n);
        if (ev.kind === 'lease-abandoned') assert.ok(sumFrom(p.legs, acc.provider) <= ev.walletBalance);
      }),
    );
  });

  it('property: an honest history (at most one lost lease a week, never a wrong result) is never penalized', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 7 * DAY, max: 30 * DAY }), { minLength: 1, maxLength: 30 }), (gaps) => {
        let t = 0;
        const losses: number[] = [];
        for (const g of gaps) {
          t += g;
          const p = penaltyPlan({ kind: 'lease-abandoned', lostJobPrice: 1_000, walletBalance: 1e9, earlierLosses: losses, at: t }, acc);
          assert.deepEqual([p.legs, p.slashed, p.ban, p.suspend], [[], 0, false, false]);
          losses.push(t);
        }
      }),
    );
    assert.ok(LEASE_LOSS_WINDOW_MS === 7 * DAY);
  });
});

describe('reputation', () => {
  const H = 10 * DAY;
  it('starts at 0.5, rises with verified work, falls hard on a failure, and decays back with the half-life', () => {
    let s = emptyReputation(0);
    assert.equal(reputationScore(s, 0, H), 0.5);
    for (let i = 0; i < 20; i++) s = applyReputationEvent(s, 'audit-passed', i * 1000, H);
    const good = reputationScore(s, 20_000, H);
    assert.ok(good > 0.9);
    const failed = applyReputationEvent(s, 'audit-failed', 21_000, H);
    assert.ok(reputationScore(failed, 21_000, H) < 0.5);
    assert.ok(Math.abs(reputationScore(failed, 21_000 + 50 * H, H) - 0.5) < 0.01, 'old evidence fades');
    const half = applyReputationEvent(emptyReputation(0), 'audit-passed', 0, H);
    assert.ok(Math.abs(reputationScore(half, H, H) - 1.5 / 2.5) < 1e-12, 'one pass, one half-life later, weighs 0.5');
  });

  it('property: the score is in [0, 1], a good event never lowers it and a bad one never raises it', () => {
    const kinds: ReputationEventKind[] = ['audit-passed', 'audit-failed', 'canary-passed', 'canary-failed', 'completed', 'lease-lost'];
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...kinds), fc.integer({ min: 0, max: DAY })), { maxLength: 50 }), fc.constantFrom(...kinds), (evs, next) => {
        let s = emptyReputation(0);
        let t = 0;
        for (const [k, dt] of evs) {
          t += dt;
          s = applyReputationEvent(s, k, t, H);
        }
        const before = reputationScore(s, t, H);
        const after = reputationScore(applyReputationEvent(s, next, t, H), t, H);
        assert.ok(before >= 0 && before <= 1);
        if (next.endsWith('passed') || next === 'completed') assert.ok(after >= before - 1e-12);
        else assert.ok(after <= before + 1e-12);
      }),
    );
  });
});

describe('canaries and replication', () => {
  it('draws canaries at about 1%', () => {
    const r = seededRandom(5);
    let n = 0;
    for (let i = 0; i < 100_000; i++) if (canaryDecision(r).canary) n++;
    assert.ok(n > 850 && n < 1150, `${n} canaries in 100,000`);
  });

  it('the referee decides correctly whenever one replica is honest', () => {
    fc.assert(
      fc.property(fc.boolean(), fc.string(), fc.string(), (firstHonest, truth, lie) => {
        fc.pre(truth !== lie);
        const [a, b] = firstHonest ? [truth, lie] : [lie, truth];
        const v = replicaVerdict(a, b, truth);
        assert.deepEqual(v, { kind: 'decided', wrong: [firstHonest ? 1 : 0] });
      }),
    );
    assert.deepEqual(replicaVerdict('x', 'x'), { kind: 'agreed' });
    assert.deepEqual(replicaVerdict('x', 'y'), { kind: 'referee-needed' });
    assert.deepEqual(replicaVerdict('x', 'y', 'z'), { kind: 'unresolved' });
  });
});

describe('audit mismatch', () => {
  it('needs two agreeing referees, so one colluding referee cannot convict an honest executor', () => {
    assert.deepEqual(mismatchVerdict('t', 't', []), { kind: 'agreed' });
    assert.deepEqual(mismatchVerdict('t', 'lie', ['lie']), { kind: 'referee-needed' });
    assert.deepEqual(mismatchVerdict('t', 'lie', ['lie', 't', 'garbage', 't']), { kind: 'decided', truth: 't', wrong: ['auditor'] });
    assert.deepEqual(mismatchVerdict('a', 'b', ['t', 't']), { kind: 'referee-needed' }, 'a third output needs 3 votes');
    assert.deepEqual(mismatchVerdict('a', 'b', ['t', 't', 't']), { kind: 'decided', truth: 't', wrong: ['executor', 'auditor'] });
    assert.deepEqual(mismatchVerdict('t', 'garbage', ['', '', 't', 't']), { kind: 'decided', truth: 't', wrong: ['auditor'] }, 'two lazy empty outputs convict nobody');
  });

  it('property: an honest executor is never found wrong while at most one party lies alike with the auditor', () => {
    fc.assert(
      fc.property(
        fc.string(),
        // Garbage from independent lazy nodes may collide (empty outputs): at most two alike here.
        fc.array(fc.oneof(fc.constant('truth'), fc.constantFrom('garbage:', 'garbage:a'), fc.uuid().map((g) => `garbage:${g}`)), { maxLength: 8 }).filter(
          (xs) => xs.filter((x) => x === 'garbage:').length <= 2 && xs.filter((x) => x === 'garbage:a').length <= 2,
        ),
        fc.nat(8),
        (lie, honestOrGarbage, at) => {
          fc.pre(lie !== 'truth' && !lie.startsWith('garbage:'));
          // The auditor lies; one referee (a ring-mate) repeats the lie; the others are honest or return garbage.
          const referees = [...honestOrGarbage];
          referees.splice(Math.min(at, referees.length), 0, lie);
          const v = mismatchVerdict('truth', lie, referees);
          if (v.kind === 'decided') assert.ok(!v.wrong.includes('executor'), JSON.stringify(v));
        },
      ),
    );
  });
});

describe('penalty inputs', () => {
  it('refuses amounts that are not non-negative safe integers, and a reporter share without its account', () => {
    assert.throws(() => penaltyPlan({ kind: 'equivocation', stake: -1, pay: 0 }, acc), /non-negative safe integer/);
    assert.throws(() => penaltyPlan({ kind: 'wrong-result', stake: 10, jobPrice: 1.5, pay: 0, reporter: 'coordinator' }, acc), /safe integer/);
    const noReporter = penaltyAccounts({ nodeId: 'n', jobId: 'j', buyerId: 'b', providerId: 'p' });
    assert.throws(() => penaltyPlan({ kind: 'wrong-result', stake: 10, jobPrice: 1, pay: 0, reporter: 'auditor' }, noReporter), /reporter's account/);
    assert.throws(() => penaltyPlan({ kind: 'false-dispute', bond: 10 }, noReporter), /bond account/);
  });

  it('a buyer who disputes rightly gets both the reporter share and the rest', () => {
    const buyerAcc = penaltyAccounts({ nodeId: 'n1', jobId: 'j1', buyerId: 'b1', providerId: 'p1', reporterId: 'b1' });
    const p = penaltyPlan({ kind: 'wrong-result', stake: 1_000_000, jobPrice: 333, pay: 300, reporter: 'buyer' }, buyerAcc);
    const postings = penaltyPostings(p, 'usdc');
    assert.deepEqual(new Map(postings.map((x) => [x.account, x.amount])), new Map([['escrow:j1', -300], ['wallet:b1', 300 + 6_660], ['stake:n1', -6_660]]));
  });
});
