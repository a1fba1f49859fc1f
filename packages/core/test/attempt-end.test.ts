import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ACCOUNTS,
  type AttemptEndBasis,
  type AttemptEndCause,
  type AttemptEndPlan,
  type AttemptEndPolicy,
  type AttemptEndSnapshot,
  type AttemptFacts,
  assertBalanced,
  attemptEndNeeds,
  CANCEL_GRACE_EXPIRED,
  emptyNodeStats,
  type JobRecord,
  LEASE_EXPIRED,
  lostJobPrice,
  type NewTransfer,
  planAttemptEnd,
  planSettlement,
  SUSPENDED_REASON,
  transitionDecider,
} from '../src/index.js';
import { job as jobFixture, T0 } from './helpers.js';

// 3,600,000 minor units per unit-hour: one minor unit per ms of runtime; a 5% fee.
const PRICE = 3_600_000;
const HELD = PRICE; // cap = price, 1 unit, 1 node, timeout 1 h
const NOW = T0 + 100_000;
const policy: AttemptEndPolicy = {
  decide: transitionDecider(),
  nodeStats: { halfLifeMs: 3 * 24 * 3600_000, cordonAfterFailures: 3, cordonWindowMs: 3600_000, minExpectationSamples: 2 },
};

function theJob(o: Partial<JobRecord> = {}, spec: { maxRetries?: number; nodes?: number } = {}): JobRecord {
  const j = jobFixture({ timeoutSeconds: 3600, maxRetries: spec.maxRetries ?? 2, ...(spec.nodes ? { nodes: spec.nodes } : {}) }, { id: 'job-1', buyerId: 'buyer-a' });
  return { ...j, state: 'running', attemptCount: 1, currentAttemptId: 'att-1', startedAt: T0, ...o };
}

const paid = { payment: { asset: 'usdc' as const, capPerUnitHour: PRICE, units: 1, held: HELD } };

function attempt(id: string, o: Partial<AttemptFacts> = {}): AttemptFacts {
  return {
    id,
    jobId: 'job-1',
    nodeId: `node-${id}`,
    state: 'running',
    gpuIndices: [0],
    gangLeader: null,
    startedAt: NOW - 10_001,
    stopBy: null,
    leaseExpiresAt: NOW + 30_000,
    price: { asset: 'usdc', pricePerUnitHour: PRICE, units: 1, feeBps: 500, providerId: `prov-${id}`, stakeLock: 0, marketClass: 'h100' },
    settlement: { charged: 0, fee: 0, settledMs: 0 },
    ...o,
  };
}

const report = (outcome: 'succeeded' | 'failed' | 'cancelled', exitCode: number | null = outcome === 'succeeded' ? 0 : null, durationMs = 10_001): AttemptEndCause => ({
  kind: 'report',
  outcome,
  exitCode,
  error: outcome === 'failed' && exitCode === null ? 'executor failed' : null,
  outputDigest: 'sha256:d',
  metrics: { durationMs },
  commitment: '{"c":1}',
  commitmentSignature: 'sig',
});
const expired: AttemptEndCause = { kind: 'lease-expired' };

/** A lease-expired end's node: not removed, last heard of 40 s ago. */
const silentNode = { removed: false, lastHeartbeatAt: NOW - 40_000 };

/**
 * The basis (a lease-expired end's node defaults to `silentNode`), then the second round read as the store
 * would: carries (default 0), wallet, node stats, expectation, earlier lease losses (none), provider wallet.
 */
function snapshot(
  basis: Partial<AttemptEndBasis> & Pick<AttemptEndBasis, 'job' | 'attempt' | 'cause'>,
  more: {
    carry?: number;
    wallet?: number;
    stats?: AttemptEndSnapshot['nodeStats'];
    expectation?: AttemptEndSnapshot['expectation'];
    losses?: number[];
    providerWallet?: number;
  } = {},
): AttemptEndSnapshot {
  const node = basis.cause.kind === 'lease-expired' ? { node: silentNode } : {};
  const b: AttemptEndBasis = { now: NOW, siblings: [], escrow: basis.job.payment ? { usdc: HELD } : {}, ...node, ...basis };
  const needs = attemptEndNeeds(b, policy);
  return {
    ...b,
    carries: needs.carries.map((k) => ({ ...k, carry: more.carry ?? 0 })),
    ...(needs.wallet ? { wallet: more.wallet ?? 10 * HELD } : {}),
    ...(needs.nodeStats ? { nodeStats: more.stats ?? emptyNodeStats(T0) } : {}),
    ...(needs.expectation ? { expectation: more.expectation === undefined ? null : more.expectation } : {}),
    ...(needs.leaseLosses ? { leaseLosses: more.losses ?? [] } : {}),
    ...(needs.providerWallet ? { providerWallet: more.providerWallet ?? 10 * HELD } : {}),
  };
}

