/** Conformance: the peers port (issue 15): federation peers, unique by URL and key; exchange outcomes and inbound summaries. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GpuxError } from '@gpux/core';
import type { RegionSummary } from '@gpux/protocol';
import { type OpenStore, T0, withStore } from '../fixtures.js';

const FP_A = 'a'.repeat(64);
const FP_B = 'b'.repeat(64);

const summary = (region: string, free: number): RegionSummary => ({
  region,
  sentAt: T0,
  classes: [{ class: 'nvidia-h100-80gb', freeGpus: free, totalGpus: 8, priceIndex: 2_500_000 }],
  queueDepth: 3,
  placementWaitP50Ms: 1200,
});

export function peerTests(open: OpenStore): void {
  test('peers: added, listed oldest first, found by key; a URL or key already a peer is a CONFLICT naming it', () =>
    withStore(open, async (store) => {
      const a = await store.addPeer({ id: 'peer-a', name: 'eu', url: 'https://eu.example', keyFingerprint: FP_A, createdAt: T0 });
      assert.equal(a.status, 'new');
      assert.equal(a.summary, null);
      await store.addPeer({ id: 'peer-b', name: 'us', url: 'https://us.example', keyFingerprint: FP_B, createdAt: T0 + 1 });
      assert.deepEqual(
        (await store.listPeers()).map((p) => p.id),
        ['peer-a', 'peer-b'],
      );
      assert.equal((await store.findPeerByKey(FP_B))?.id, 'peer-b');
      assert.equal(await store.findPeerByKey('c'.repeat(64)), undefined);
      for (const clash of [
        { url: 'https://eu.example', keyFingerprint: 'c'.repeat(64) },
        { url: 'https://other.example', keyFingerprint: FP_A },
      ]) {
        await assert.rejects(
          store.addPeer({ id: 'peer-c', name: 'x', createdAt: T0, ...clash }),
          (err: unknown) => err instanceof GpuxError && err.code === 'CONFLICT' && /peer-a/.test(err.message),
        );
      }
      assert.equal((await store.listPeers()).length, 2, 'nothing added');
      assert.equal((await store.removePeer('peer-a'))?.id, 'peer-a');
      assert.equal(await store.removePeer('peer-a'), undefined);
      assert.equal(await store.getPeer('peer-a'), undefined);
      await store.addPeer({ id: 'peer-a2', name: 'eu', url: 'https://eu.example', keyFingerprint: FP_A, createdAt: T0 + 2 });
    }));

  test('peers: failures count up with the next try and keep the last summary; a success clears them; inbound summaries leave the status', () =>
    withStore(open, async (store) => {
      await store.addPeer({ id: 'peer-a', name: 'eu', url: 'https://eu.example', keyFingerprint: FP_A, createdAt: T0 });
      await store.recordPeerExchange('peer-a', { at: T0 + 10, ok: true, rttMs: 42, summary: summary('eu', 5) });
      let p = await store.getPeer('peer-a');
      assert.equal(p?.status, 'ok');
      assert.equal(p?.rttMs, 42);
      assert.equal(p?.lastSeenAt, T0 + 10);
      assert.deepEqual(p?.summary, summary('eu', 5));
      await store.recordPeerExchange('peer-a', { at: T0 + 20, ok: false, status: 'unreachable', error: 'connection refused', nextTryAt: T0 + 30 });
      await store.recordPeerExchange('peer-a', { at: T0 + 30, ok: false, status: 'unauthorized', error: 'x'.repeat(5000), nextTryAt: T0 + 50 });
      p = await store.getPeer('peer-a');
      assert.equal(p?.status, 'unauthorized');
      assert.equal(p?.failures, 2);
      assert.equal(p?.nextTryAt, T0 + 50);
      assert.equal(p?.lastError?.length, 1024, 'errors are bounded');
      assert.deepEqual(p?.summary, summary('eu', 5), 'the last summary stays, with its age');
      assert.equal(p?.summaryAt, T0 + 10);
      await store.recordPeerSummary('peer-a', summary('eu', 7), T0 + 40);
      p = await store.getPeer('peer-a');
      assert.equal(p?.status, 'unauthorized', 'an inbound summary does not say we can reach it');
      assert.equal(p?.lastSeenAt, T0 + 40);
      assert.equal(p?.summary?.classes[0]?.freeGpus, 7);
      await store.recordPeerExchange('peer-a', { at: T0 + 60, ok: true, rttMs: 9, summary: summary('eu', 1) });
      p = await store.getPeer('peer-a');
      assert.equal(p?.status, 'ok');
      assert.equal(p?.failures, 0);
      assert.equal(p?.nextTryAt, null);
      assert.equal(p?.lastError, null);
      await store.recordPeerExchange('gone', { at: T0, ok: true, rttMs: 1, summary: summary('x', 0) });
      assert.equal((await store.listPeers()).length, 1, 'an outcome for a removed peer writes nothing');
    }));
}
