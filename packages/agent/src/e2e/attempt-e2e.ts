/**
 * The crypto of one encrypted attempt on the node (issue 13): the input data key (opened by awaitDataKey), and a
 * fresh output key, wrapped to the buyer's key (spec.encryption.buyerKey), for the outputs and the logs.
 * - inputs: ciphertext downloaded (its digest checked as for any blob), then decrypted, the plaintext's sha256 and
 *   size checked against the spec's `encrypted`;
 * - outputs: each file encrypted to a temp file (streamed), hashed, uploaded as a blob;
 * - logs: each entry's data encrypted (encryptLogData), at most MAX_LOG_PLAINTEXT_BYTES of text per entry;
 * - checkpoints: encrypted under the INPUT data key, so a retry on another node (which gets that key) restores them.
 * Decryption failures (a flipped bit, a truncation, another key) become DataPlaneErrors: the attempt fails.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { LogStream } from '@gpux/protocol';
import { decryptStream, E2eDecryptError, encryptLogData, encryptStream, wrapKey, x25519Fingerprint } from '@gpux/protocol/e2e';
import { DataPlaneError } from '../data/download.js';

export interface Digest {
  sha256: string;
  size: number;
}

export class AttemptE2e {
  private constructor(
    readonly attemptId: string,
    /** The job's input data key: inputs and checkpoints. */
    readonly dataKey: Uint8Array,
    /** This attempt's own key: outputs and logs. */
    private readonly outputKey: Uint8Array,
    /** outputKey wrapped to the buyer (announced before the first log, and in the result). */
    readonly wrappedOutputKey: string,
  ) {}

  /** A fresh output key for the attempt, wrapped to the buyer's key (context: output, job, attempt, its fingerprint). */
  static async open(a: { jobId: string; attemptId: string; buyerKey: string }, dataKey: Uint8Array): Promise<AttemptE2e> {
    const outputKey = new Uint8Array(randomBytes(32));
    const wrapped = await wrapKey(outputKey, a.buyerKey, { purpose: 'output', jobId: a.jobId, attemptId: a.attemptId, recipientFingerprint: x25519Fingerprint(a.buyerKey) });
    return new AttemptE2e(a.attemptId, dataKey, outputKey, wrapped);
  }

  /** The data of a log entry: its text (at most MAX_LOG_PLAINTEXT_BYTES), encrypted for this attempt, seq and stream. */
  logData(text: string, seq: number, stream: LogStream): string {
    return encryptLogData(text, this.outputKey, { attemptId: this.attemptId, seq, stream });
  }

  /** An output file encrypted to `to` under the output key: the ciphertext's digest. */
  sealOutput(from: string, to: string): Promise<Digest> {
    return seal(from, to, this.outputKey);
  }

  /** A checkpoint archive encrypted to `to` under the input data key: the ciphertext's digest. */
  sealCheckpoint(from: string, to: string): Promise<Digest> {
    return seal(from, to, this.dataKey);
  }

  /** Decrypts an input (or checkpoint) under the data key to `to`; its plaintext must be `expected` when given. Throws DataPlaneError (nothing left at `to`). */
  async open(from: string, to: string, what: string, expected?: Digest): Promise<Digest> {
    const tap = new HashTap(expected?.size);
    try {
      await pipeline(createReadStream(from), decryptStream(this.dataKey), tap, createWriteStream(to, { mode: 0o600 }));
    } catch (e) {
      await rm(to, { force: true });
      if (e instanceof E2eDecryptError) throw new DataPlaneError(`${what}: does not decrypt with the job's data key (${e.message}); refused`);
      if (e instanceof DataPlaneError) throw new DataPlaneError(`${what}: ${e.message}`);
      throw e;
    }
    const got = tap.digest();
    if (expected && (got.sha256 !== expected.sha256 || got.size !== expected.size)) {
      await rm(to, { force: true });
      throw new DataPlaneError(`${what}: decrypts to ${got.size} bytes of sha256 ${got.sha256}, not the ${expected.size} bytes of sha256 ${expected.sha256} the spec names; refused`);
    }
    return got;
  }
}

async function seal(from: string, to: string, key: Uint8Array): Promise<Digest> {
  const tap = new HashTap();
  try {
    await pipeline(createReadStream(from), encryptStream(key), tap, createWriteStream(to, { mode: 0o600 }));
  } catch (e) {
    await rm(to, { force: true });
    throw e;
  }
  return tap.digest();
}

/** Hashes and counts what passes through; past `max` bytes it fails the stream. */
class HashTap extends Transform {
  private readonly hash = createHash('sha256');
  private size = 0;
  constructor(private readonly max?: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.size += chunk.length;
    if (this.max !== undefined && this.size > this.max) {
      cb(new DataPlaneError(`decrypts to more than the ${this.max} bytes the spec names`));
      return;
    }
    this.hash.update(chunk);
    cb(null, chunk);
  }
  digest(): Digest {
    return { sha256: this.hash.digest('hex'), size: this.size };
  }
}
