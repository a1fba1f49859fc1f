/**
 * The race the random batches found on PostgreSQL: one gang member's end stops the others (attempt → job
 * → siblings) while a sibling's own end holds the sibling and waits for the job. Rounds of a paid
 * two-member gang whose members end at once through two pools; every verb must answer or refuse.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, chargeFor, type Placement, type Store, stakeToLock } from '@gpux/core';
import { sampleJobSpec } from '@gpux/testing';
import { assertBalanced, finishReport, fund, paymentFor, refusable, stakedNode } from './store-helpers.js';
import type { OpenRun } from './stores.js';
import { decide, NODES, T0 } from './world.js';

export async function checkGangMembersEndingAtOnce(open: OpenRun): Promise<void> {
  const [a, b] = (await open()).stores as [Store, Store];
  const members = NODES.slice(0, 2);
  const spec = sampleJobSpec({ timeoutSeconds: 600, maxRetries: 0, nodes: 2, resources: { gpu: { count: 1 } } });
  const payment = paymentFor(spec, 'usdc', 1_000_000, 1);
  const price = 600_000;
  const lock = stakeToLock(price, 1, 600);
  const rounds = 15;
  for (const n of members) await stakedNode(a, n.id, n.providerId, lock);
  await fund(a, 'b', 2 * rounds * payment.held);
  const errors: string[] = [];
  let charged = 0;
  let feesIn = 0;
  for (let i = 0; i < 2 * rounds; i++) {
    const job = `job-${String(i).padStart(2, '0')}`;
    const start = T0 + i * 1_000_000;
    await a.submitJob({ id: job, buyerId: 'b', spec, idempotencyKey: null, now: start, payment });
    const peers = members.map((n, rank) => ({ rank, nodeId: n.id }));
    const placements: Placement[] = members.map((n, rank) => ({
      jobId: job,
      attemptId: `${job}-r${rank}`,
      nodeId: n.id,
      gpuIndices: [0],
      leaseExpiresAt: start + 30_000,
      price: { asset: 'usdc', pricePerUnitHour: price, units: 1, feeBps: 500, providerId: n.providerId, stakeLock: lock, marketClass: 'h100-80gb' },
      gang: { leaderAttemptId: `${job}-r0`, rank, worldSize: 2, peers },
    }));
    assert.equal((await a.assign(placements, start)).length, 2);
    for (const p of placements) await a.startAttempt(p.attemptId, p.nodeId, start + 1);
    const end = start + 60_001; // both ran 60 s, past their leases
    const [p0, p1] = placements as [Placement, Placement];
    // Even rounds: rank 0 crashes while rank 1 succeeds; odd rounds: the leases expire while rank 1 succeeds.
    const other = i % 2 === 0 ? b.finishAttempt(finishReport(p0.attemptId, p0.nodeId, 'crashed', 60_000, end), decide) : b.expireLeases(end, decide, 10);
    const succeeded = refusable(a.finishAttempt(finishReport(p1.attemptId, p1.nodeId, 'succeeded', 60_000, end), decide), ['CONFLICT']);
    const settled = await Promise.allSettled([other, succeeded]);
    for (const r of settled) if (r.status === 'rejected') errors.push(`${job}: ${String(r.reason)}`);
    if (settled.some((r) => r.status === 'rejected')) continue;
    const j = await a.getJob(job);
    assert.equal(j?.state, 'failed', job);
    assert.equal(await a.getBalance(ACCOUNTS.escrow(job), 'usdc'), 0, `${job}: a finished job's escrow is empty`);
    // An abandoned lease past a node's first in 7 days costs its provider up to an hour of the price, to the buyer.
    const attempts = await a.listAttempts(job);
    for (const t of (await a.jobTransfers(job)).filter((x) => x.kind === 'penalty.fee')) {
      const fee = t.postings.find((p) => p.account === ACCOUNTS.wallet('b'))?.amount ?? 0;
      assert.ok(fee > 0 && fee <= price, `${job}: a lease fee of ${fee}, at most one hour of the price`);
      assert.equal(attempts.find((x) => x.id === t.attemptId)?.state, 'lost', `${job}: the fee is for a lost attempt`);
      feesIn += fee;
    }
    for (const att of attempts) {
      assert.ok(!['assigned', 'running'].includes(att.state), `${job}: ${att.id} ended (${att.state})`);
      // A lost attempt is not settled further; an attempt that ended by its report or the gang stop is paid for its 60 s.
      if (att.state !== 'lost') assert.equal(att.settlement.charged, chargeFor(price, 1, 60_000, 600), `${job}: ${att.id} (${att.state}) charged`);
      charged += att.settlement.charged;
    }
  }
  assert.deepEqual(errors, [], 'every verb answered or refused; none failed');
  assert.equal(await a.getBalance(ACCOUNTS.wallet('b'), 'usdc'), 2 * rounds * payment.held - charged + feesIn, 'the buyer paid exactly what the attempts charged, less the lease fees it received');
  assertBalanced(await a.ledgerTotals());
  assert.deepEqual(await a.listStakes(), members.map((n) => ({ nodeId: n.id, staked: lock, locked: 0 })), 'no lock outlives its attempt');
}
