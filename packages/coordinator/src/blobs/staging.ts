/**
 * Staged uploads on the coordinator's disk (`<blob dir>/uploads/<uploadId>`, 0600 in a 0700 directory), shared
 * by every backend: bytes are appended to a file as they arrive, so an interrupted upload resumes from the
 * file's size, even after a restart. At completion the file is hashed again by streaming it from disk: Node's
 * hash state cannot be saved, so a running hash would not survive a restart anyway, and one sequential read
 * of the file is cheap beside the upload itself.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, open, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { type AppendOptions, type ByteSource, GpuxError } from '@gpux/core';

const UPLOAD_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** Create `dir` (and its parents) owner-only; tighten it when it already exists. */
export async function ownerOnlyDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/** The sha256 hex of a file, read as a stream. */
export async function hashFile(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path, { highWaterMark: 256 * 1024 }), hash);
  return hash.digest('hex');
}

/** fsync a file or directory, so a rename or a write survives a power cut. */
export async function syncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class UploadStaging {
  constructor(readonly dir: string) {}

  path(uploadId: string): string {
    // Ids are made by the coordinator; the check keeps a bad one from ever naming a path outside `dir`.
    if (!UPLOAD_ID.test(uploadId)) throw new GpuxError('REQUEST_INVALID', `invalid upload id "${uploadId.slice(0, 40)}"`);
    return join(this.dir, uploadId);
  }

  async begin(uploadId: string): Promise<void> {
    await ownerOnlyDir(this.dir);
    const fh = await open(this.path(uploadId), 'a', 0o600);
    await fh.close();
  }

  async size(uploadId: string): Promise<number | undefined> {
    try {
      return (await stat(this.path(uploadId))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async append(uploadId: string, offset: number, data: ByteSource, opts: AppendOptions): Promise<number> {
    const size = await this.size(uploadId);
    if (size === undefined) throw new GpuxError('NOT_FOUND', `no upload ${uploadId}: it finished, expired or was never started`);
    if (size !== offset) throw new GpuxError('CONFLICT', `the upload has ${size} bytes, not ${offset}: send the bytes from offset ${size}`);
    const fh = await open(this.path(uploadId), 'a');
    let written = 0;
    try {
      for await (const chunk of data) {
        const room = opts.maxBytes - written;
        if (chunk.length > room) {
          // Keep what fits (a valid prefix the client may resume after), refuse the rest.
          if (room > 0) await fh.write(chunk.subarray(0, room));
          written += Math.max(0, room);
          throw new GpuxError('BODY_TOO_LARGE', `this append may carry at most ${opts.maxBytes} bytes; ${offset + written} bytes are staged: resume from there in smaller chunks`);
        }
        await fh.write(chunk);
        written += chunk.length;
      }
    } finally {
      await fh.close();
    }
    return offset + written;
  }

  /** Check size and sha256 of the staged bytes; on a mismatch the staged file is removed and REQUEST_INVALID says why. */
  async check(uploadId: string, expected: { sha256: string; size: number }): Promise<string> {
    const path = this.path(uploadId);
    const size = await this.size(uploadId);
    if (size === undefined) throw new GpuxError('NOT_FOUND', `no upload ${uploadId}: it finished, expired or was never started`);
    if (size !== expected.size) {
      if (size > expected.size) await this.discard(uploadId);
      throw new GpuxError('REQUEST_INVALID', `the upload has ${size} bytes but declared ${expected.size}${size > expected.size ? ': it was discarded, start again' : ': send the rest first'}`);
    }
    const actual = await hashFile(path);
    if (actual !== expected.sha256) {
      await this.discard(uploadId);
      throw new GpuxError(
        'REQUEST_INVALID',
        `the uploaded bytes hash to sha256 ${actual}, not the declared ${expected.sha256}: the upload was discarded; check the file did not change while uploading and start again`,
      );
    }
    return path;
  }

  async discard(uploadId: string): Promise<void> {
    await rm(this.path(uploadId), { force: true });
  }
}
