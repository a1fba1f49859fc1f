/**
 * Property tests of the ledger through the real Store verbs (issues 5 and 11). fast-check drives random
 * sequences of market operations (mints, paid submissions, cancels, priced assignments, starts, chunk
 * settlements, attempt ends, lease expiry, heartbeats, stake, unbonding, slashes, payouts, the clock) and of
 * verification (held pay, replicas: 2, deterministic: false, audit draws, right and wrong results of
 * executors, auditors and referees, treasury funding, disputes, window closes) on SQLite and on
 * PostgreSQL, and on PostgreSQL batches of them run concurrently through two pools. After every step:
 * per asset every account sums to what was minted (the model: mints − completed payouts) and no account
 * is below zero; a finished job's escrow is empty and its bill never charged more than it held; a
 * provider's wallet shrinks only by the stake deposits and payouts it asked for; stake matches its model
 * (deposits − unbonds − slashes, penalties included) and locks; a wrong result never passes a check and a
 * right one is never penalized; a penalty slashes min(stake, 20 × charge), never more than the stake; a
 * step that is over leaves its escrows, pending pay and bond at 0. At the end of a run each party's money
 * (buyers, providers with their held pay, the treasury) is conserved exactly. Expected refusals (each
 * verb's own codes) are fine; any other error fails the property. Every run gets a fresh database.
 *
 * The pieces live in ./ledger-property/: world.ts (parties, nodes, menus), commands.ts (the commands and
 * their arbitraries), job-verbs.ts / money-verbs.ts / verify-verbs.ts / execute.ts (carrying them out),
 * model.ts (the reference model), bill.ts / checks.ts / verify-checks.ts (the invariants), runner.ts /
 * batches.ts / properties.ts (the runs), lease-fees.ts / verify-run.ts (fixed runs), stores.ts (a fresh
 * database per run), races.ts / gang-race.ts (targeted PostgreSQL races).
 */
import { after, before, describe, test } from 'node:test';
import { requirePostgres, tempDir } from '@gpux/testing';
import { checkGangMembersEndingAtOnce } from './ledger-property/gang-race.js';
import { checkLyingDisputeReferee, checkRandomBatches, checkRandomSequences } from './ledger-property/properties.js';
import { checkConcurrentSubmissions, checkUnbondingRacingAssignment } from './ledger-property/races.js';
import { PostgresRuns, sqliteRuns } from './ledger-property/stores.js';

describe('ledger properties on SQLite', () => {
  const dir = tempDir('gpux-ledger-property');
  after(() => dir.cleanup());
  // One opener for the file's SQLite runs: each run a file of its own (a second opener would reuse run-0.db).
  const open = sqliteRuns(dir.path);

  test('sqlite: random sequences of market operations keep the ledger balanced after every step', (t) => checkRandomSequences(t, open, 30));

  // verify-run.ts LYING_REFEREE_RUN: a dispute needs 2 agreeing referees (core verification-step.ts DISPUTE_QUORUM).
  test('sqlite: one lying referee of a false dispute never convicts an honest node', () =>
    checkLyingDisputeReferee(open),
  );
});

describe('ledger properties on PostgreSQL', requirePostgres(), () => {
  const postgres = new PostgresRuns();
  before(() => postgres.start());
  after(() => postgres.stop());

  test('postgres: random sequences of market operations keep the ledger balanced after every step', (t) => checkRandomSequences(t, postgres.open, 12));

  test('postgres: random batches of concurrent operations keep the ledger balanced after every batch', (t) => checkRandomBatches(t, postgres.open, 20));

  test('postgres: concurrent submissions from one wallet: exactly those the wallet covers are taken', () => checkConcurrentSubmissions(postgres.open));

  test('postgres: unbonding racing assignment on the same node never leaves locked above staked', () => checkUnbondingRacingAssignment(postgres.open));

  test('postgres: two members of a paid gang ending at once both settle, and neither verb fails', () => checkGangMembersEndingAtOnce(postgres.open));
});
