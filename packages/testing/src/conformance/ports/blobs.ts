/**
 * Conformance, blobs port: uploads (begin with quota and open-upload cap, progress, finish into a hold, dedupe
 * for the owner), holds (get, touch, list by page, delete, retention candidates) and what the GC may sweep.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { BlobUploadRecord } from '@gpux/core';
import { code, type OpenStore, T0, withStore } from '../fixtures.js';

const sha = (c: string) => c.repeat(64);
const upload = (over: Partial<BlobUploadRecord> = {}): BlobUploadRecord => ({ id: 'upl-1', ownerId: 'acct-a', sha256: sha('a'), size: 100, received: 0, createdAt: T0, expiresAt: T0 + 1000, ...over });
const limits = { quotaBytes: 1000, maxOpenUploads: 3 };

export function blobTests(open: OpenStore): void {
  test('blobs: begin, progress, finish into a hold; the owner beginning again gets the blob back', () =>
    withStore(open, async (store) => {
      const r = await store.beginBlobUpload({ upload: upload(), ...limits });
      assert.deepEqual(r, { upload: upload() });
      await store.recordBlobUploadProgress('upl-1', 60, T0 + 5000);
      await store.recordBlobUploadProgress('upl-1', 40, T0 + 2000);
      const up = await store.getBlobUpload('upl-1');
      assert.equal(up?.received, 60, 'progress never goes back');
      assert.equal(up?.expiresAt, T0 + 5000, 'expiry never moves back');
      assert.deepEqual(await store.blobUsage('acct-a'), { blobBytes: 0, reservedBytes: 100, openUploads: 1 });
      const blob = await store.finishBlobUpload('upl-1', T0 + 10);
      assert.deepEqual(blob, { sha256: sha('a'), ownerId: 'acct-a', size: 100, createdAt: T0 + 10, lastReferencedAt: T0 + 10 });
      assert.equal(await store.getBlobUpload('upl-1'), undefined);
      assert.equal(await store.finishBlobUpload('upl-1', T0 + 11), undefined);
      assert.deepEqual(await store.blobUsage('acct-a'), { blobBytes: 100, reservedBytes: 0, openUploads: 0 });
      const again = await store.beginBlobUpload({ upload: upload({ id: 'upl-2', createdAt: T0 + 50 }), ...limits });
      assert.ok('blob' in again);
      assert.equal(again.blob.lastReferencedAt, T0 + 50);
      assert.equal(await store.getBlobUpload('upl-2'), undefined, 'no upload opened');
      const other = await store.beginBlobUpload({ upload: upload({ id: 'upl-3', ownerId: 'acct-b' }), ...limits });
      assert.ok('upload' in other, 'another account must send the bytes itself');
    }));

  test('blobs: the quota counts holds and reservations; the open-upload cap; both LIMIT_EXCEEDED', () =>
    withStore(open, async (store) => {
      await store.beginBlobUpload({ upload: upload({ size: 600 }), ...limits });
      await store.finishBlobUpload('upl-1', T0);
      await store.beginBlobUpload({ upload: upload({ id: 'upl-2', sha256: sha('b'), size: 300 }), ...limits });
      await assert.rejects(store.beginBlobUpload({ upload: upload({ id: 'upl-3', sha256: sha('c'), size: 101 }), ...limits }), code('LIMIT_EXCEEDED'));
      await store.beginBlobUpload({ upload: upload({ id: 'upl-3', sha256: sha('c'), size: 100 }), ...limits });
      assert.deepEqual(await store.blobUsage('acct-a'), { blobBytes: 600, reservedBytes: 400, openUploads: 2 });
      await assert.rejects(store.beginBlobUpload({ upload: upload({ id: 'upl-4', sha256: sha('d'), size: 0 }), quotaBytes: 1000, maxOpenUploads: 2 }), code('LIMIT_EXCEEDED'));
      await store.deleteBlobUpload('upl-3');
      assert.equal((await store.blobUsage('acct-a')).openUploads, 1);
    }));

  test('blobs: concurrent begins of one account never overrun its quota', () =>
    withStore(open, async (store) => {
      const tries = Array.from({ length: 8 }, (_, i) => store.beginBlobUpload({ upload: upload({ id: `upl-${i}`, sha256: sha(String(i)), size: 300 }), quotaBytes: 1000, maxOpenUploads: 100 }).then(() => 'ok', () => 'refused'));
      const results = await Promise.all(tries);
      assert.equal(results.filter((r) => r === 'ok').length, 3);
      assert.equal((await store.blobUsage('acct-a')).reservedBytes, 900);
    }));

  test('blobs: get, touch, list by page, delete (with the retention guard), stale holds, expired uploads, in use', () =>
    withStore(open, async (store) => {
      for (const [i, c] of ['c', 'a', 'b'].entries()) {
        await store.beginBlobUpload({ upload: upload({ id: `u-${c}`, sha256: sha(c), size: 10, createdAt: T0 + i }), ...limits });
        await store.finishBlobUpload(`u-${c}`, T0 + i);
      }
      await store.beginBlobUpload({ upload: upload({ id: 'u-open', sha256: sha('e'), expiresAt: T0 + 100 }), ...limits });
      const p1 = await store.listBlobs({ ownerId: 'acct-a', limit: 2 });
      assert.deepEqual(
        p1.items.map((b) => b.sha256),
        [sha('a'), sha('b')],
      );
      const p2 = await store.listBlobs({ ownerId: 'acct-a', limit: 2, cursor: p1.nextCursor ?? undefined });
      assert.deepEqual(
        p2.items.map((b) => b.sha256),
        [sha('c')],
      );
      assert.equal(p2.nextCursor, null);
      assert.equal((await store.listBlobs({ ownerId: 'acct-z', limit: 5 })).items.length, 0);
      await store.touchBlob('acct-a', sha('c'), T0 + 500);
      assert.equal((await store.getBlob('acct-a', sha('c')))?.lastReferencedAt, T0 + 500);
      assert.equal(await store.getBlob('acct-b', sha('c')), undefined);
      assert.deepEqual(
        (await store.staleBlobs(T0 + 100, 10)).map((b) => b.sha256),
        [sha('a'), sha('b')],
      );
      assert.equal(await store.deleteBlob('acct-a', sha('c'), { unreferencedSince: T0 + 100 }), false, 'touched since: kept');
      assert.equal(await store.deleteBlob('acct-a', sha('a')), true);
      assert.equal(await store.deleteBlob('acct-a', sha('a')), false);
      assert.deepEqual(
        (await store.expiredBlobUploads(T0 + 100, 10)).map((u) => u.id),
        ['u-open'],
      );
      assert.equal((await store.expiredBlobUploads(T0 + 99, 10)).length, 0);
      assert.deepEqual([...(await store.blobsInUse([sha('a'), sha('b'), sha('e'), sha('f')]))].sort(), [sha('b'), sha('e')]);
      assert.equal((await store.blobsInUse([])).size, 0);
    }));
}
