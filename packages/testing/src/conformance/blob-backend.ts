/**
 * The BlobBackend conformance suite (core blobs/backend.ts): one set of node:test tests every backend passes
 * unchanged (the filesystem, S3-compatible storage). Each test gets a fresh backend from `open()`. Bytes are
 * made in the test (seeded, so a failure replays) and compared by sha256.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { BlobBackend, ByteSource } from '@gpux/core';

export interface BlobBackendUnderTest {
  backend: BlobBackend;
  /** A second backend over the same storage, as after a coordinator restart (closes nothing). */
  reopen(): Promise<BlobBackend>;
  cleanup(): Promise<void>;
}

export type OpenBlobBackend = () => Promise<BlobBackendUnderTest>;

/** Deterministic pseudo-random bytes (xorshift32), so no two blobs of a test share content by accident. */
export function seededBytes(size: number, seed: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A source yielding `b` in pieces of `piece` bytes, as a socket would. */
export async function* pieces(b: Uint8Array, piece = 64 * 1024): ByteSource {
  for (let i = 0; i < b.length; i += piece) yield b.subarray(i, Math.min(b.length, i + piece));
}

/** A source that yields `bytes` then fails, as a dropped connection does. */
async function* cutAfter(b: Uint8Array, bytes: number): ByteSource {
  yield b.subarray(0, bytes);
  throw new Error('connection reset');
}

async function readAll(src: ByteSource): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of src) parts.push(Buffer.from(c));
  return Buffer.concat(parts);
}

async function withBackend(open: OpenBlobBackend, fn: (b: BlobBackend, h: BlobBackendUnderTest) => Promise<void>): Promise<void> {
  const h = await open();
  try {
    await fn(h.backend, h);
  } finally {
    await h.backend.close();
    await h.cleanup();
  }
}

const MAX = { maxBytes: 64 * 2 ** 20 };

async function store(b: BlobBackend, id: string, data: Buffer): Promise<string> {
  await b.beginUpload(id);
  assert.equal(await b.appendUpload(id, 0, pieces(data), MAX), data.length);
  const digest = sha256(data);
  await b.completeUpload(id, { sha256: digest, size: data.length });
  return digest;
}

