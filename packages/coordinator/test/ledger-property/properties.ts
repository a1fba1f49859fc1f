/**
 * The two random properties: sequences of commands (SQLite and PostgreSQL), and on PostgreSQL a
 * sequential prefix followed by concurrent batches. Each counts what its runs did and fails when they
 * never reached the steps the invariants are about.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type Store } from '@gpux/core';
import fc from 'fast-check';
import { batchArb } from './batches.js';
import { LEASE_LOSS_FUNDING, LEASE_LOSS_RUN } from './lease-fees.js';
import { cmdArb, cmdsArb, fundingArb } from './commands.js';
import { runBatches, runSequence } from './runner.js';
import type { OpenRun } from './stores.js';
import { LYING_REFEREE_RUN, VERIFY_FUNDING, VERIFY_RUN } from './verify-run.js';
import { DIGEST, node, replay, runs, sum } from './world.js';

type TestContext = { diagnostic(m: string): void };

/** The steps every property's runs must reach: a job through the pipeline, stake bonded, a payout. */
const PIPELINE = ['submit ok', 'assign ok', 'start ok', 'finish ok', 'stake ok', 'payout ok'];

/** Print the counters, and check the runs did real work: each of `what` (or one of its alternatives) happened. */
function reportCoverage(t: TestContext, stats: Map<string, number>, what: readonly (string | string[])[]): void {
  t.diagnostic([...stats.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}: ${v}`).join(', '));
  for (const w of what) {
    const any = typeof w === 'string' ? [w] : w;
    assert.ok(sum(any.map((k) => stats.get(k) ?? 0)) > 0, `the runs never did "${any.join('" or "')}": the property tested little`);
  }
}

/** What verification (issue 11) must have reached over a property's runs (the fixed run guarantees most). */
const VERIFICATION = [
  ['submit held', 'prefix submit held'],
  ['audit run queued'],
  ['referee run queued'],
  ['replica run queued'],
  ['step settled audited-passed'],
  ['step settled dispute-rejected'],
  ['step settled wrong-result'],
  ['window closed as released'],
  ['penalty on an executor'],
  ['penalty on a referee run', 'penalty on a audit run'],
  ['dispute (right)'],
  ['dispute (false)'],
];

/** Random sequences of commands, one at a time, checked after every step (first fixed runs of lost leases and of verification). */
export async function checkRandomSequences(t: TestContext, open: OpenRun, numRuns: number): Promise<void> {
  const stats = new Map<string, number>();
  for (const [funding, cmds] of [
    [LEASE_LOSS_FUNDING, LEASE_LOSS_RUN],
    [VERIFY_FUNDING, VERIFY_RUN],
  ] as const) {
    const fixed = await open();
    try {
      await runSequence(fixed.stores[0] as Store, funding, cmds, stats);
    } finally {
      await fixed.done();
    }
  }
  await fc.assert(
    fc.asyncProperty(fundingArb, cmdsArb(24), async (funding, cmds) => {
      const h = await open();
      try {
        await runSequence(h.stores[0] as Store, funding, cmds, stats);
      } finally {
        await h.done();
      }
    }),
    { numRuns: runs(numRuns), includeErrorInReport: true, ...replay() },
  );
  reportCoverage(t, stats, [...PIPELINE, 'lease fee paid in full', 'lease fee capped at the wallet', 'node suspended for lost leases', ...VERIFICATION]);
}

/** A random sequential prefix, then random batches of concurrent commands through the stores' pools. */
export async function checkRandomBatches(t: TestContext, open: OpenRun, numRuns: number): Promise<void> {
  const stats = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(
      fundingArb,
      fc.array(cmdArb, { maxLength: 30, size: 'max' }),
      fc.array(batchArb, { minLength: 1, maxLength: 15, size: 'max' }),
      async (funding, prefix, batches) => {
        const h = await open();
        try {
          await runBatches(h.stores, funding, prefix, batches, stats);
        } finally {
          await h.done();
        }
      },
    ),
    // No shrinking: a concurrent failure need not replay, and the run's log (in the error) shows the race.
    { numRuns: runs(numRuns), includeErrorInReport: true, endOnFailure: true, ...replay() },
  );
  // Jobs get running in the sequential prefixes and the batches; the batches race on money.
  reportCoverage(t, stats, [...PIPELINE.map((w) => [w, `prefix ${w}`]), 'submit ok', 'assign ok', 'stake ok', 'payout ok', 'settle ok']);
}

/**
 * One lying referee of a false dispute (verify-run.ts LYING_REFEREE_RUN; the issue 11 finding): the dispute
 * is decided only once DISPUTE_QUORUM referees agree. Besides the invariants after every step: the honest
 * node is neither penalized nor banned, the step is dispute-rejected after three referee runs (the lie, then
 * two that match the node), the node's pay is released to its provider and the buyer's bond goes to it
 * (less the referees' cost, back to the treasury).
 */
export async function checkLyingDisputeReferee(open: OpenRun): Promise<void> {
  const h = await open();
  try {
    const store = h.stores[0] as Store;
    const run = await runSequence(store, VERIFY_FUNDING, LYING_REFEREE_RUN, new Map());
    const job = [...run.jobs.values()].find((j) => j.kind === 'buyer');
    assert.ok(job, 'the run submitted its job');
    const v = await store.getVerification(job.id);
    assert.ok(v, `${job.id} has a verification step`);
    const what = `${job.id} (${v.state}/${v.label}, ${v.verdict})`;
    assert.equal(v.label, 'dispute-rejected', `${what}: the false dispute is rejected`);
    assert.equal(v.state, 'passed', `${what}: the node's result passed`);
    const referees = v.checks.filter((c) => c.kind === 'referee');
    assert.deepEqual(
      referees.map((c) => c.outputDigest === DIGEST),
      [false, true, true],
      `${what}: the lying referee, then two that match the node`,
    );
    const provider = node(0).providerId;
    assert.deepEqual((await store.listPenalties(node(0).id, { limit: 10 })).items, [], `${what}: the honest node is not penalized`);
    assert.equal((await store.getNode(node(0).id))?.removedAt ?? null, null, `${what}: the honest node is not banned`);
    const transfers = await store.jobTransfers(job.id);
    const release = transfers.find((t) => t.kind === 'pay.release' && t.attemptId === v.attemptId);
    const paid = release?.postings.find((p) => p.account === ACCOUNTS.wallet(provider))?.amount ?? 0;
    assert.ok(paid > 0, `${what}: node-0's held pay is released to ${provider}`);
    assert.equal(transfers.filter((t) => t.kind === 'pay.forfeit').length, 0, `${what}: no pay forfeited`);
    const forfeit = transfers.filter((t) => t.kind === 'dispute.forfeit');
    assert.equal(forfeit.length, 1, `${what}: the bond is forfeited once`);
    const toProvider = forfeit[0]?.postings.find((p) => p.account === ACCOUNTS.wallet(provider))?.amount ?? 0;
    const bond = run.disputes.get(job.id)?.bond ?? 0;
    assert.ok(toProvider > 0 && toProvider <= bond, `${what}: ${toProvider} of the bond ${bond} goes to ${provider}`);
    assert.equal(await store.getBalance(ACCOUNTS.bond(job.id), 'usdc'), 0, `${what}: the bond account is empty`);
    assert.equal(transfers.filter((t) => t.kind === 'dispute.return').length, 0, `${what}: a false dispute's bond is not returned`);
  } finally {
    await h.done();
  }
}
