/**
 * Property tests of the ledger through the real Store verbs (issue 5). fast-check drives random sequences
 * of market operations (mints, paid submissions, cancels, priced assignments, starts, chunk settlements,
 * attempt ends, lease expiry, heartbeats, stake, unbonding, slashes, payouts, the clock) on SQLite and on
 * PostgreSQL, and on PostgreSQL batches of them run concurrently through two pools. After every step:
 * per asset every account sums to what was minted (the model: mints − completed payouts) and no account
 * is below zero; a finished job's escrow is empty and its bill never charged more than it held; a
 * provider's wallet shrinks only by the stake deposits and payouts it asked for; stake matches its model
 * and locks. At the end of a run each party's money is conserved exactly. Expected refusals (each verb's
 * own codes) are fine; any other error fails the property. Every run gets a fresh database.
 *
 * The pieces live in ./ledger-property/: world.ts (parties, nodes, menus), commands.ts (the commands and
 * their arbitraries), job-verbs.ts / money-verbs.ts / execute.ts (carrying them out), model.ts (the
 * reference model), bill.ts / checks.ts (the invariants), runner.ts / batches.ts / properties.ts (the
 * runs), stores.ts (a fresh database per run), races.ts / gang-race.ts (targeted PostgreSQL races).
 */
import { after, before, describe, test } from 'node:test';
import { requirePostgres, tempDir } from '@gpux/testing';
import { checkGangMembersEndingAtOnce } from './ledger-property/gang-race.js';
import { checkRandomBatches, checkRandomSequences } from './ledger-property/properties.js';
import { checkConcurrentSubmissions, checkUnbondingRacingAssignment } from './ledger-property/races.js';
import { PostgresRuns, sqliteRuns } from './ledger-property/stores.js';

describe('ledger properties on SQLite', () => {
  const dir = tempDir('gpux-ledger-property');
  after(() => dir.cleanup());

  test('sqlite: random sequences of market operations keep the ledger balanced after every step', (t) => checkRandomSequences(t, sqliteRuns(dir.path), 30));
});

describe('ledger properties on PostgreSQL', requirePostgres(), () => {
  const postgres = new PostgresRuns();
  before(() => postgres.start());
  after(() => postgres.stop());

  test('postgres: random sequences of market operations keep the ledger balanced after every step', (t) => checkRandomSequences(t, postgres.open, 15));

  test('postgres: random batches of concurrent operations keep the ledger balanced after every batch', (t) => checkRandomBatches(t, postgres.open, 20));

  test('postgres: concurrent submissions from one wallet: exactly those the wallet covers are taken', () => checkConcurrentSubmissions(postgres.open));

  test('postgres: unbonding racing assignment on the same node never leaves locked above staked', () => checkUnbondingRacingAssignment(postgres.open));

  test('postgres: two members of a paid gang ending at once both settle, and neither verb fails', () => checkGangMembersEndingAtOnce(postgres.open));
});