/** Apply the plan's transfers to balances, checking each balances and no account but the world goes below 0. */
function balancesAfter(start: Record<string, number>, transfers: readonly NewTransfer[]): Record<string, number> {
  const b = { ...start };
  for (const t of transfers) {
    assertBalanced(t.postings);
    for (const p of t.postings) {
      b[p.account] = (b[p.account] ?? 0) + p.amount;
      assert.ok((b[p.account] ?? 0) >= 0, `${p.account} went below zero`);
    }
  }
  return b;
}

const types = (p: AttemptEndPlan) => p.events.map((e) => e.type);
const kinds = (p: AttemptEndPlan) => p.transfers.map((t) => t.kind);

interface Case {
  name: string;
  snap: () => AttemptEndSnapshot;
  check: (p: AttemptEndPlan, s: AttemptEndSnapshot) => void;
}

const cases: Case[] = [
  {
    name: 'success without money: the job succeeds, the node scores a success',
    snap: () => snapshot({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('succeeded') }),
    check: (p) => {
      assert.deepEqual(types(p), ['attempt.finished', 'job.succeeded']);
      assert.equal(p.job?.row.state, 'succeeded');
      assert.equal(p.job?.row.currentAttemptId, 'att-1');
      assert.equal(p.job?.row.finishedAt, NOW);
      assert.deepEqual(p.transfers, []);
      assert.equal(p.attempt.state, 'succeeded');
      assert.equal(p.attempt.report?.commitment, '{"c":1}');
      assert.equal(p.attempt.settlement, null);
      assert.equal(p.node?.stats.successes, 1);
      assert.deepEqual(p.penalties, []);
    },
  },
  {
    name: 'success with money: settled (provider + treasury), the rest released to the buyer',
    snap: () => snapshot({ job: theJob(paid), attempt: attempt('att-1'), cause: report('succeeded') }),
    check: (p) => {
      assert.deepEqual(types(p), ['attempt.finished', 'job.charged', 'job.succeeded', 'job.escrow_released']);
      assert.deepEqual(kinds(p), ['settlement', 'escrow.release']);
      assert.deepEqual(p.attempt.settlement, { charged: 10_001, fee: 500, settledMs: 10_001 });
      const b = balancesAfter({ 'escrow:job-1': HELD }, p.transfers);
      assert.equal(b['escrow:job-1'], 0);
      assert.equal(b['wallet:prov-att-1'], 9_501);
      assert.equal(b.treasury, 500);
      assert.equal(b['wallet:buyer-a'], HELD - 10_001);
      assert.deepEqual(p.carries, [{ providerId: 'prov-att-1', asset: 'usdc', carry: 500 }]);
    },
  },
  {
    name: "program failure (an exit code): failed, not retried, not the node's fault",
    snap: () => snapshot({ job: theJob(paid), attempt: attempt('att-1'), cause: report('failed', 3) }),
    check: (p) => {
      assert.equal(p.job?.row.state, 'failed');
      assert.equal(p.job?.row.exitCode, 3);
      assert.deepEqual(p.job?.row.avoidNodeIds, []);
      assert.equal(p.node?.stats.successes, 1);
      assert.equal(p.node?.stats.failures, 0);
      assert.deepEqual(kinds(p), ['settlement', 'escrow.release']);
    },
  },
  {
    name: 'lost with retries left: not settled, requeued with backoff away from the node, escrow topped up from the wallet',
    snap: () =>
      snapshot(
        { job: theJob(paid), attempt: attempt('att-1', { settlement: { charged: 5_000, fee: 250, settledMs: 5_000 } }), cause: expired, escrow: { usdc: HELD - 5_000 } },
        { wallet: 7_000 },
      ),
    check: (p) => {
      assert.deepEqual(types(p), ['attempt.lost', 'job.requeued']);
      assert.equal(p.attempt.error, LEASE_EXPIRED);
      assert.equal(p.attempt.settlement, null, 'a lost attempt is not settled further');
      assert.equal(p.job?.row.state, 'queued');
      assert.equal(p.job?.row.runAfter, NOW + 2_000);
      assert.equal(p.job?.row.currentAttemptId, null);
      assert.deepEqual(p.job?.row.avoidNodeIds, ['node-att-1']);
      assert.deepEqual(kinds(p), ['escrow.topup']);
      const b = balancesAfter({ 'escrow:job-1': HELD - 5_000, 'wallet:buyer-a': 7_000 }, p.transfers);
      assert.equal(b['escrow:job-1'], HELD);
      assert.equal(b['wallet:buyer-a'], 2_000);
      assert.equal(p.node?.stats.failures, 1);
      const ev = p.events[1];
      assert.equal(ev?.data.avoidNode, 'node-att-1');
      assert.equal(ev?.data.runAfter, NOW + 2_000);
    },
  },
  {
    name: 'lost with no retries left: failed, escrow released',
    snap: () => snapshot({ job: theJob(paid, { maxRetries: 0 }), attempt: attempt('att-1'), cause: expired }),
    check: (p) => {
      assert.equal(p.job?.row.state, 'failed');
      assert.match(p.job?.row.error ?? '', /no retries left: maxRetries=0/);
      assert.deepEqual(kinds(p), ['escrow.release']);
      assert.deepEqual(types(p), ['attempt.lost', 'job.failed', 'job.escrow_released']);
    },
  },
  {
    name: 'requeue whose wallet is short: the job fails instead and its escrow is released',
    snap: () => snapshot({ job: theJob(paid), attempt: attempt('att-1', { price: null }), cause: expired, escrow: { usdc: HELD - 39_094 } }, { wallet: 1_000 }),
    check: (p) => {
      assert.equal(p.job?.row.state, 'failed');
      assert.equal(
        p.job?.row.error,
        'could not top up escrow for a retry: insufficient funds in wallet:buyer-a: needs 0.039094 USDC, has 0.001000 USDC available (short 0.038094 USDC)',
      );
      assert.equal(p.job?.transition.avoidNode, true);
      assert.deepEqual(kinds(p), ['escrow.release']);
      const b = balancesAfter({ 'escrow:job-1': HELD - 39_094 }, p.transfers);
      assert.equal(b['escrow:job-1'], 0);
    },
  },
  {
    name: 'cancel requested: cancelled, charged only up to stop_by',
    snap: () => snapshot({ job: theJob({ ...paid, cancelRequested: true }), attempt: attempt('att-1', { stopBy: NOW - 4_001 }), cause: report('cancelled') }),
    check: (p) => {
      assert.equal(p.job?.row.state, 'cancelled');
      assert.deepEqual(p.attempt.settlement, { charged: 6_000, fee: 300, settledMs: 6_000 });
      assert.equal(p.node, null, 'a cancellation does not count for the node');
    },
  },
  {
    name: 'a lease that ran to stop_by ends as cancelled (charged up to stop_by), not lost',
    snap: () => snapshot({ job: theJob({ ...paid, cancelRequested: true }), attempt: attempt('att-1', { stopBy: NOW - 1_001, leaseExpiresAt: NOW - 1_001 }), cause: expired }),
    check: (p) => {
      assert.deepEqual(types(p), ['attempt.cancelled', 'job.charged', 'job.cancelled', 'job.escrow_released']);
      assert.equal(p.attempt.error, CANCEL_GRACE_EXPIRED);
      assert.equal(p.events[0]?.data.stopBy, NOW - 1_001);
      assert.deepEqual(p.attempt.settlement, { charged: 9_000, fee: 450, settledMs: 9_000 });
      assert.equal(p.node, null);
    },
  },
  {
    name: 'a gang member fails: the active members are stopped (by id) and settled, the job moves',
    snap: () =>
      snapshot({
        job: theJob(paid, { nodes: 3 }),
        attempt: attempt('att-1', { gangLeader: 'att-1' }),
        cause: report('failed', null),
        siblings: [attempt('att-3', { gangLeader: 'att-1', startedAt: NOW - 2_000 }), attempt('att-2', { gangLeader: 'att-1', startedAt: null, state: 'assigned' })],
        escrow: { usdc: HELD },
      }),
    check: (p) => {
      assert.deepEqual(types(p), ['attempt.finished', 'job.charged', 'gang.stopped', 'job.charged', 'job.requeued']);
      assert.deepEqual(p.events[2]?.data, { cause: 'att-1', attemptIds: ['att-2', 'att-3'] });
      assert.deepEqual(
        p.siblings.map((x) => [x.attemptId, x.settlement?.charged ?? null]),
        [
          ['att-2', null],
          ['att-3', 2_000],
        ],
      );
      assert.match(p.siblings[0]?.error ?? '', /gang member att-1 ended \(failed\); the gang stops/);
      assert.equal(p.job?.row.state, 'queued');
      assert.deepEqual(kinds(p), ['settlement', 'settlement', 'escrow.topup']);
    },
  },
  {
    name: 'a gang member succeeds while others still run: the job does not move',
    snap: () =>
      snapshot({ job: theJob(paid, { nodes: 2 }), attempt: attempt('att-2', { gangLeader: 'att-1' }), cause: report('succeeded'), siblings: [attempt('att-1', { gangLeader: 'att-1' })] }),
    check: (p) => {
      assert.equal(p.job, null);
      assert.deepEqual(p.siblings, []);
      assert.deepEqual(types(p), ['attempt.finished', 'job.charged']);
      assert.deepEqual(kinds(p), ['settlement']);
    },
  },
  {
    name: 'the last gang member succeeds: the job succeeds and keeps the leader as its attempt',
    snap: () => snapshot({ job: theJob(paid, { nodes: 2 }), attempt: attempt('att-2', { gangLeader: 'att-1' }), cause: report('succeeded') }),
    check: (p) => {
      assert.equal(p.job?.row.state, 'succeeded');
      assert.equal(p.job?.row.currentAttemptId, 'att-1');
      assert.deepEqual(kinds(p), ['settlement', 'escrow.release']);
    },
  },
  {
    name: 'holdPay: the provider share accrues to pending:<attempt>, the fee still to the treasury',
    snap: () => snapshot({ job: theJob({ ...paid, holdPay: true }), attempt: attempt('att-1'), cause: report('succeeded') }),
    check: (p) => {
      const b = balancesAfter({ 'escrow:job-1': HELD }, p.transfers);
      assert.equal(b[ACCOUNTS.pending('att-1')], 9_501);
      assert.equal(b['wallet:prov-att-1'], undefined);
      assert.equal(b.treasury, 500);
    },
  },
  {
    name: "fee carry: the provider's carried remainder tips the fee over a unit and carries on",
    snap: () => snapshot({ job: theJob(paid), attempt: attempt('att-1'), cause: report('succeeded') }, { carry: 9_600 }),
    check: (p) => {
      assert.deepEqual(p.attempt.settlement, { charged: 10_001, fee: 501, settledMs: 10_001 });
      assert.deepEqual(p.carries, [{ providerId: 'prov-att-1', asset: 'usdc', carry: 100 }]);
    },
  },
  {
    name: 'the job moved on (another attempt is current): the attempt is recorded and settled, nothing else',
    snap: () => snapshot({ job: theJob({ ...paid, currentAttemptId: 'att-9' }), attempt: attempt('att-1'), cause: report('succeeded') }),
    check: (p) => {
      assert.equal(p.job, null);
      assert.deepEqual(kinds(p), ['settlement']);
      assert.deepEqual(types(p), ['attempt.finished', 'job.charged']);
    },
  },
  {
    name: 'node stats: the third infrastructure failure in the window auto-cordons the node',
    snap: () =>
      snapshot({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('failed', null) }, { stats: { ...emptyNodeStats(NOW), failures: 2, recentFailures: [NOW - 2_000, NOW - 1_000] } }),
    check: (p) => {
      assert.equal(p.node?.stats.failures, 3);
      assert.match(p.node?.cordon?.reason ?? '', /auto-cordoned: 3 attempts lost or failed by the node/);
      assert.deepEqual(p.node?.cordon?.event.data, { reason: p.node?.cordon?.reason, failures: 3, windowMs: 3600_000 });
      assert.equal(p.node?.cordon?.event.subject, 'node');
    },
  },
  {
    name: 'node stats: a success is compared with the expectation of its shape on the class, and teaches it',
    snap: () =>
      snapshot({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('succeeded', 0, 5_000) }, { expectation: { key: 'k@h100', samples: 2, meanMs: 10_000 } }),
    check: (p) => {
      assert.equal(p.node?.stats.runtimeRatio, 0.5);
      assert.deepEqual(p.expectation, { key: 'k@h100', samples: 3, meanMs: 10_000 + (5_000 - 10_000) / 3 });
    },
  },
];