export function runBlobBackendConformance(name: string, open: OpenBlobBackend, opts: { skip?: string | false } = {}): void {
  describe(`BlobBackend conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    test('upload in appends, complete, stat, read whole and by range', () =>
      withBackend(open, async (b) => {
        const data = seededBytes(3 * 2 ** 20 + 17, 1);
        await b.beginUpload('up-1');
        assert.equal(await b.stagedBytes('up-1'), 0);
        assert.equal(await b.appendUpload('up-1', 0, pieces(data.subarray(0, 2 ** 20)), MAX), 2 ** 20);
        assert.equal(await b.appendUpload('up-1', 2 ** 20, pieces(data.subarray(2 ** 20)), MAX), data.length);
        const digest = sha256(data);
        assert.equal(await b.stat(digest), undefined, 'invisible until completed');
        const done = await b.completeUpload('up-1', { sha256: digest, size: data.length });
        assert.equal(done.sha256, digest);
        assert.equal(done.size, data.length);
        assert.equal(await b.stagedBytes('up-1'), undefined, 'the staging area is gone');
        assert.equal((await b.stat(digest))?.size, data.length);
        assert.equal(sha256(await readAll(await b.open(digest))), digest);
        const part = await readAll(await b.open(digest, { start: 1_000_000, end: 1_000_100 }));
        assert.deepEqual(part, data.subarray(1_000_000, 1_000_100));
        const tail = await readAll(await b.open(digest, { start: data.length - 5, end: data.length }));
        assert.deepEqual(tail, data.subarray(data.length - 5));
      }));

    test('an empty blob and a one-byte blob', () =>
      withBackend(open, async (b) => {
        const empty = await store(b, 'up-e', Buffer.alloc(0));
        assert.equal((await b.stat(empty))?.size, 0);
        assert.equal((await readAll(await b.open(empty))).length, 0);
        const one = await store(b, 'up-o', Buffer.from([7]));
        assert.deepEqual(await readAll(await b.open(one)), Buffer.from([7]));
      }));

    test('a wrong offset is CONFLICT and changes nothing; an unknown upload is NOT_FOUND', () =>
      withBackend(open, async (b) => {
        await b.beginUpload('up-2');
        await b.appendUpload('up-2', 0, pieces(Buffer.from('hello ')), MAX);
        await assert.rejects(b.appendUpload('up-2', 0, pieces(Buffer.from('again')), MAX), { code: 'CONFLICT' });
        await assert.rejects(b.appendUpload('up-2', 99, pieces(Buffer.from('later')), MAX), { code: 'CONFLICT' });
        assert.equal(await b.stagedBytes('up-2'), 6);
        await assert.rejects(b.appendUpload('nope', 0, pieces(Buffer.from('x')), MAX), { code: 'NOT_FOUND' });
        assert.equal(await b.stagedBytes('nope'), undefined);
      }));

    test('an append cut midway keeps what arrived; the upload resumes there, even on a reopened backend', () =>
      withBackend(open, async (b, h) => {
        const data = seededBytes(2 ** 20, 2);
        await b.beginUpload('up-3');
        await assert.rejects(b.appendUpload('up-3', 0, cutAfter(data, 300_000), MAX), /connection reset/);
        const again = await h.reopen();
        try {
          const offset = (await again.stagedBytes('up-3')) ?? -1;
          assert.equal(offset, 300_000);
          await again.appendUpload('up-3', offset, pieces(data.subarray(offset)), MAX);
          const digest = sha256(data);
          await again.completeUpload('up-3', { sha256: digest, size: data.length });
          assert.equal(sha256(await readAll(await again.open(digest))), digest);
        } finally {
          await again.close();
        }
      }));

    test('an append over maxBytes is BODY_TOO_LARGE and keeps only what fits', () =>
      withBackend(open, async (b) => {
        await b.beginUpload('up-4');
        await assert.rejects(b.appendUpload('up-4', 0, pieces(seededBytes(5000, 3), 1000), { maxBytes: 2500 }), { code: 'BODY_TOO_LARGE' });
        assert.equal(await b.stagedBytes('up-4'), 2500);
      }));

    test('a hash or size mismatch is refused and discards the upload; nothing becomes visible', () =>
      withBackend(open, async (b) => {
        const data = seededBytes(10_000, 4);
        const wrong = sha256(Buffer.from('something else'));
        await b.beginUpload('up-5');
        await b.appendUpload('up-5', 0, pieces(data), MAX);
        await assert.rejects(b.completeUpload('up-5', { sha256: wrong, size: data.length }), (e: { code?: string; message: string }) => e.code === 'REQUEST_INVALID' && e.message.includes(sha256(data)));
        assert.equal(await b.stagedBytes('up-5'), undefined);
        assert.equal(await b.stat(wrong), undefined);
        await b.beginUpload('up-6');
        await b.appendUpload('up-6', 0, pieces(data), MAX);
        await assert.rejects(b.completeUpload('up-6', { sha256: sha256(data), size: data.length + 1 }), { code: 'REQUEST_INVALID' });
        assert.equal(await b.stat(sha256(data)), undefined);
      }));

    test('the same bytes uploaded twice stay one blob; delete and abort are idempotent', () =>
      withBackend(open, async (b) => {
        const data = seededBytes(4096, 5);
        const d1 = await store(b, 'up-7', data);
        const d2 = await store(b, 'up-8', data);
        assert.equal(d1, d2);
        assert.equal((await b.list({ limit: 10 })).filter((o) => o.sha256 === d1).length, 1);
        await b.delete(d1);
        await b.delete(d1);
        assert.equal(await b.stat(d1), undefined);
        await assert.rejects(b.open(d1), { code: 'NOT_FOUND' });
        await b.beginUpload('up-9');
        await b.abortUpload('up-9');
        await b.abortUpload('up-9');
        assert.equal(await b.stagedBytes('up-9'), undefined);
      }));

    test('list pages through every blob in sha256 order', () =>
      withBackend(open, async (b) => {
        const digests: string[] = [];
        for (let i = 0; i < 7; i++) digests.push(await store(b, `up-l${i}`, seededBytes(100 + i, 100 + i)));
        digests.sort();
        const seen: string[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await b.list({ limit: 3, ...(after ? { after } : {}) });
          if (page.length === 0) break;
          for (const o of page) assert.ok(o.modifiedAt > 0 && o.size >= 100);
          seen.push(...page.map((o) => o.sha256));
          after = page[page.length - 1]?.sha256;
        }
        assert.deepEqual(seen, digests);
      }));

    test('an invalid key or upload id is refused before touching storage', () =>
      withBackend(open, async (b) => {
        await assert.rejects(b.open('../../etc/passwd'), { code: 'REQUEST_INVALID' });
        await assert.rejects(b.beginUpload('../escape'), { code: 'REQUEST_INVALID' });
        await assert.rejects(b.stat('ABC'), { code: 'REQUEST_INVALID' });
      }));
  });
}
