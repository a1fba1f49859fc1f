/**
 * Conformance, nodes port: registration (provider binding, enrollment checks), listing, heartbeats,
 * admin state, staleness, and node track records with auto-cordon.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_NODE_STATS_POLICY, type Store, transitionDecider } from '@gpux/core';
import { advertisement, assigned, code, enroll, enrollment, eventTypes, type OpenStore, register, result, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();

async function failOn(store: Store, n: number, nodeId: string, now: number): Promise<void> {
  const a = await assigned(store, `job-f${n}`, `att-f${n}`, nodeId, now);
  await store.finishAttempt(result(a.id, nodeId, now + 1, { outcome: 'failed', exitCode: null, error: 'executor failed: docker gone' }), decide);
}

export function nodeTests(open: OpenStore): void {
  test('registerNode inserts online/active; re-register keeps id, registeredAt and admin state, updates the advertisement', () =>
    withStore(open, async (store) => {
      const n = await register(store, 'node-1', T0);
      assert.deepEqual(n, {
        id: 'node-1',
        publicKey: 'key-node-1',
        advertisement: advertisement(),
        status: 'online',
        adminState: 'active',
        simulated: false,
        providerId: null,
        registeredAt: T0,
        lastHeartbeatAt: T0,
        tier: 'open',
      });
      assert.deepEqual(await store.getNode('node-1'), n);
      assert.equal(await store.getNode('node-x'), undefined);
      await store.setNodeAdminState('node-1', 'cordoned', T0 + 1);
      await store.markStaleNodesOffline(T0 + 2, T0 + 2);
      const again = await register(store, 'node-1', T0 + 50, { hostname: 'renamed', simulated: true, executors: ['simulated'] });
      assert.equal(again.id, 'node-1');
      assert.equal(again.registeredAt, T0);
      assert.equal(again.lastHeartbeatAt, T0 + 50);
      assert.equal(again.status, 'online');
      assert.equal(again.adminState, 'cordoned');
      assert.equal(again.simulated, true);
      assert.equal(again.advertisement.hostname, 'renamed');
      assert.deepEqual(await store.getNode('node-1'), again);
      const types = await eventTypes(store, 'node', 'node-1');
      assert.deepEqual(types, ['node.registered', 'node.cordoned', 'node.offline', 'node.registered']);
    }));

  test('listNodes: ordered by id, status filter, cursor pages without duplicates or gaps', () =>
    withStore(open, async (store) => {
      const ids = ['n-05', 'n-01', 'n-04', 'n-02', 'n-03'];
      for (const id of ids) await register(store, id, id === 'n-02' || id === 'n-04' ? T0 : T0 + 100);
      await store.markStaleNodesOffline(T0 + 50, T0 + 200);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await store.listNodes({ limit: 2, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((n) => n.id));
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      assert.deepEqual(seen, ['n-01', 'n-02', 'n-03', 'n-04', 'n-05']);
      const offline = await store.listNodes({ status: 'offline', limit: 10 });
      assert.deepEqual(
        offline.items.map((n) => n.id),
        ['n-02', 'n-04'],
      );
      assert.equal(offline.nextCursor, null);
      const online = await store.listNodes({ status: 'online', limit: 2 });
      assert.deepEqual(
        online.items.map((n) => n.id),
        ['n-01', 'n-03'],
      );
      assert.ok(online.nextCursor);
      await assert.rejects(store.listNodes({ limit: 2, cursor: '!!' }), code('REQUEST_INVALID'));
    }));

  test('heartbeat renews active leases, flips offline -> online with an event, and returns cancel-requested attempts', () =>
    withStore(open, async (store) => {
      const a1 = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      const a2 = await assigned(store, 'job-2', 'att-2', 'node-1', T0);
      const other = await assigned(store, 'job-3', 'att-3', 'node-2', T0);
      await store.startAttempt(a1.id, 'node-1', T0 + 1);
      // Within the start deadline of the assigned att-2 (core attempt-end/deadline.ts), so both renew in full.
      const hb = await store.heartbeat('node-1', T0 + 10, T0 + 60_000);
      assert.deepEqual(hb.cancelAttemptIds, []);
      assert.deepEqual(
        hb.active.map((x) => [x.id, x.state, x.leaseExpiresAt]),
        [
          [a1.id, 'running', T0 + 60_000],
          [a2.id, 'assigned', T0 + 60_000],
        ],
        'the active attempts, renewed, oldest first',
      );
      assert.equal((await store.getAttempt(a1.id))?.leaseExpiresAt, T0 + 60_000);
      assert.equal((await store.getAttempt(a2.id))?.leaseExpiresAt, T0 + 60_000);
      assert.equal((await store.getAttempt(other.id))?.leaseExpiresAt, other.leaseExpiresAt);
      assert.equal((await store.getNode('node-1'))?.lastHeartbeatAt, T0 + 10);
      await store.requestCancel('job-2', T0 + 11);
      assert.deepEqual((await store.heartbeat('node-1', T0 + 12, T0 + 90_000)).cancelAttemptIds, ['att-2']);

      assert.deepEqual(await store.markStaleNodesOffline(T0 + 5_000, T0 + 5_000), ['node-1', 'node-2']);
      assert.equal((await store.getNode('node-1'))?.status, 'offline');
      await store.heartbeat('node-1', T0 + 6_000, T0 + 96_000);
      assert.equal((await store.getNode('node-1'))?.status, 'online');
      await store.heartbeat('node-1', T0 + 7_000, T0 + 97_000);
      assert.deepEqual(await eventTypes(store, 'node', 'node-1'), ['node.registered', 'node.offline', 'node.online']);
      await assert.rejects(store.heartbeat('node-x', T0, T0), code('NODE_NOT_FOUND'));
    }));

  test('markStaleNodesOffline marks only online nodes older than the cutoff, once', () =>
    withStore(open, async (store) => {
      await register(store, 'node-old', T0);
      await register(store, 'node-new', T0 + 1_000);
      assert.deepEqual(await store.markStaleNodesOffline(T0 + 500, T0 + 2_000), ['node-old']);
      assert.deepEqual(await store.markStaleNodesOffline(T0 + 500, T0 + 2_001), []);
      assert.equal((await store.getNode('node-new'))?.status, 'online');
      const ev = (await store.listEvents('node', 'node-old', 10)).at(-1);
      assert.equal(ev?.type, 'node.offline');
      assert.equal(ev?.at, T0 + 2_000);
    }));

  test('setNodeAdminState writes cordoned/draining/uncordoned events only on change', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      assert.equal((await store.setNodeAdminState('node-1', 'cordoned', T0 + 1)).adminState, 'cordoned');
      assert.equal((await store.setNodeAdminState('node-1', 'cordoned', T0 + 2)).adminState, 'cordoned');
      assert.equal((await store.setNodeAdminState('node-1', 'draining', T0 + 3)).adminState, 'draining');
      assert.equal((await store.setNodeAdminState('node-1', 'active', T0 + 4)).adminState, 'active');
      assert.deepEqual(await eventTypes(store, 'node', 'node-1'), ['node.registered', 'node.cordoned', 'node.draining', 'node.uncordoned']);
      assert.equal((await store.getNode('node-1'))?.adminState, 'active');
      await assert.rejects(store.setNodeAdminState('node-x', 'cordoned', T0), code('NODE_NOT_FOUND'));
    }));

  test('setNodeTier: open by default, event node.tier_set only on change, kept across re-registration', () =>
    withStore(open, async (store) => {
      assert.equal((await register(store, 'node-1', T0)).tier, 'open');
      assert.equal((await store.setNodeTier('node-1', 'curated', T0 + 1, { source: 'operator' })).tier, 'curated');
      assert.equal((await store.setNodeTier('node-1', 'curated', T0 + 2, { source: 'operator' })).tier, 'curated');
      assert.equal((await register(store, 'node-1', T0 + 3)).tier, 'curated', 'a re-registration keeps the vouching');
      assert.equal((await store.setNodeTier('node-1', 'open', T0 + 4, { source: 'operator', reason: 'operator left' })).tier, 'open');
      const sets = (await store.listEvents('node', 'node-1', 20)).filter((e) => e.type === 'node.tier_set');
      assert.deepEqual(
        sets.map((e) => e.data),
        [
          { from: 'open', to: 'curated', by: 'operator', reason: null },
          { from: 'curated', to: 'open', by: 'operator', reason: 'operator left' },
        ],
      );
      await assert.rejects(store.setNodeTier('node-x', 'curated', T0, { source: 'operator' }), code('NODE_NOT_FOUND'));
    }));

  test('registerNode binds a provider once: the same provider or none keeps it, another is FORBIDDEN', () =>
    withStore(open, async (store) => {
      const anon = await register(store, 'node-1', T0);
      assert.equal(anon.providerId, null);
      const bound = await store.registerNode({ id: 'node-1', publicKey: 'key-node-1', advertisement: anon.advertisement, now: T0 + 1, providerId: 'prov-a' });
      assert.equal(bound.providerId, 'prov-a');
      assert.equal((await register(store, 'node-1', T0 + 2)).providerId, 'prov-a', 'no providerId keeps the owner');
      const same = await store.registerNode({ id: 'node-1', publicKey: 'key-node-1', advertisement: anon.advertisement, now: T0 + 3, providerId: 'prov-a' });
      assert.equal(same.providerId, 'prov-a');
      await assert.rejects(
        store.registerNode({ id: 'node-1', publicKey: 'key-node-1', advertisement: anon.advertisement, now: T0 + 4, providerId: 'prov-b' }),
        (err: unknown) => {
          code('FORBIDDEN')(err);
          assert.equal((err as Error).message, 'node node-1 belongs to another provider');
          return true;
        },
      );
      const node = await store.getNode('node-1');
      assert.equal(node?.providerId, 'prov-a');
      assert.equal(node?.lastHeartbeatAt, T0 + 3, 'a refused registration writes nothing');
      const fresh = await store.registerNode({ id: 'node-2', publicKey: 'key-node-2', advertisement: anon.advertisement, now: T0, providerId: 'prov-b' });
      assert.equal(fresh.providerId, 'prov-b');
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

  test('node track records: successes, infrastructure failures, outages, runtime against the class; auto-cordon with a reason', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0);
      await register(store, 'node-2', T0);
      for (let i = 0; i < 4; i++) {
        const a = await assigned(store, `job-s${i}`, `att-s${i}`, 'node-2', T0 + i);
        await store.finishAttempt(result(a.id, 'node-2', T0 + i + 1, { metrics: { durationMs: i < 3 ? 1000 : 500 } }), decide);
      }
      // A program's own failure is not the node's.
      const own = await assigned(store, 'job-own', 'att-own', 'node-2', T0 + 10);
      await store.finishAttempt(result(own.id, 'node-2', T0 + 11, { outcome: 'failed', exitCode: 3 }), decide);
      const s2 = (await store.listNodeStats(0)).find((r) => r.nodeId === 'node-2');
      assert.ok(s2);
      assert.ok(Math.abs(s2.stats.successes - 5) < 0.01, String(s2.stats.successes));
      assert.equal(s2.stats.failures, 0);
      assert.ok(Math.abs((s2.stats.runtimeRatio ?? 0) - 0.5) < 0.01, 'the 4th run took half the class mean');
      const n = DEFAULT_NODE_STATS_POLICY.cordonAfterFailures;
      for (let i = 0; i < n - 1; i++) await failOn(store, i, 'node-1', T0 + 100 + i * 10);
      assert.equal((await store.getNode('node-1'))?.adminState, 'active');
      const since = T0 + 1000;
      await failOn(store, n, 'node-1', since);
      const node = await store.getNode('node-1');
      assert.equal(node?.adminState, 'cordoned');
      assert.match(node?.adminReason ?? '', /auto-cordoned: 5 attempts lost or failed by the node/);
      assert.deepEqual((await eventTypes(store, 'node', 'node-1')).slice(-1), ['node.auto_cordoned']);
      const recent = await store.listNodeStats(since);
      assert.deepEqual(
        recent.map((r) => [r.nodeId, r.adminState]),
        [['node-1', 'cordoned']],
      );
      assert.ok(Math.abs((recent[0]?.stats.failures ?? 0) - n) < 0.01);
      assert.equal(recent[0]?.adminReason, node?.adminReason);
      // The operator uncordons: the reason goes.
      const back = await store.setNodeAdminState('node-1', 'active', since + 1);
      assert.equal(back.adminReason, undefined);
      // Going offline is an outage on the record.
      await store.markStaleNodesOffline(T0 + 5000, T0 + 5000);
      const all = await store.listNodeStats(T0 + 5000);
      assert.deepEqual(all.map((r) => r.nodeId).sort(), ['node-1', 'node-2']);
      assert.ok(all.every((r) => r.stats.outages >= 0.99));
    }));
}