describe('attempt end: planAttemptEnd', () => {
  for (const c of cases) {
    test(c.name, () => {
      const s = c.snap();
      const p = planAttemptEnd(s, policy);
      for (const t of p.transfers) assertBalanced(t.postings);
      c.check(p, s);
    });
  }

  test('the needs round asks for exactly the carries and the wallet the plan uses; a plan without them throws', () => {
    const basis: AttemptEndBasis = { now: NOW, job: theJob(paid), attempt: attempt('att-1', { settlement: { charged: 5_000, fee: 250, settledMs: 5_000 } }), cause: report('failed', null), siblings: [], escrow: { usdc: HELD - 5_000 } };
    const needs = attemptEndNeeds(basis, policy);
    const none = { leaseLosses: false, providerWallet: null };
    assert.deepEqual(needs, { carries: [{ providerId: 'prov-att-1', asset: 'usdc' }], wallet: 'usdc', nodeStats: true, expectation: false, ...none });
    assert.throws(() => planAttemptEnd({ ...basis, carries: [], nodeStats: emptyNodeStats(T0) }, policy), /needs the fee carry of prov-att-1 in usdc and the buyer's wallet/);
    const lost = attemptEndNeeds({ ...basis, cause: expired, node: silentNode, attempt: attempt('att-1', { price: null }), escrow: { usdc: HELD } }, policy);
    assert.deepEqual(lost, { carries: [], wallet: null, nodeStats: true, expectation: false, leaseLosses: true, providerWallet: null });
    const cancelled = attemptEndNeeds({ ...basis, job: theJob(), cause: report('cancelled'), attempt: attempt('att-1', { price: null }), escrow: {} }, policy);
    assert.deepEqual(cancelled, { carries: [], wallet: null, nodeStats: false, expectation: false, ...none });
  });

  test('a decider that returns a non-final state is an invariant failure', () => {
    const bad: AttemptEndPolicy = { ...policy, decide: () => ({ state: 'running', runAfter: null, error: null, exitCode: null, avoidNode: false }) };
    const s = snapshot({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('succeeded') });
    assert.throws(() => planAttemptEnd(s, bad), /decide\(\) returned running/);
  });
});

describe('attempt end: abandoned leases and reputation events', () => {
  const HOUR = PRICE; // one hour of 1 unit at PRICE per unit-hour: the lost job's price
  const lostPaid = (o: Partial<AttemptFacts> = {}) => attempt('att-1', { settlement: { charged: 5_000, fee: 250, settledMs: 5_000 }, ...o });
  const plan = (basis: Parameters<typeof snapshot>[0], more: Parameters<typeof snapshot>[1] = {}) => planAttemptEnd(snapshot(basis, more), policy);

  test('the first loss in 7 days is free: a penalty row with fee 0, no transfer, lease-lost on the reputation', () => {
    const p = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired, escrow: { usdc: HELD - 5_000 } });
    assert.equal(p.penalties.length, 1);
    const pen = p.penalties[0];
    assert.ok(pen);
    assert.equal(pen.plan.event, 'lease-abandoned');
    assert.equal(pen.fee, 0);
    assert.equal(pen.transfer, null);
    assert.equal(pen.suspend, null);
    assert.equal(pen.plan.slashed, 0);
    assert.deepEqual(pen.evidence, {
      attemptId: 'att-1',
      leaseExpiresAt: NOW + 30_000,
      lastHeartbeatAt: NOW - 40_000,
      lossesIn7Days: 1,
      lostJobPrice: HOUR,
      asset: 'usdc',
      fee: 0,
      paid: 0,
      unpaid: 0,
    });
    assert.equal(pen.event.type, 'node.penalized');
    assert.equal(pen.event.subjectId, 'node-att-1');
    assert.equal(p.reputation, 'lease-lost');
    assert.deepEqual(types(p), ['attempt.lost', 'job.requeued'], 'the job events are unchanged; the penalty carries its node events');
  });

  test('the second loss in 7 days costs 1 × the lost job price (one hour of the attempt price), provider wallet → buyer, after the top-up', () => {
    const p = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired, escrow: { usdc: HELD - 5_000 } }, { losses: [NOW - 86_400_000], providerWallet: 5 * HOUR, wallet: 7_000 });
    const pen = p.penalties[0];
    assert.ok(pen?.transfer);
    assert.equal(pen.fee, HOUR);
    assert.equal(pen.transfer.kind, 'penalty.fee');
    assert.equal(pen.transfer.attemptId, 'att-1');
    assert.equal(pen.transfer.nodeId, 'node-att-1');
    assert.deepEqual(kinds(p), ['escrow.topup'], 'the fee is not among the job’s own transfers');
    const b = balancesAfter({ 'escrow:job-1': HELD - 5_000, 'wallet:buyer-a': 7_000, 'wallet:prov-att-1': 5 * HOUR }, [...p.transfers, pen.transfer]);
    assert.equal(b['wallet:prov-att-1'], 4 * HOUR);
    assert.equal(b['wallet:buyer-a'], 2_000 + HOUR);
    assert.equal(pen.evidence.lossesIn7Days, 2);
  });

  test('a fee larger than the wallet takes what is there; the rest is unpaid, never from stake', () => {
    const p = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired }, { losses: [NOW - 1_000], providerWallet: 1_234 });
    const pen = p.penalties[0];
    assert.ok(pen?.transfer);
    assert.equal(pen.fee, HOUR);
    assert.equal(pen.plan.unpaid, HOUR - 1_234);
    assert.deepEqual(pen.evidence.paid, 1_234);
    const b = balancesAfter({ 'wallet:prov-att-1': 1_234 }, [pen.transfer]);
    assert.equal(b['wallet:prov-att-1'], 0);
    const empty = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired }, { losses: [NOW - 1_000], providerWallet: 0 });
    assert.equal(empty.penalties[0]?.transfer, null);
    assert.equal(empty.penalties[0]?.plan.unpaid, HOUR);
  });

  test('more than 3 in 7 days suspends; losses older than 7 days do not count', () => {
    const three = [NOW - 3_000, NOW - 2_000, NOW - 1_000];
    const p = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired }, { losses: three });
    const pen = p.penalties[0];
    assert.ok(pen?.suspend);
    assert.equal(pen.suspend.reason, SUSPENDED_REASON);
    assert.equal(pen.suspend.event.type, 'node.suspended');
    assert.equal(pen.plan.ban, false);
    const old = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired }, { losses: [NOW - 8 * 86_400_000, NOW - 7 * 86_400_000, NOW - 1_000] });
    assert.equal(old.penalties[0]?.suspend, null);
    assert.equal(old.penalties[0]?.evidence.lossesIn7Days, 2);
  });

  test('an unpriced attempt costs nothing and reads no wallet, but counts', () => {
    const s = snapshot({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: expired }, { losses: [NOW - 2_000, NOW - 1_000, NOW - 500] });
    assert.equal(s.providerWallet, undefined);
    const p = planAttemptEnd(s, policy);
    assert.equal(p.penalties[0]?.fee, 0);
    assert.equal(p.penalties[0]?.transfer, null);
    assert.ok(p.penalties[0]?.suspend, 'the fourth loss suspends, priced or not');
  });

  test('not an abandoned lease: a removed or banned node, an unknown node, a cancel-grace end, a failure the coordinator reported', () => {
    const removed = plan({ job: theJob(paid), attempt: lostPaid(), cause: expired, node: { removed: true, lastHeartbeatAt: NOW - 1 } }, { losses: [NOW - 1_000] });
    assert.deepEqual(removed.penalties, []);
    assert.equal(removed.reputation, null);
    assert.equal(removed.attempt.state, 'lost');
    assert.deepEqual(plan({ job: theJob(paid), attempt: lostPaid(), cause: expired, node: null }).penalties, []);
    const grace = plan({ job: theJob({ ...paid, cancelRequested: true }), attempt: attempt('att-1', { stopBy: NOW - 1_001, leaseExpiresAt: NOW - 1_001 }), cause: expired });
    assert.equal(grace.attempt.state, 'cancelled');
    assert.deepEqual(grace.penalties, []);
    assert.equal(grace.reputation, null);
    const abandoned = plan({ job: theJob(paid), attempt: attempt('att-1'), cause: report('failed', null) });
    assert.deepEqual(abandoned.penalties, []);
    assert.equal(abandoned.reputation, null);
  });

  test('a lease-expired end without its node, or a plan without the losses or the wallet, is an invariant failure', () => {
    const basis: AttemptEndBasis = { now: NOW, job: theJob(paid), attempt: lostPaid(), cause: expired, siblings: [], escrow: { usdc: HELD } };
    assert.throws(() => attemptEndNeeds(basis, policy), /needs its node/);
    const needs = attemptEndNeeds({ ...basis, node: silentNode }, policy);
    assert.deepEqual([needs.leaseLosses, needs.providerWallet], [true, { providerId: 'prov-att-1', asset: 'usdc' }]);
    const full = snapshot({ ...basis, node: silentNode });
    const { providerWallet: _w, ...noWallet } = full;
    assert.throws(() => planAttemptEnd(noWallet, policy), /needs the node's earlier losses and its provider's wallet/);
    const { leaseLosses: _l, ...noLosses } = full;
    assert.throws(() => planAttemptEnd(noLosses, policy), /needs the node's earlier losses/);
  });

  test('a provider that is also the buyer: the fee comes from what the top-up left, and moves nothing', () => {
    const job = theJob({ ...paid, buyerId: 'prov-att-1' });
    const p = plan({ job, attempt: lostPaid(), cause: expired, escrow: { usdc: HELD - 5_000 } }, { losses: [NOW - 1_000], wallet: 6_000, providerWallet: 6_000 });
    assert.deepEqual(kinds(p), ['escrow.topup']);
    const pen = p.penalties[0];
    assert.equal(pen?.evidence.paid, 1_000, 'the wallet after the 5,000 top-up');
    assert.equal(pen?.transfer, null, 'from and to the same wallet: nothing to post');
  });

  test('reputation: succeeded or the program’s exit code → completed; an executor error or a cancel → none', () => {
    assert.equal(plan({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('succeeded') }).reputation, 'completed');
    assert.equal(plan({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('failed', 3) }).reputation, 'completed');
    assert.equal(plan({ job: theJob(), attempt: attempt('att-1', { price: null }), cause: report('failed', null) }).reputation, null);
    assert.equal(plan({ job: theJob({ cancelRequested: true }), attempt: attempt('att-1', { price: null }), cause: report('cancelled') }).reputation, null);
    assert.equal(plan({ job: theJob({ currentAttemptId: 'att-9' }), attempt: attempt('att-1', { price: null }), cause: report('succeeded') }).reputation, 'completed', 'the job moved on: the node still ran it');
  });

  test('lostJobPrice: one hour of the attempt price, 0 unpriced', () => {
    assert.equal(lostJobPrice({ pricePerUnitHour: 1_000_003, units: 3 }), 3_000_009);
    assert.equal(lostJobPrice(null), 0);
  });
});

