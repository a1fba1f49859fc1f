/**
 * The two random properties: sequences of commands (SQLite and PostgreSQL), and on PostgreSQL a
 * sequential prefix followed by concurrent batches. Each counts what its runs did and fails when they
 * never reached the steps the invariants are about.
 */
import assert from 'node:assert/strict';
import type { Store } from '@gpux/core';
import fc from 'fast-check';
import { batchArb } from './batches.js';
import { LEASE_LOSS_FUNDING, LEASE_LOSS_RUN } from './lease-fees.js';
import { cmdArb, cmdsArb, fundingArb } from './commands.js';
import { runBatches, runSequence } from './runner.js';
import type { OpenRun } from './stores.js';
import { LYING_REFEREE_RUN, VERIFY_FUNDING, VERIFY_RUN } from './verify-run.js';
import { runs, sum } from './world.js';

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
    { numRuns: runs(numRuns), includeErrorInReport: true },
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
    { numRuns: runs(numRuns), includeErrorInReport: true, endOnFailure: true },
  );
  // Jobs get running in the sequential prefixes and the batches; the batches race on money.
  reportCoverage(t, stats, [...PIPELINE.map((w) => [w, `prefix ${w}`]), 'submit ok', 'assign ok', 'stake ok', 'payout ok', 'settle ok']);
}

/**
 * The known gap (issue 11): a false dispute decided by one lying referee convicts an honest node. Fails until
 * the engine asks a dispute's contradicting referee for a second, agreeing one (as an audit mismatch does).
 */
export async function checkLyingDisputeReferee(open: OpenRun): Promise<void> {
  const h = await open();
  try {
    await runSequence(h.stores[0] as Store, VERIFY_FUNDING, LYING_REFEREE_RUN, new Map(), { lyingDisputeReferees: true });
  } finally {
    await h.done();
  }
}
