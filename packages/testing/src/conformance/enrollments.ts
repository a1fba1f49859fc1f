/**
 * Conformance: bearer-token listing and revocation, node enrollments (issue 10 items 2, 14): create, find,
 * list with node counts, the checks registerNode makes with an enrollment (revoked, expired, node limits,
 * a GPU uuid of another provider), and revocation that removes nodes and cuts their leases.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type EnrollmentRecord, type Store, transitionDecider } from '@gpux/core';
import { advertisement, assigned, code, eventTypes, type OpenStore, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

const enrollment = (over: Partial<EnrollmentRecord> = {}): EnrollmentRecord => ({
  id: 'enr-1',
  hash: 'e'.repeat(64),
  accountId: 'prov-a',
  name: 'rack',
  createdAt: T0,
  expiresAt: null,
  revokedAt: null,
  maxNodes: null,
  ...over,
});

function enroll(store: Store, nodeId: string, now: number, e: { id: string; accountId: string }, opts: { uuid?: string; maxProviderNodes?: number } = {}) {
  const adv = advertisement({ gpus: [{ index: 0, uuid: opts.uuid ?? `GPU-${nodeId}`, vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }] });
  return store.registerNode({ id: nodeId, publicKey: `key-${nodeId}`, advertisement: adv, now, providerId: e.accountId, enrollment: { id: e.id, maxProviderNodes: opts.maxProviderNodes ?? 1000 } });
}

export function enrollmentTests(open: OpenStore): void {
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

  test('registerNode with an enrollment: revoked or expired refuse new nodes, not its own; limits; foreign GPU uuids', () =>
    withStore(open, async (store) => {
      const a = { id: 'enr-1', accountId: 'prov-a' };
      await store.createEnrollment(enrollment({ maxNodes: 2 }));
      await store.createEnrollment(enrollment({ id: 'enr-2', hash: 'f'.repeat(64), accountId: 'prov-b', expiresAt: T0 + 100 }));
      await enroll(store, 'node-1', T0, a, { uuid: 'GPU-shared' });
      await enroll(store, 'node-2', T0, a);
      await assert.rejects(enroll(store, 'node-3', T0, a), code('LIMIT_EXCEEDED'));
      await enroll(store, 'node-1', T0 + 1, a, { uuid: 'GPU-shared' }); // its own node re-registers past the limit
      await assert.rejects(enroll(store, 'node-9', T0, { id: 'enr-2', accountId: 'prov-b' }, { uuid: 'GPU-shared' }), code('CONFLICT'));
      assert.equal(await store.getNode('node-9'), undefined, 'nothing written');
      await enroll(store, 'node-4', T0 + 1, { id: 'enr-2', accountId: 'prov-b' });
      await assert.rejects(enroll(store, 'node-5', T0 + 100, { id: 'enr-2', accountId: 'prov-b' }), code('UNAUTHORIZED'));
      await enroll(store, 'node-4', T0 + 200, { id: 'enr-2', accountId: 'prov-b' }); // expired, but its own live node
      await assert.rejects(enroll(store, 'node-6', T0 + 1, { id: 'enr-2', accountId: 'prov-b' }, { maxProviderNodes: 1 }), code('LIMIT_EXCEEDED'));
      await store.revokeEnrollment('enr-1', T0 + 2, false);
      await assert.rejects(enroll(store, 'node-7', T0 + 3, a), code('UNAUTHORIZED'));
      await enroll(store, 'node-2', T0 + 3, a); // kept nodes keep working
      await assert.rejects(enroll(store, 'node-8', T0, { id: 'enr-x', accountId: 'prov-a' }), code('UNAUTHORIZED'));
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
      const node = await store.getNode('node-1');
      assert.equal(node?.removedAt, T0 + 10);
      assert.equal(node?.status, 'offline');
      assert.ok((await eventTypes(store, 'node', 'node-1')).includes('node.removed'));
      const lost = await store.expireLeases(T0 + 10, decide, 100);
      assert.deepEqual(
        lost.map((l) => l.attemptId),
        ['att-1'],
      );
      assert.equal((await store.revokeEnrollment('enr-1', T0 + 20, true))?.enrollment.revokedAt, T0 + 10, 'again: nothing more');
      assert.equal(await store.revokeEnrollment('enr-x', T0, true), undefined);
      assert.equal(await store.countProviderNodes('prov-a'), 0);
    }));
}
