/**
 * Conformance, tokens port: bearer tokens (create, find, count, list, revoke) and node enrollments (create,
 * find, list with live node counts, revocation that removes the nodes and cuts their leases).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { transitionDecider } from '@gpux/core';
import { assigned, code, enroll, enrollment, eventTypes, type OpenStore, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();

export function tokenTests(open: OpenStore): void {
  test('tokens: create, find by hash, count by role, duplicate hash rejected', () =>
    withStore(open, async (store) => {
      const buyer = { id: 'tok-1', hash: 'h'.repeat(64), role: 'buyer' as const, accountId: 'buyer-1', name: 'laptop', createdAt: T0 };
      await store.createToken(buyer);
      await store.createToken({ ...buyer, id: 'tok-2', hash: 'o'.repeat(64), role: 'operator', accountId: 'op-1' });
      assert.deepEqual(await store.findTokenByHash('h'.repeat(64)), buyer);
      assert.equal(await store.findTokenByHash('x'.repeat(64)), undefined);
      assert.equal(await store.countTokens(), 2);
      assert.equal(await store.countTokens('buyer'), 1);
      assert.equal(await store.countTokens('operator'), 1);
      await assert.rejects(store.createToken({ ...buyer, id: 'tok-3' }), code('CONFLICT'));
      assert.equal(await store.countTokens(), 2);
    }));

  test('tokens: get, list by account with paging, revoke keeps the first time', () =>
    withStore(open, async (store) => {
      for (const [i, acct] of ['a', 'a', 'b'].entries()) {
        await store.createToken({ id: `tok-${i}`, hash: String(i).repeat(64), role: 'buyer', accountId: acct, name: `t${i}`, createdAt: T0, ...(i === 1 ? { expiresAt: T0 + 10 } : {}) });
      }
      assert.equal((await store.getToken('tok-1'))?.expiresAt, T0 + 10);
      assert.equal(await store.getToken('tok-x'), undefined);
      const p1 = await store.listTokens({ limit: 2 });
      assert.deepEqual(
        p1.items.map((t) => t.id),
        ['tok-0', 'tok-1'],
      );
      assert.ok(p1.nextCursor);
      const p2 = await store.listTokens({ limit: 2, cursor: p1.nextCursor ?? undefined });
      assert.deepEqual(
        p2.items.map((t) => t.id),
        ['tok-2'],
      );
      assert.equal(p2.nextCursor, null);
      assert.deepEqual(
        (await store.listTokens({ accountId: 'a', limit: 10 })).items.map((t) => t.id),
        ['tok-0', 'tok-1'],
      );
      assert.equal((await store.revokeToken('tok-0', T0 + 5))?.revokedAt, T0 + 5);
      assert.equal((await store.revokeToken('tok-0', T0 + 9))?.revokedAt, T0 + 5, 'the first revocation stays');
      assert.equal((await store.findTokenByHash('0'.repeat(64)))?.revokedAt, T0 + 5);
      assert.equal(await store.revokeToken('tok-x', T0), undefined);
    }));

  test('enrollments: create, find by hash, a duplicate is CONFLICT, list with live node counts', () =>
    withStore(open, async (store) => {
      await store.createEnrollment(enrollment({ maxNodes: 3 }));
      await store.createEnrollment(enrollment({ id: 'enr-2', hash: 'f'.repeat(64), accountId: 'prov-b' }));
      await assert.rejects(store.createEnrollment(enrollment({ id: 'enr-3' })), code('CONFLICT'));
      assert.deepEqual(await store.findEnrollmentByHash('e'.repeat(64)), enrollment({ maxNodes: 3 }));
      assert.equal(await store.findEnrollmentByHash('x'.repeat(64)), undefined);
      await enroll(store, 'node-1', T0, { id: 'enr-1', accountId: 'prov-a' });
      await enroll(store, 'node-2', T0, { id: 'enr-1', accountId: 'prov-a' });
      const node = await store.getNode('node-1');
      assert.equal(node?.enrollmentId, 'enr-1');
      assert.equal(node?.providerId, 'prov-a');
      const all = await store.listEnrollments({ limit: 10 });
      assert.deepEqual(
        all.items.map((e) => [e.id, e.nodes]),
        [
          ['enr-1', 2],
          ['enr-2', 0],
        ],
      );
      assert.deepEqual(
        (await store.listEnrollments({ accountId: 'prov-b', limit: 10 })).items.map((e) => e.id),
        ['enr-2'],
      );
      assert.equal(await store.countProviderNodes('prov-a'), 2);
      await store.createEnrollment(enrollment({ id: 'enr-4', hash: 'g'.repeat(64), expiresAt: T0 + 100 }));
      assert.equal(await store.countLiveEnrollments('prov-a', T0 + 99), 2);
      assert.equal(await store.countLiveEnrollments('prov-a', T0 + 100), 1, 'expired ones are not live');
      await store.revokeEnrollment('enr-1', T0 + 1, false);
      assert.equal(await store.countLiveEnrollments('prov-a', T0 + 2), 1, 'nor revoked ones');
    }));

  test('revokeEnrollment with removeNodes: nodes removed and offline with an event, leases cut so expireLeases loses the attempts', () =>
    withStore(open, async (store) => {
      await store.createEnrollment(enrollment());
      await enroll(store, 'node-1', T0, { id: 'enr-1', accountId: 'prov-a' });
      await assigned(store, 'job-1', 'att-1', 'node-1', T0 + 1);
      const res = await store.revokeEnrollment('enr-1', T0 + 10, true);
      assert.deepEqual(res?.removedNodeIds, ['node-1']);
      assert.equal(res?.enrollment.revokedAt, T0 + 10);
      assert.equal(res?.nodes, 0);
      assert.equal(res?.lostAttempts, 1, 'the attempt whose lease the removal ended');
      const node = await store.getNode('node-1');
      assert.equal(node?.removedAt, T0 + 10);
      assert.equal(node?.status, 'offline');
      assert.ok((await eventTypes(store, 'node', 'node-1')).includes('node.removed'));
      const lost = await store.expireLeases(T0 + 10, decide, 100);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-1'],
      );
      const again = await store.revokeEnrollment('enr-1', T0 + 20, true);
      assert.deepEqual([again?.enrollment.revokedAt, again?.removedNodeIds, again?.lostAttempts], [T0 + 10, [], 0], 'again: nothing more');
      assert.equal(await store.revokeEnrollment('enr-x', T0, true), undefined);
      assert.equal(await store.countProviderNodes('prov-a'), 0);
    }));
}
