/**
 * Abuse suite, blob store (issue 13): chunks over the limit (declared or streamed without a length, or past
 * the declared size) are 413 and store nothing beyond the limit; malformed names, sizes, offsets and content
 * types are 400; open uploads are capped per account and opening them is rate-limited (429 with Retry-After);
 * a declared size over the quota is refused before any byte is sent.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { BlobConfig } from '../../src/blobs/config.js';
import { call, type Harness, startHarness, waitFor } from '../helpers.js';

const KiB = 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('abuse: blob store', () => {
  let h: Harness;
  let buyer: string;
  before(async () => {
    h = await startHarness({ blobs: { chunkBytes: 64 * KiB, quotaBytes: 1024 * KiB, maxOpenUploads: 3, uploadsPerMinute: 10 } as BlobConfig });
    buyer = await h.buyer();
  });
  after(async () => {
    await h?.close();
  });
  const begin = (token: string, sha256: string, size: number) => call(h.url, 'POST', '/v1/blobs/uploads', { token, body: { sha256, size } });
  const offsetOf = async (id: string) => (await call(h.url, 'GET', `/v1/blobs/uploads/${id}`, { token: buyer })).body.offset as number;

  test('oversized chunks: a declared length over the limit stores nothing; a streamed one stores only up to the limit', async () => {
    const data = Buffer.alloc(200 * KiB, 1);
    const id = (await begin(buyer, sha(data), data.length)).body.uploadId as string;
    const declared = await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token: buyer, raw: data, headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } });
    assert.equal(declared.status, 413);
    assert.equal(declared.body.error.code, 'BODY_TOO_LARGE');
    assert.equal(await offsetOf(id), 0, 'refused before reading');
    // No Content-Length (chunked): the limit is enforced on the stream.
    // The server answers 413 while the client still sends, so the client may see the 413 or a reset connection.
    const streamed = await fetch(`${h.url}/v1/blobs/uploads/${id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${buyer}`, 'content-type': 'application/octet-stream', 'upload-offset': '0' },
      body: new Blob([data]).stream(),
      duplex: 'half',
    } as RequestInit).then(
      (r) => r.status,
      () => 'reset',
    );
    assert.ok(streamed === 413 || streamed === 'reset', String(streamed));
    await waitFor(async () => (await offsetOf(id)) === 64 * KiB, 'what fits the limit to be staged');
    const settle = await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token: buyer, raw: Buffer.alloc(0), headers: { 'content-type': 'application/octet-stream', 'upload-offset': String(64 * KiB) } });
    assert.equal(settle.body.offset, 64 * KiB, 'nothing beyond the limit');
    const small = Buffer.alloc(10, 2);
    const id2 = (await begin(buyer, sha(small), small.length)).body.uploadId as string;
    const past = await call(h.url, 'PUT', `/v1/blobs/uploads/${id2}`, { token: buyer, raw: Buffer.alloc(11, 2), headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } });
    assert.equal(past.status, 413, 'more than the declared size');
    for (const u of [id, id2]) await call(h.url, 'POST', `/v1/blobs/uploads/${u}/abort`, { token: buyer });
  });

  test('malformed names, sizes, offsets and content types are 400 with the fix', async () => {
    assert.equal((await begin(buyer, 'ABC', 1)).status, 400);
    assert.equal((await begin(buyer, 'a'.repeat(64), -1)).status, 400);
    assert.equal((await begin(buyer, 'a'.repeat(64), 6 * 2 ** 40)).status, 400);
    assert.equal((await call(h.url, 'GET', '/v1/blobs/..%2F..%2Fetc%2Fpasswd', { token: buyer })).status, 400);
    assert.equal((await call(h.url, 'GET', '/v1/blobs/uploads/..%2Fx', { token: buyer })).status, 404);
    const data = Buffer.from('hello');
    const id = (await begin(buyer, sha(data), data.length)).body.uploadId as string;
    const noOffset = await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token: buyer, raw: data, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(noOffset.status, 400);
    assert.match(noOffset.body.error.message, /upload-offset/);
    const badOffset = await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token: buyer, raw: data, headers: { 'content-type': 'application/octet-stream', 'upload-offset': '-3' } });
    assert.equal(badOffset.status, 400);
    const json = await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { token: buyer, body: { bytes: 'hello' }, headers: { 'upload-offset': '0' } });
    assert.equal(json.status, 400);
    assert.match(json.body.error.message, /application\/octet-stream/);
    assert.equal((await call(h.url, 'PUT', `/v1/blobs/uploads/${id}`, { raw: data, headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } })).status, 401);
    assert.equal(await offsetOf(id), 0);
    await call(h.url, 'POST', `/v1/blobs/uploads/${id}/abort`, { token: buyer });
  });

  test('a declared size over the quota is refused before any byte; open uploads are capped per account', async () => {
    const acct = await h.buyer();
    const big = await begin(acct, 'b'.repeat(64), 2048 * KiB);
    assert.equal(big.status, 429);
    assert.match(big.body.error.message, /blob quota exceeded/);
    for (let i = 0; i < 3; i++) assert.equal((await begin(acct, String(i).repeat(64), 10)).status, 200);
    const fourth = await begin(acct, '3'.repeat(64), 10);
    assert.equal(fourth.status, 429);
    assert.match(fourth.body.error.message, /3 open uploads, the most allowed/);
  });

  test('opening uploads is rate-limited per account: 429 RATE_LIMITED with Retry-After', async () => {
    const acct = await h.buyer();
    const empty = sha(Buffer.alloc(0));
    const first = await begin(acct, empty, 0);
    const done = await call(h.url, 'PUT', `/v1/blobs/uploads/${first.body.uploadId}`, { token: acct, raw: Buffer.alloc(0), headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } });
    assert.equal(done.body.blob.size, 0, 'an empty blob completes with an empty chunk');
    let limited: Awaited<ReturnType<typeof begin>> | undefined;
    for (let i = 0; i < 20 && !limited; i++) {
      const r = await begin(acct, empty, 0);
      if (r.status === 429) limited = r;
    }
    assert.ok(limited, 'limited within 20 tries');
    assert.equal(limited.body.error.code, 'RATE_LIMITED');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
  });
});
