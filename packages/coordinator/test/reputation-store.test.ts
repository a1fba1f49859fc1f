/**
 * Node reputations in the store (issue 11) on SQLite and PostgreSQL: applyReputationIn (the in-transaction
 * write the attempt-end and verification paths call) and the reputation port's reads. The Store-only cases
 * (testing conformance/ports/reputation.ts) join the conformance suite once the attempt-end path is wired.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyReputationEvent, emptyReputation, type ReputationEventKind, type ReputationState } from '@gpux/core';
import { type PostgresServer, requirePostgres, startPostgres } from '@gpux/testing';
import { inTx } from '../src/store/context.js';
import { applyReputationIn } from '../src/store/reputation.js';
import { applyReputation, type OpenedWithCtx, openPostgresWithCtx, openSqliteWithCtx } from './reputation-helpers.js';

const T0 = 1_700_000_000_000;

function expected(events: ReadonlyArray<readonly [ReputationEventKind, number]>): ReputationState {
  let s = emptyReputation(events[0]?.[1] ?? 0);
  for (const [kind, at] of events) s = applyReputationEvent(s, kind, at);
  return s;
}

function near(actual: ReputationState | undefined, want: ReputationState, what: string): void {
  assert.ok(actual, `${what}: no reputation`);
  assert.equal(actual.asOf, want.asOf, `${what}: asOf`);
  for (const k of ['good', 'bad'] as const) assert.ok(Math.abs(actual[k] - want[k]) < 1e-9, `${what}: ${k} ${actual[k]}, expected ${want[k]}`);
}

function storeTests(name: string, open: () => Promise<OpenedWithCtx>): void {
  describe(`reputation store: ${name}`, () => {
    const run = async (fn: (o: OpenedWithCtx) => Promise<void>) => {
      const o = await open();
      try {
        await fn(o);
      } finally {
        await o.cleanup();
      }
    };

    test('applyReputationIn creates the row at the first outcome and applies each event with the core model', () =>
      run(async (o) => {
        const events = [
          ['completed', T0],
          ['audit-passed', T0 + 3_600_000],
          ['lease-lost', T0 + 7_200_000],
          ['audit-failed', T0 + 86_400_000],
          ['canary-passed', T0 + 50_000], // out of order: decayed by its age, asOf stays
        ] as const;
        for (const [kind, at] of events) await applyReputation(o, 'node-1', kind, at);
        const r = await o.store.getReputation('node-1');
        near(r?.state, expected(events), 'after five events');
        assert.equal(r?.updatedAt, T0 + 86_400_000, 'updated_at never goes back, so incremental readers see the late event');
        assert.equal(r?.auditsPassed, 0, 'no audit record yet');
        assert.equal(await o.store.getReputation('node-2'), undefined, 'other nodes untouched');
      }));

    test('auditsPassed comes from the node’s audit record; getReputations reads many in one call', () =>
      run(async (o) => {
        await applyReputation(o, 'node-1', 'audit-passed', T0);
        await applyReputation(o, 'node-2', 'completed', T0);
        await o.ctx.db.insertInto('node_audits').values({ node_id: 'node-1', consecutive_passes: 7, updated_at: T0 }).execute();
        assert.equal((await o.store.getReputation('node-1'))?.auditsPassed, 7);
        const many = await o.store.getReputations(['node-2', 'node-1', 'node-x', 'node-1']);
        assert.deepEqual(many.map((r) => [r.nodeId, r.auditsPassed]).sort(), [
          ['node-1', 7],
          ['node-2', 0],
        ]);
      }));

    test('listReputations(since): rows written at or after since, oldest first', () =>
      run(async (o) => {
        await applyReputation(o, 'node-b', 'completed', T0 + 10);
        await applyReputation(o, 'node-a', 'completed', T0 + 20);
        await applyReputation(o, 'node-c', 'lease-lost', T0 + 30);
        assert.deepEqual(
          (await o.store.listReputations(T0 + 20)).map((r) => r.nodeId),
          ['node-a', 'node-c'],
        );
        await applyReputation(o, 'node-b', 'audit-passed', T0 + 40);
        assert.deepEqual(
          (await o.store.listReputations(T0 + 31)).map((r) => r.nodeId),
          ['node-b'],
        );
      }));

    test('a rolled-back transaction leaves no reputation: it commits with its cause or not at all', () =>
      run(async (o) => {
        await assert.rejects(
          inTx(o.ctx, async (trx) => {
            await applyReputationIn(trx, o.ctx, 'node-1', 'audit-failed', T0);
            throw new Error('the cause failed');
          }),
          /the cause failed/,
        );
        assert.equal(await o.store.getReputation('node-1'), undefined);
      }));

    test('concurrent outcomes on one node, first ones included, are all counted', () =>
      run(async (o) => {
        await Promise.all(Array.from({ length: 12 }, () => applyReputation(o, 'node-1', 'audit-passed', T0)));
        await Promise.all(Array.from({ length: 8 }, () => applyReputation(o, 'node-1', 'lease-lost', T0)));
        near((await o.store.getReputation('node-1'))?.state, { good: 12, bad: 8, asOf: T0 }, 'no lost update');
      }));
  });
}

storeTests('sqlite', openSqliteWithCtx);

describe('reputation store on PostgreSQL', requirePostgres(), () => {
  let server: PostgresServer;
  before(async () => {
    server = await startPostgres();
  });
  after(async () => {
    await server?.stop();
  });
  storeTests('postgres', async () => openPostgresWithCtx(await server.newDatabase()));
});
