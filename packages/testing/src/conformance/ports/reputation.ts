/**
 * Conformance, reputation port (issue 11): node reputations written by the store in the transactions that
 * end attempts (completed, lease-lost), read one, many, or changed since a time (the capacity index).
 * Verdict events (audit and canary passes and failures) are the verification step's and tested with it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_REPUTATION_HALF_LIFE_MS, REPUTATION_WEIGHTS, type Store, transitionDecider } from '@gpux/core';
import { assigned, type OpenStore, register, result, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const near = (actual: number, expected: number, what: string) => assert.ok(Math.abs(actual - expected) < 1e-6, `${what}: ${actual}, expected ${expected}`);
/** An event's weight `ms` after it happened. */
const decayed = (w: number, ms: number) => w * 2 ** (-ms / DEFAULT_REPUTATION_HALF_LIFE_MS);

async function finish(store: Store, n: number, nodeId: string, at: number, over: Parameters<typeof result>[3] = {}) {
  const a = await assigned(store, `job-${n}`, `att-${n}`, nodeId, at - 1);
  await store.finishAttempt(result(a.id, nodeId, at, over), decide);
}

export function reputationTests(open: OpenStore): void {
  test('a node without outcomes has no reputation (neutral); reads of unknown nodes are empty', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      assert.equal(await store.getReputation('node-1'), undefined);
      assert.equal(await store.getReputation('node-x'), undefined);
      assert.deepEqual(await store.getReputations([]), []);
      assert.deepEqual(await store.getReputations(['node-1', 'node-x']), []);
      assert.deepEqual(await store.listReputations(0), []);
    }));

  test('attempt ends: succeeded or the program’s own exit code is a completion; an executor error adds nothing', () =>
    withStore(open, async (store) => {
      await finish(store, 1, 'node-1', T0 + 10);
      const first = await store.getReputation('node-1');
      assert.ok(first, 'the first outcome creates the reputation');
      assert.deepEqual(first, { nodeId: 'node-1', state: { good: REPUTATION_WEIGHTS.completed.good, bad: 0, asOf: T0 + 10 }, auditsPassed: 0, updatedAt: T0 + 10 });
      await finish(store, 2, 'node-1', T0 + 20, { outcome: 'failed', exitCode: 3 });
      await finish(store, 3, 'node-1', T0 + 30, { outcome: 'failed', exitCode: null, error: 'executor failed: docker gone' });
      const r = await store.getReputation('node-1');
      assert.ok(r);
      near(r.state.good, decayed(0.2, 10) + 0.2, 'two completions, the first decayed by 10 ms');
      assert.equal(r.state.bad, 0);
      assert.equal(r.state.asOf, T0 + 20, 'the executor error did not touch it');
      assert.equal(r.updatedAt, T0 + 20);
    }));

  test('a lost lease is a lease-lost at the expiry pass’s time', () =>
    withStore(open, async (store) => {
      await assigned(store, 'job-1', 'att-1', 'node-1', T0); // lease until T0 + 30 s
      const at = T0 + 30_001;
      const lost = await store.expireLeases(at, decide, 10);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-1'],
      );
      const r = await store.getReputation('node-1');
      assert.deepEqual(r?.state, { good: 0, bad: REPUTATION_WEIGHTS['lease-lost'].bad, asOf: at });
    }));

  test('listReputations(since): changed at or after since, oldest change first; getReputations reads many at once', () =>
    withStore(open, async (store) => {
      await finish(store, 1, 'node-b', T0 + 10);
      await finish(store, 2, 'node-a', T0 + 20);
      await finish(store, 3, 'node-c', T0 + 20);
      assert.deepEqual(
        (await store.listReputations(0)).map((r) => [r.nodeId, r.updatedAt]),
        [
          ['node-b', T0 + 10],
          ['node-a', T0 + 20],
          ['node-c', T0 + 20],
        ],
      );
      assert.deepEqual(
        (await store.listReputations(T0 + 20)).map((r) => r.nodeId),
        ['node-a', 'node-c'],
      );
      await finish(store, 4, 'node-b', T0 + 30);
      assert.deepEqual(
        (await store.listReputations(T0 + 21)).map((r) => r.nodeId),
        ['node-b'],
        'a node changed again is read again',
      );
      assert.deepEqual((await store.getReputations(['node-c', 'node-x', 'node-a', 'node-c'])).map((r) => r.nodeId).sort(), ['node-a', 'node-c']);
    }));
}
