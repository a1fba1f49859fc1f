/** Conformance: the cluster port (issue 14): the leader lease and its fence, shared nonces, the commit-time fit check. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LeaseLostError } from '@gpux/core';
import { type OpenStore, placement, register, spec, submit, T0, withStore } from '../fixtures.js';

export function clusterTests(open: OpenStore): void {
  test('the lease: one holder; renewals name their epoch; an expired lease moves on with epoch + 1', () =>
    withStore(open, async (store) => {
      const a = await store.acquireLease('leader', 'rep-a', T0, 1000);
      assert.deepEqual(a, { name: 'leader', holder: 'rep-a', epoch: 1, expiresAt: T0 + 1000 });
      assert.equal(await store.acquireLease('leader', 'rep-b', T0 + 500, 1000), null, 'held and not expired');
      assert.equal((await store.acquireLease('leader', 'rep-a', T0 + 600, 1000, 1))?.expiresAt, T0 + 1600, 'renewed');
      assert.equal(await store.acquireLease('leader', 'rep-a', T0 + 600, 1000, 7), null, 'a wrong epoch renews nothing');
      const b = await store.acquireLease('leader', 'rep-b', T0 + 1601, 1000);
      assert.equal(b?.epoch, 2, 'taken over after expiry');
      assert.equal(await store.acquireLease('leader', 'rep-a', T0 + 1602, 1000, 1), null, 'the old holder cannot renew its way back');
      assert.equal((await store.getLease('leader'))?.holder, 'rep-b');
      await store.releaseLease('leader', 'rep-b', 2);
      assert.equal((await store.acquireLease('leader', 'rep-c', T0 + 1700, 1000))?.epoch, 3, 'a released lease is free at once');
    }));

  test('the fence: a deposed leader cannot write; the current one can', () =>
    withStore(open, async (store) => {
      const a = await store.acquireLease('leader', 'rep-a', T0, 1000);
      assert.ok(a);
      const fencedA = store.fenced(a);
      await fencedA.markStaleNodesOffline(T0, T0); // a write transaction under the fence: allowed while A holds it
      const b = await store.acquireLease('leader', 'rep-b', T0 + 2000, 1000);
      assert.ok(b);
      await assert.rejects(fencedA.markStaleNodesOffline(T0, T0 + 2001), LeaseLostError);
      await assert.rejects(fencedA.submitJob({ id: 'job-x', buyerId: 'buyer-1', spec: spec(), idempotencyKey: null, now: T0 }), LeaseLostError);
      assert.equal(await store.getJob('job-x'), undefined, 'nothing written');
      await store.fenced(b).markStaleNodesOffline(T0, T0 + 2002);
    }));

  test('nonces: claimed once across calls; the expired are pruned', () =>
    withStore(open, async (store) => {
      assert.deepEqual(
        await store.claimNonces([
          { nodeId: 'n1', nonce: 'aaaaaaaa', expiresAt: T0 + 10 },
          { nodeId: 'n1', nonce: 'bbbbbbbb', expiresAt: T0 + 20 },
          { nodeId: 'n2', nonce: 'aaaaaaaa', expiresAt: T0 + 10 },
        ]),
        [true, true, true],
      );
      assert.deepEqual(
        await store.claimNonces([
          { nodeId: 'n1', nonce: 'aaaaaaaa', expiresAt: T0 + 30 },
          { nodeId: 'n1', nonce: 'cccccccc', expiresAt: T0 + 30 },
        ]),
        [false, true],
        'a replay is refused, a new nonce is not',
      );
      assert.equal(await store.pruneNonces(T0 + 15, 100), 2);
      assert.deepEqual(await store.claimNonces([{ nodeId: 'n1', nonce: 'aaaaaaaa', expiresAt: T0 + 40 }]), [true], 'forgotten once expired');
    }));

  test('assign checks GPUs at commit: a GPU an active attempt holds is never given twice', () =>
    withStore(open, async (store) => {
      await register(store, 'node-1', T0, {
        gpus: [
          { index: 0, uuid: 'GPU-0', vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 },
          { index: 1, uuid: 'GPU-1', vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 },
        ],
      });
      for (const id of ['job-1', 'job-2', 'job-3', 'job-4']) await submit(store, id, T0, { spec: { resources: { gpu: { count: 1 } } } });
      assert.equal((await store.assign([placement('job-1', 'att-1', 'node-1', T0 + 30_000, [0])], T0 + 1)).length, 1);
      // A stale index offers GPU 0 again, and one placement in the same batch takes GPU 1 twice.
      const out = await store.assign(
        [placement('job-2', 'att-2', 'node-1', T0 + 30_000, [0]), placement('job-3', 'att-3', 'node-1', T0 + 30_000, [1]), placement('job-4', 'att-4', 'node-1', T0 + 30_000, [1])],
        T0 + 2,
      );
      assert.deepEqual(
        out.map((a) => a.id),
        ['att-3'],
      );
      assert.equal((await store.getJob('job-2'))?.state, 'queued', 'refused placements leave their jobs queued');
      assert.equal((await store.getJob('job-4'))?.state, 'queued');
    }));
}
