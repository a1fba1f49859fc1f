/**
 * The blob API (issue 13) on a real coordinator, on SQLite and on PostgreSQL: upload in chunks, a cut chunk
 * resumed from the server's offset, a wrong offset (409 with the server's offset), a hash mismatch (the upload
 * discarded), dedupe, the quota, ranged reads, privacy between accounts, and the garbage collector (retention
 * and abandoned uploads) run against the same database and files.
 */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { blobsOf, GpuxClient } from '@gpux/sdk';
import { requirePostgres, seededBytes, sha256Of, startPostgres } from '@gpux/testing';
import type { BlobConfig } from '../../src/blobs/config.js';
import { FsBlobBackend } from '../../src/blobs/fs-backend.js';
import { collectBlobGarbage, ORPHAN_GRACE_MS } from '../../src/services/blob-gc.js';
import { call, type Harness, startHarness, waitFor } from '../helpers.js';

const KiB = 1024;
/** Partial blob settings, merged over the parsed ones by loadCoordinatorConfig. */
const blobSettings = (o: Partial<BlobConfig>) => o as BlobConfig;
const octets = (offset: number) => ({ 'content-type': 'application/octet-stream', 'upload-offset': String(offset) });

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function blobApi(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`blob API: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), blobs: blobSettings({ chunkBytes: 64 * KiB, quotaBytes: 1024 * KiB, maxOpenUploads: 4 }) });
      buyer = await h.buyer();
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });
    const begin = (token: string, data: Buffer) => call(h.url, 'POST', '/v1/blobs/uploads', { token, body: { sha256: sha256Of(data), size: data.length } });
    const put = (token: string, id: string, offset: number, bytes: Buffer) => call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token, raw: bytes, headers: octets(offset) });

    test('upload in chunks, list, download whole and by ranges; the owner re-uploading gets the blob at once', async () => {
      const data = seededBytes(150 * KiB, 1);
      const b = await begin(buyer, data);
      assert.equal(b.status, 200);
      assert.equal(b.body.offset, 0);
      assert.equal(b.body.chunkBytes, 64 * KiB);
      const id = b.body.uploadId as string;
      let offset = 0;
      while (offset < data.length) {
        const r = await put(buyer, id, offset, data.subarray(offset, offset + 64 * KiB));
        assert.equal(r.status, 200, JSON.stringify(r.body));
        offset = r.body.offset;
      }
      const digest = sha256Of(data);
      const ls = await call(h.url, 'GET', '/v1/blobs', { token: buyer });
      assert.deepEqual(
        ls.body.blobs.map((x: { sha256: string }) => x.sha256),
        [digest],
      );
      assert.equal(ls.body.usage.blobBytes, data.length);
      const whole = await fetch(`${h.url}/v1/blobs/${digest}`, { headers: { authorization: `Bearer ${buyer}` } });
      assert.equal(whole.status, 200);
      assert.equal(whole.headers.get('content-length'), String(data.length));
      assert.equal(sha256Of(Buffer.from(await whole.arrayBuffer())), digest);
      const ranged = async (range: string) => fetch(`${h.url}/v1/blobs/${digest}`, { headers: { authorization: `Bearer ${buyer}`, range } });
      const mid = await ranged('bytes=1000-1999');
      assert.equal(mid.status, 206);
      assert.equal(mid.headers.get('content-range'), `bytes 1000-1999/${data.length}`);
      assert.deepEqual(Buffer.from(await mid.arrayBuffer()), data.subarray(1000, 2000));
      const suffix = await ranged('bytes=-10');
      assert.deepEqual(Buffer.from(await suffix.arrayBuffer()), data.subarray(data.length - 10));
      const open = await ranged(`bytes=${data.length - 3}-`);
      assert.deepEqual(Buffer.from(await open.arrayBuffer()), data.subarray(data.length - 3));
      const outside = await ranged(`bytes=${data.length}-`);
      assert.equal(outside.status, 416);
      assert.equal(outside.headers.get('content-range'), `bytes */${data.length}`);
      await outside.arrayBuffer();
      const again = await begin(buyer, data);
      assert.equal(again.body.uploadId, null, 'nothing to upload');
      assert.equal(again.body.blob.sha256, digest);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${digest}/info`, { token: buyer })).body.size, data.length);
    });

    test('a cut chunk keeps what arrived; the upload resumes from the offset the server reports', async () => {
      const data = seededBytes(60 * KiB, 2);
      const id = (await begin(buyer, data)).body.uploadId as string;
      const url = new URL(`${h.url}/v1/blobs/uploads/${id}`);
      // Declare the whole blob, send 20 KiB, then drop the connection.
      await new Promise<void>((resolve) => {
        const req = request(url, { method: 'PUT', headers: { ...octets(0), authorization: `Bearer ${buyer}`, 'content-length': String(data.length) } });
        req.on('error', () => resolve());
        req.write(data.subarray(0, 20 * KiB), () => setImmediate(() => req.destroy()));
        req.on('close', () => resolve());
      });
      const offset = await waitFor(async () => {
        const s = await call(h.url, 'GET', `/v1/blobs/uploads/${id}`, { token: buyer });
        // The server is done with the cut chunk once a zero-byte append at its offset is not "being received".
        const probe = await put(buyer, id, s.body.offset, Buffer.alloc(0));
        return probe.status === 200 ? (probe.body.offset as number) + 1 : false;
      }, 'the cut chunk to be settled');
      const resumeAt = offset - 1;
      assert.ok(resumeAt > 0 && resumeAt <= 20 * KiB, `resumes inside what was sent (${resumeAt})`);
      const r = await put(buyer, id, resumeAt, data.subarray(resumeAt));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.blob.sha256, sha256Of(data));
    });

    test('a wrong offset is 409 with the server offset; a hash mismatch discards the upload and frees its reservation', async () => {
      const data = seededBytes(10 * KiB, 3);
      const id = (await begin(buyer, data)).body.uploadId as string;
      await put(buyer, id, 0, data.subarray(0, 4 * KiB));
      const wrong = await put(buyer, id, 0, data.subarray(0, 4 * KiB));
      assert.equal(wrong.status, 409);
      assert.equal(wrong.body.error.code, 'CONFLICT');
      assert.equal(wrong.headers.get('upload-offset'), String(4 * KiB));
      const tampered = Buffer.from(data);
      tampered[9000] = (tampered[9000] ?? 0) ^ 0xff;
      const bad = await put(buyer, id, 4 * KiB, tampered.subarray(4 * KiB));
      assert.equal(bad.status, 400);
      assert.match(bad.body.error.message, /hash to sha256 [0-9a-f]{64}, not the declared/);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/uploads/${id}`, { token: buyer })).status, 404);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${sha256Of(data)}/info`, { token: buyer })).status, 404);
    });

    test('another account can neither read, list, write to nor delete your blob; it may upload the same bytes itself', async () => {
      const other = await h.buyer();
      const data = seededBytes(5 * KiB, 4);
      const digest = sha256Of(data);
      const id = (await begin(buyer, data)).body.uploadId as string;
      assert.equal((await put(other, id, 0, data)).status, 404, 'their upload reads as missing');
      assert.equal((await call(h.url, 'GET', `/v1/blobs/uploads/${id}`, { token: other })).status, 404);
      assert.equal((await put(buyer, id, 0, data)).status, 200);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${digest}`, { token: other })).status, 404);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${digest}/info`, { token: other })).status, 404);
      assert.equal((await call(h.url, 'GET', '/v1/blobs', { token: other })).body.blobs.length, 0);
      assert.equal((await call(h.url, 'POST', `/v1/blobs/${digest}/delete`, { token: other })).body.deleted, false);
      const theirs = await begin(other, data);
      assert.ok(theirs.body.uploadId, 'knowing the digest is not enough: the bytes must be sent');
      assert.equal((await put(other, theirs.body.uploadId, 0, data)).status, 200);
      assert.equal((await call(h.url, 'POST', `/v1/blobs/${digest}/delete`, { token: buyer })).body.deleted, true);
      const still = await fetch(`${h.url}/v1/blobs/${digest}`, { headers: { authorization: `Bearer ${other}` } });
      assert.equal(sha256Of(Buffer.from(await still.arrayBuffer())), digest);
    });

    test('the quota counts blobs and open uploads; the refusal says what is used and how to free it', async () => {
      const acct = await h.buyer();
      const a = seededBytes(600 * KiB, 5);
      const ua = (await begin(acct, a)).body.uploadId as string;
      const over = await begin(acct, seededBytes(500 * KiB, 6));
      assert.equal(over.status, 429);
      assert.equal(over.body.error.code, 'LIMIT_EXCEEDED');
      assert.match(over.body.error.message, /uses 0\.6 MiB of its 1\.0 MiB \(0\.0 MiB in blobs, 0\.6 MiB reserved by 1 open uploads\)/);
      assert.match(over.body.error.message, /gpux blob rm/);
      assert.equal((await call(h.url, 'POST', `/v1/blobs/uploads/${ua}/abort`, { token: acct })).body.aborted, true);
      assert.equal((await begin(acct, seededBytes(500 * KiB, 6))).status, 200, 'aborting freed the reservation');
    });

    test('the SDK uploads a file in chunks and downloads it with its sha256 checked', async () => {
      const file = join(h.dir, 'sdk-in.bin');
      const data = seededBytes(200 * KiB + 5, 7);
      writeFileSync(file, data);
      const blobs = blobsOf(new GpuxClient({ url: h.url, token: buyer }));
      const view = await blobs.uploadFile(file);
      assert.equal(view.sha256, sha256Of(data));
      const out = join(h.dir, 'sdk-out.bin');
      assert.deepEqual(await blobs.downloadToFile(view.sha256, out), { sha256: view.sha256, size: data.length });
      assert.equal(existsSync(`${out}.partial`), false);
      assert.equal((await blobs.uploadFile(file)).sha256, view.sha256, 'a second upload of the same file sends nothing');
    });

    test('GC: past retention a hold is dropped and unheld bytes are deleted; abandoned uploads go too', async () => {
      const acct = await h.buyer();
      const data = seededBytes(3 * KiB, 8);
      const digest = sha256Of(data);
      const id = (await begin(acct, data)).body.uploadId as string;
      assert.equal((await put(acct, id, 0, data)).status, 200);
      const open = (await begin(acct, seededBytes(2 * KiB, 9))).body.uploadId as string;
      const cfg = h.coord.config.blobs;
      const backend = new FsBlobBackend(cfg.dir);
      const gc = (now: number) => collectBlobGarbage({ store: h.coord.store, backend, config: cfg, logger: { info() {}, warn() {} } }, now);
      const soon = await gc(Date.now() + 1000);
      assert.equal(soon.holdsExpired, 0, 'inside retention nothing goes');
      assert.ok(await backend.stat(digest));
      const later = await gc(Date.now() + Math.max(cfg.retentionMs, cfg.uploadTtlMs) + ORPHAN_GRACE_MS + 60_000);
      assert.ok(later.holdsExpired >= 1 && later.uploadsExpired >= 1 && later.blobsDeleted >= 1, JSON.stringify(later));
      assert.equal(await backend.stat(digest), undefined, 'the bytes are gone');
      assert.equal(await backend.stagedBytes(open), undefined, 'the abandoned upload is gone');
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${digest}`, { token: acct })).status, 404);
      assert.equal((await call(h.url, 'GET', '/v1/blobs', { token: acct })).body.usage.reservedBytes, 0);
    });
  });
}

blobApi('SQLite', async () => ({ stop: async () => {} }));
blobApi(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
