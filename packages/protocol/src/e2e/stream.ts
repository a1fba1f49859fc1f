/**
 * Payload encryption of files and streams under a 32-byte data key: chunked AES-256-GCM in the STREAM
 * construction (Hoang, Reyhanitabar, Rogaway, Vizár 2015), so a tampered, truncated, reordered or extended
 * ciphertext is refused. Streaming: never more than one chunk in memory.
 *
 * Format v1:
 *   header (24 bytes) = "GPXE" | 0x01 (version) | 0x10 (log2 of the chunk size: 64 KiB) | 0x00 0x00 | salt (16 random bytes)
 *   file key          = HKDF-SHA256(ikm = data key, salt, info = "gpux-e2e-v1 file", 32 bytes)
 *   chunk i           = AES-256-GCM(file key, nonce = 0x00000000 | uint64be(i), aad = header | uint64be(i) | final flag)
 *                       of the plaintext bytes [i·64 KiB, (i+1)·64 KiB), then its 16-byte tag
 * Every chunk holds exactly 64 KiB of plaintext except the last (the final flag set), which holds size mod 64 KiB
 * (possibly 0) bytes: so there is always a final chunk and a reader knows a chunk is final by its length alone.
 * One data key serves every file of a job: each file's random salt gives it its own key, so nonces never repeat.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { DATA_KEY_BYTES } from './wrap.js';

export const CHUNK_BYTES = 64 * 1024;
export const TAG_BYTES = 16;
export const HEADER_BYTES = 24;
const MAGIC = Buffer.from('GPXE', 'latin1');
const VERSION = 1;
const CHUNK_LOG2 = 16;
const FILE_KEY_INFO = Buffer.from('gpux-e2e-v1 file', 'utf8');

/** Bytes of the ciphertext of `plaintextBytes` bytes: known before encrypting (to announce an upload's size). */
export function ciphertextSize(plaintextBytes: number): number {
  if (!Number.isSafeInteger(plaintextBytes) || plaintextBytes < 0) throw new Error('a size is a non-negative integer');
  return HEADER_BYTES + plaintextBytes + TAG_BYTES * (Math.floor(plaintextBytes / CHUNK_BYTES) + 1);
}

/** The plaintext size of a ciphertext of `ciphertextBytes` bytes, or null when no plaintext encrypts to that size. */
export function plaintextSize(ciphertextBytes: number): number | null {
  const body = ciphertextBytes - HEADER_BYTES;
  if (!Number.isSafeInteger(body) || body < TAG_BYTES) return null;
  const full = Math.floor(body / (CHUNK_BYTES + TAG_BYTES));
  const last = body - full * (CHUNK_BYTES + TAG_BYTES);
  return last < TAG_BYTES ? null : full * CHUNK_BYTES + last - TAG_BYTES;
}

function checkKey(dataKey: Uint8Array): void {
  if (dataKey.length !== DATA_KEY_BYTES) throw new Error(`a data key has ${DATA_KEY_BYTES} bytes`);
}

function fileKey(dataKey: Uint8Array, salt: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', dataKey, salt, FILE_KEY_INFO, 32));
}

function nonceOf(i: number): Buffer {
  const n = Buffer.alloc(12);
  n.writeBigUInt64BE(BigInt(i), 4);
  return n;
}

function aadOf(header: Buffer, i: number, final: boolean): Buffer {
  const tail = Buffer.alloc(9);
  tail.writeBigUInt64BE(BigInt(i), 0);
  tail[8] = final ? 1 : 0;
  return Buffer.concat([header, tail]);
}

function sealChunk(key: Buffer, header: Buffer, i: number, final: boolean, plain: Buffer): Buffer {
  const c = createCipheriv('aes-256-gcm', key, nonceOf(i));
  c.setAAD(aadOf(header, i, final));
  return Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
}

function openChunk(key: Buffer, header: Buffer, i: number, final: boolean, sealed: Buffer): Buffer {
  const d = createDecipheriv('aes-256-gcm', key, nonceOf(i));
  d.setAAD(aadOf(header, i, final));
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  try {
    return Buffer.concat([d.update(sealed.subarray(0, sealed.length - TAG_BYTES)), d.final()]);
  } catch {
    throw new E2eDecryptError(`chunk ${i} does not authenticate: the ciphertext was altered, truncated or reordered, or the key is not this file's`);
  }
}

/** Decryption refused: wrong key, or a ciphertext that is not what was encrypted. */
export class E2eDecryptError extends Error {
  override name = 'E2eDecryptError';
}

/** Collects writes into fixed-size pieces without copying more than one piece at a time. */
class Pieces {
  private parts: Buffer[] = [];
  length = 0;
  push(b: Buffer): void {
    if (b.length === 0) return;
    this.parts.push(b);
    this.length += b.length;
  }
  take(n: number): Buffer {
    const all = this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.length);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.parts = rest.length > 0 ? [rest] : [];
    this.length = rest.length;
    return out;
  }
}