describe('attempt end: one settlement step (also the running chunks)', () => {
  const input = { attempt: attempt('att-1'), timeoutSeconds: 3600, holdPay: false, now: NOW, escrowLeft: HELD, carry: 0 };

  test('chunks charge the difference of the cumulative charge, limited to the escrow', () => {
    const first = planSettlement({ ...input, now: NOW - 5_000 });
    assert.equal(first.step.charge, 5_001);
    const second = planSettlement({ ...input, attempt: attempt('att-1', { settlement: first.settlement ?? { charged: 0, fee: 0, settledMs: 0 } }) });
    assert.equal(second.step.charge, 5_000);
    const short = planSettlement({ ...input, escrowLeft: 700 });
    assert.equal(short.step.charge, 700);
  });

  test('up to date, never started or unpriced: nothing to record', () => {
    assert.equal(planSettlement({ ...input, attempt: attempt('att-1', { settlement: { charged: 10_001, fee: 500, settledMs: 10_001 } }) }).settlement, null);
    assert.equal(planSettlement({ ...input, attempt: attempt('att-1', { startedAt: null }) }).settlement, null);
    assert.equal(planSettlement({ ...input, attempt: attempt('att-1', { price: null }) }).transfer, null);
  });

  test('an empty escrow records the runtime but moves nothing', () => {
    const p = planSettlement({ ...input, escrowLeft: 0 });
    assert.deepEqual(p.settlement, { charged: 0, fee: 0, settledMs: 10_001 });
    assert.equal(p.transfer, null);
    assert.equal(p.event, null);
  });

  test('a step that takes a fee needs its carry', () => {
    const { carry: _carry, ...noCarry } = input;
    assert.throws(() => planSettlement(noCarry), /needs the fee carry of prov-att-1/);
  });
});
