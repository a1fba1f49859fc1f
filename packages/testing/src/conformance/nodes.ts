/** Conformance: node registry, heartbeats and leases, admin state, staleness, lease expiry. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { transitionDecider } from '@gpux/core';
import { advertisement, assigned, code, eventTypes, type OpenStore, register, result, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

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
      const hb = await store.heartbeat('node-1', T0 + 10, T0 + 90_000);
      assert.deepEqual(hb, { cancelAttemptIds: [] });
      assert.equal((await store.getAttempt(a1.id))?.leaseExpiresAt, T0 + 90_000);
      assert.equal((await store.getAttempt(a2.id))?.leaseExpiresAt, T0 + 90_000);
      assert.equal((await store.getAttempt(other.id))?.leaseExpiresAt, other.leaseExpiresAt);
      assert.equal((await store.getNode('node-1'))?.lastHeartbeatAt, T0 + 10);
      await store.requestCancel('job-2', T0 + 11);
      assert.deepEqual(await store.heartbeat('node-1', T0 + 12, T0 + 90_000), { cancelAttemptIds: ['att-2'] });

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

  test('expireLeases: lost attempt requeues away from the node; out of retries fails; cancel-requested cancels; healthy untouched', () =>
    withStore(open, async (store) => {
      const retry = await assigned(store, 'job-retry', 'att-retry', 'node-1', T0, { spec: { maxRetries: 2 } });
      const last = await assigned(store, 'job-last', 'att-last', 'node-1', T0, { spec: { maxRetries: 0 } });
      const cancel = await assigned(store, 'job-cancel', 'att-cancel', 'node-1', T0);
      const healthy = await assigned(store, 'job-ok', 'att-ok', 'node-2', T0);
      await store.startAttempt(retry.id, 'node-1', T0 + 1);
      await store.requestCancel('job-cancel', T0 + 2);
      await store.heartbeat('node-2', T0 + 3, T0 + 500_000);
      const now = T0 + 40_000; // past the 30 s leases of node-1
      const lost = await store.expireLeases(now, decide, 100);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.jobId, l.nodeId, l.jobState]).sort(),
        [
          ['att-cancel', 'job-cancel', 'node-1', 'cancelled'],
          ['att-last', 'job-last', 'node-1', 'failed'],
          ['att-retry', 'job-retry', 'node-1', 'queued'],
        ],
      );
      const r = await store.getJob('job-retry');
      assert.equal(r?.state, 'queued');
      assert.deepEqual(r?.avoidNodeIds, ['node-1']);
      assert.ok((r?.runAfter ?? 0) > now);
      assert.equal(r?.currentAttemptId, null);
      assert.equal((await store.getAttempt(retry.id))?.state, 'lost');
      assert.equal((await store.getAttempt(retry.id))?.finishedAt, now);
      assert.equal((await store.getJob('job-last'))?.state, 'failed');
      assert.equal((await store.getJob('job-cancel'))?.state, 'cancelled');
      assert.equal((await store.getAttempt(healthy.id))?.state, 'assigned');
      assert.deepEqual((await eventTypes(store, 'job', 'job-retry')).slice(-2), ['attempt.lost', 'job.requeued']);
      assert.deepEqual((await eventTypes(store, 'job', 'job-last')).slice(-2), ['attempt.lost', 'job.failed']);
      assert.deepEqual(await store.expireLeases(now, decide, 100), []);
      // The node reports after the coordinator declared the attempt lost: conflict.
      await assert.rejects(store.finishAttempt(result(last.id, 'node-1', now + 1), decide), code('CONFLICT'));
      await assert.rejects(store.finishAttempt(result(cancel.id, 'node-1', now + 1, { outcome: 'cancelled', exitCode: null }), decide), code('CONFLICT'));
    }));

  test('expireLeases honours its limit, oldest lease first', () =>
    withStore(open, async (store) => {
      await assigned(store, 'job-1', 'att-1', 'node-1', T0 + 2);
      await assigned(store, 'job-2', 'att-2', 'node-1', T0);
      await assigned(store, 'job-3', 'att-3', 'node-1', T0 + 1);
      const now = T0 + 100_000;
      assert.deepEqual(
        (await store.expireLeases(now, decide, 2)).map((l) => l.attemptId),
        ['att-2', 'att-3'],
      );
      assert.deepEqual(
        (await store.expireLeases(now, decide, 2)).map((l) => l.attemptId),
        ['att-1'],
      );
    }));

  test('extendActiveLeases pushes active leases up to a minimum and leaves ended attempts alone', () =>
    withStore(open, async (store) => {
      const short = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.heartbeat('node-1', T0, T0 + 100);
      const long = await assigned(store, 'job-2', 'att-2', 'node-2', T0 + 200_000);
      const done = await assigned(store, 'job-3', 'att-3', 'node-3', T0);
      await store.finishAttempt(result(done.id, 'node-3', T0 + 1), decide);
      assert.equal(await store.extendActiveLeases(T0 + 60_000), 1);
      assert.equal((await store.getAttempt(short.id))?.leaseExpiresAt, T0 + 60_000);
      assert.equal((await store.getAttempt(long.id))?.leaseExpiresAt, T0 + 230_000);
      assert.equal((await store.getAttempt(done.id))?.leaseExpiresAt, null);
      assert.deepEqual(await store.expireLeases(T0 + 59_999, decide, 10), []);
    }));
}