/** A Transform that encrypts its input (plaintext) into the v1 format. `salt` only for tests (default: random). */
export function encryptStream(dataKey: Uint8Array, opts: { salt?: Uint8Array } = {}): Transform {
  checkKey(dataKey);
  const salt = Buffer.from(opts.salt ?? randomBytes(16));
  if (salt.length !== 16) throw new Error('the salt has 16 bytes');
  const header = Buffer.concat([MAGIC, Buffer.from([VERSION, CHUNK_LOG2, 0, 0]), salt]);
  const key = fileKey(dataKey, salt);
  const buf = new Pieces();
  let i = 0;
  let headerSent = false;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      if (!headerSent) {
        this.push(header);
        headerSent = true;
      }
      buf.push(chunk);
      // Hold back a full chunk until more arrives: the last chunk must be the short, final one.
      while (buf.length > CHUNK_BYTES) this.push(sealChunk(key, header, i++, false, buf.take(CHUNK_BYTES)));
      cb();
    },
    flush(cb: TransformCallback) {
      if (!headerSent) this.push(header);
      if (buf.length === CHUNK_BYTES) this.push(sealChunk(key, header, i++, false, buf.take(CHUNK_BYTES)));
      this.push(sealChunk(key, header, i++, true, buf.take(buf.length)));
      cb();
    },
  });
}

/** A Transform that decrypts the v1 format; it fails the stream with E2eDecryptError on any tampering. */
export function decryptStream(dataKey: Uint8Array): Transform {
  checkKey(dataKey);
  const buf = new Pieces();
  let header: Buffer | null = null;
  let key: Buffer | null = null;
  let i = 0;
  const sealedChunk = CHUNK_BYTES + TAG_BYTES;
  return new Transform({
    transform(chunk: Buffer, _enc, cb: TransformCallback) {
      try {
        buf.push(chunk);
        if (!header) {
          if (buf.length < HEADER_BYTES) return cb();
          header = Buffer.from(buf.take(HEADER_BYTES));
          if (!header.subarray(0, 4).equals(MAGIC)) throw new E2eDecryptError('not a gpux encrypted file (no GPXE header)');
          if (header[4] !== VERSION || header[5] !== CHUNK_LOG2) throw new E2eDecryptError(`unsupported gpux encryption format (version ${header[4]}, chunk log2 ${header[5]})`);
          key = fileKey(dataKey, header.subarray(8, 24));
        }
        // A full sealed chunk is final only if nothing follows; so keep one back until more arrives or the end.
        while (buf.length > sealedChunk) this.push(openChunk(key as Buffer, header, i++, false, buf.take(sealedChunk)));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
    flush(cb: TransformCallback) {
      try {
        if (!header || !key) throw new E2eDecryptError('the ciphertext ends inside its header (truncated)');
        if (buf.length === sealedChunk) this.push(openChunk(key, header, i++, false, buf.take(sealedChunk)));
        if (buf.length < TAG_BYTES) throw new E2eDecryptError('the ciphertext has no final chunk (truncated)');
        this.push(openChunk(key, header, i++, true, buf.take(buf.length)));
        cb();
      } catch (e) {
        cb(e as Error);
      }
    },
  });
}

/** Encrypt a file to another path (streamed; written to `to + ".part"` and renamed once whole); its size is ciphertextSize(plaintext size). */
export async function encryptFile(from: string, to: string, dataKey: Uint8Array): Promise<void> {
  await throughPart(from, to, encryptStream(dataKey));
}

/** Decrypt a file to another path; on any refusal nothing is left at `to`. */
export async function decryptFile(from: string, to: string, dataKey: Uint8Array): Promise<void> {
  await throughPart(from, to, decryptStream(dataKey));
}

async function throughPart(from: string, to: string, t: Transform): Promise<void> {
  const part = `${to}.part`;
  try {
    await pipeline(createReadStream(from), t, createWriteStream(part, { mode: 0o600 }));
    await rename(part, to);
  } catch (e) {
    await rm(part, { force: true });
    throw e;
  }
}

/** Encrypt a buffer whole (small things: tests, inline data). */
export function encryptBuffer(plain: Uint8Array, dataKey: Uint8Array): Buffer {
  return runSync(encryptStream(dataKey), plain);
}

/** Decrypt a buffer whole (small things). */
export function decryptBuffer(sealed: Uint8Array, dataKey: Uint8Array): Buffer {
  return runSync(decryptStream(dataKey), sealed);
}

// Transform's transform/flush above call back synchronously, so driving them by hand is synchronous too.
function runSync(t: Transform, input: Uint8Array): Buffer {
  const out: Buffer[] = [];
  let failed: Error | null = null;
  const push = t.push.bind(t);
  t.push = (c: unknown) => {
    if (c !== null) out.push(c as Buffer);
    return true;
  };
  const cb = (e?: Error | null) => {
    if (e) failed ??= e;
  };
  t._transform(Buffer.from(input), 'binary', cb);
  if (!failed) t._flush(cb);
  t.push = push;
  if (failed) throw failed;
  return Buffer.concat(out);
}
