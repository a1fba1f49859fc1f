/**
 * Targeted PostgreSQL races on money, each a property of its own: concurrent holds from one wallet, and
 * unbonding racing assignment on one node's stake. Both go through two pools on one database.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, stakeToLock, type Store } from '@gpux/core';
import { sampleJobSpec } from '@gpux/testing';
import fc from 'fast-check';
import { assertBalanced, fund, paymentFor, refusable, stakedNode } from './store-helpers.js';
import type { OpenRun } from './stores.js';
import { CAPS, pctOf, runs, sum, T0, TIMEOUTS } from './world.js';

/** n submissions at once from a wallet that covers `covered` of their holds: exactly that many are taken. */
export async function checkConcurrentSubmissions(open: OpenRun): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        gpus: fc.integer({ min: 1, max: 2 }),
        timeout: fc.constantFrom(...TIMEOUTS),
        cap: fc.constantFrom(...CAPS),
        n: fc.integer({ min: 2, max: 6 }),
        fit: fc.nat({ max: 6 }),
        spare: fc.nat(),
      }),
      async ({ gpus, timeout, cap, n, fit, spare }) => {
        const { stores } = await open();
        const store = stores[0] as Store;
        const spec = sampleJobSpec({ timeoutSeconds: timeout, resources: { gpu: { count: gpus } }, maxPricePerGpuHour: cap });
        const payment = paymentFor(spec, 'usdc', cap, gpus);
        const { held } = payment;
        const covered = Math.min(fit, n - 1); // at least one submission must be refused
        const wallet = covered * held + (spare % held); // covers `covered` holds, not one more
        if (wallet > 0) await fund(store, 'b', wallet);
        const results = await Promise.all(
          Array.from({ length: n }, (_, i) =>
            refusable(
              (stores[i % 2] as Store).submitJob({ id: `job-${i}`, buyerId: 'b', spec, idempotencyKey: null, now: T0 + 1, payment }),
              ['INSUFFICIENT_FUNDS'],
            ),
          ),
        );
        assert.equal(results.filter((r) => r.ok).length, covered, `a wallet of ${wallet} covers ${covered} holds of ${held}`);
        assert.equal(await store.getBalance(ACCOUNTS.wallet('b'), 'usdc'), wallet - covered * held);
        assert.deepEqual(await store.escrowOfBuyer('b'), covered > 0 ? { usdc: covered * held } : {});
        assert.equal((await store.listJobs({ buyerId: 'b', limit: 10 })).items.length, covered, 'refused submissions wrote no job');
        assertBalanced(await store.ledgerTotals());
      },
    ),
    { numRuns: runs(15), includeErrorInReport: true },
  );
}

/** Assignments and unbonds at once on one node's stake: locked never exceeds staked, and nothing that fitted was refused. */
export async function checkUnbondingRacingAssignment(open: OpenRun): Promise<void> {
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        staked: fc.integer({ min: 1, max: 50_000_000 }),
        prices: fc.array(fc.integer({ min: 1, max: 2_000_000 }), { minLength: 1, maxLength: 3 }),
        unbonds: fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 3 }),
      }),
      async ({ staked, prices, unbonds }) => {
        const { stores } = await open();
        const store = stores[0] as Store;
        await stakedNode(store, 'n', 'p', staked);
        const spec = sampleJobSpec({ timeoutSeconds: 600, resources: { gpu: { count: 1 } } });
        const payment = paymentFor(spec, 'usdc', 2_000_000, 1);
        await fund(store, 'b', payment.held * prices.length);
        for (const i of prices.keys()) await store.submitJob({ id: `job-${i}`, buyerId: 'b', spec, idempotencyKey: null, now: T0, payment });
        const locks = prices.map((p) => stakeToLock(p, 1, 600));
        const assigns = prices.map((p, i) =>
          (stores[i % 2] as Store).assign(
            [
              {
                jobId: `job-${i}`,
                attemptId: `att-${i}`,
                nodeId: 'n',
                gpuIndices: [i], // a GPU each: assign refuses a GPU an active attempt holds; this race is about stake
                leaseExpiresAt: T0 + 60_000,
                price: { asset: 'usdc', pricePerUnitHour: p, units: 1, feeBps: 500, providerId: 'p', stakeLock: locks[i] as number, marketClass: 'h100-80gb' },
              },
            ],
            T0 + 1,
          ),
        );
        const unbonding = unbonds.map((pct, i) => {
          const amount = pctOf(staked, pct);
          return refusable(
            (stores[(i + 1) % 2] as Store).unbondStake({ id: `u-${i}`, nodeId: 'n', providerId: 'p', amount, releaseAt: T0 + 10, now: T0 + 1 }),
            ['INSUFFICIENT_FUNDS'],
          ).then((r) => (r.ok ? amount : 0));
        });
        const [assigned, unbonded] = await Promise.all([Promise.all(assigns), Promise.all(unbonding)]);
        const s = await store.getStake('n');
        const taken = assigned.flat();
        assert.equal(s.staked, staked - sum(unbonded), 'staked = deposit − the unbonds that went through');
        assert.equal(s.locked, sum(taken.map((a) => a.price?.stakeLock ?? 0)), 'locked = the locks of the assignments that went through');
        assert.ok(s.locked <= s.staked, `locked ${s.locked} ≤ staked ${s.staked}`);
        // Nothing was refused that fitted once the others had gone through.
        const free = s.staked - s.locked;
        for (const [i, lock] of locks.entries()) {
          if (!taken.some((a) => a.jobId === `job-${i}`)) assert.ok(lock > free, `job-${i} (lock ${lock}) was skipped with ${free} free`);
        }
        for (const [i, pct] of unbonds.entries()) if (unbonded[i] === 0) assert.ok(pctOf(staked, pct) > free, `unbond u-${i} was refused with ${free} free`);
        assert.equal(await store.releaseUnbonded(T0 + 10, 10), unbonded.filter((u) => u > 0).length);
        assert.equal(await store.getBalance(ACCOUNTS.wallet('p'), 'usdc'), sum(unbonded));
      },
    ),
    { numRuns: runs(20), includeErrorInReport: true },
  );
}
