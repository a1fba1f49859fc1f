/**
 * The filesystem blob backend, the embedded default: `<dataDir>/blobs/<first 2 hex>/<sha256>`, files 0600 in
 * 0700 directories. A completed upload is fsynced and renamed into place (atomic: a reader sees the whole blob
 * or none), then its directory is fsynced.
 */
import { createReadStream } from 'node:fs';
import { readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { type BlobBackend, type BlobObject, type ByteRange, type ByteSource, GpuxError, isSha256Hex } from '@gpux/core';
import { ownerOnlyDir, syncPath, UploadStaging } from './staging.js';

const SHARD = /^[0-9a-f]{2}$/;

export class FsBlobBackend implements BlobBackend {
  readonly kind = 'fs';
  private readonly staging: UploadStaging;

  constructor(private readonly root: string) {
    this.staging = new UploadStaging(join(root, 'uploads'));
  }

  private pathOf(sha256: string): string {
    if (!isSha256Hex(sha256)) throw new GpuxError('REQUEST_INVALID', 'a blob is named by its sha256: 64 lowercase hex characters');
    return join(this.root, sha256.slice(0, 2), sha256);
  }

  async beginUpload(uploadId: string): Promise<void> {
    await ownerOnlyDir(this.root);
    await this.staging.begin(uploadId);
  }

  stagedBytes(uploadId: string): Promise<number | undefined> {
    return this.staging.size(uploadId);
  }

  appendUpload(uploadId: string, offset: number, data: ByteSource, opts: { maxBytes: number }): Promise<number> {
    return this.staging.append(uploadId, offset, data, opts);
  }

  async completeUpload(uploadId: string, expected: { sha256: string; size: number }): Promise<BlobObject> {
    const final = this.pathOf(expected.sha256);
    const staged = await this.staging.check(uploadId, expected);
    await syncPath(staged);
    const shard = join(this.root, expected.sha256.slice(0, 2));
    await ownerOnlyDir(shard);
    await rename(staged, final);
    await syncPath(shard);
    return (await this.stat(expected.sha256)) as BlobObject;
  }

  abortUpload(uploadId: string): Promise<void> {
    return this.staging.discard(uploadId);
  }

  async open(sha256: string, range?: ByteRange): Promise<ByteSource> {
    const path = this.pathOf(sha256);
    if (!(await this.stat(sha256))) throw new GpuxError('NOT_FOUND', `no blob ${sha256}`);
    return createReadStream(path, { highWaterMark: 1 << 20, ...(range ? { start: range.start, end: range.end - 1 } : {}) });
  }

  async stat(sha256: string): Promise<BlobObject | undefined> {
    try {
      const s = await stat(this.pathOf(sha256));
      return { sha256, size: s.size, modifiedAt: Math.floor(s.mtimeMs) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
  }

  async delete(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }

  async list(q: { after?: string; limit: number }): Promise<BlobObject[]> {
    const after = q.after ?? '';
    const out: BlobObject[] = [];
    const shards = (await readdirOrEmpty(this.root)).filter((n) => SHARD.test(n) && n >= after.slice(0, 2)).sort();
    for (const shard of shards) {
      const names = (await readdirOrEmpty(join(this.root, shard))).filter((n) => isSha256Hex(n) && n.startsWith(shard) && n > after).sort();
      for (const name of names) {
        const s = await this.stat(name);
        if (s) out.push(s);
        if (out.length >= q.limit) return out;
      }
    }
    return out;
  }

  async close(): Promise<void> {}
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}
