/**
 * The S3-compatible blob backend (AWS S3, or any server speaking its API) through @aws-sdk/client-s3. Uploads are
 * staged on the coordinator's disk (staging.ts) and sent to the bucket at completion, after the hash check:
 * S3 parts must be at least 5 MiB except the last, while clients append chunks of any size and may be cut off
 * mid-chunk; staging keeps resume exact at any byte and the bucket only ever holds checked blobs. The cost: the
 * coordinator needs disk for uploads in flight, and an upload resumes on the coordinator that holds its staged
 * file. Blobs larger than one part go up as a multipart upload read from the file part by part (never whole
 * in memory); reads are ranged GetObject streams. Objects: `<prefix><first 2 hex>/<sha256>`.
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { type BlobBackend, type BlobObject, type ByteRange, type ByteSource, GpuxError, isSha256Hex } from '@gpux/core';
import type { S3BlobConfig } from './config.js';
import { UploadStaging } from './staging.js';

/** Part size of multipart uploads; raised for huge blobs so they fit S3's 10000 parts. */
const PART_BYTES = 16 * 2 ** 20;
const MAX_PARTS = 10_000;

const isNotFound = (err: unknown) => {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
};

export class S3BlobBackend implements BlobBackend {
  readonly kind = 's3';
  private readonly staging: UploadStaging;
  private readonly client: S3Client;

  constructor(
    private readonly cfg: S3BlobConfig,
    stagingRoot: string,
  ) {
    this.staging = new UploadStaging(join(stagingRoot, 'uploads'));
    this.client = new S3Client({
      region: cfg.region,
      forcePathStyle: cfg.forcePathStyle,
      ...(cfg.endpoint ? { endpoint: cfg.endpoint } : {}),
      // Checksums only where S3 requires them: many S3-compatible servers reject the newer trailing checksums.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  private key(sha256: string): string {
    if (!isSha256Hex(sha256)) throw new GpuxError('REQUEST_INVALID', 'a blob is named by its sha256: 64 lowercase hex characters');
    return `${this.cfg.prefix}${sha256.slice(0, 2)}/${sha256}`;
  }

  beginUpload(uploadId: string): Promise<void> {
    return this.staging.begin(uploadId);
  }

  stagedBytes(uploadId: string): Promise<number | undefined> {
    return this.staging.size(uploadId);
  }

  appendUpload(uploadId: string, offset: number, data: ByteSource, opts: { maxBytes: number }): Promise<number> {
    return this.staging.append(uploadId, offset, data, opts);
  }

  async completeUpload(uploadId: string, expected: { sha256: string; size: number }): Promise<BlobObject> {
    const path = await this.staging.check(uploadId, expected);
    const Key = this.key(expected.sha256);
    const Bucket = this.cfg.bucket;
    const partBytes = Math.max(PART_BYTES, Math.ceil(expected.size / MAX_PARTS));
    if (expected.size <= partBytes) {
      await this.client.send(new PutObjectCommand({ Bucket, Key, Body: createReadStream(path), ContentLength: expected.size }));
    } else {
      const { UploadId } = await this.client.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      try {
        const parts: { PartNumber: number; ETag: string }[] = [];
        for (let start = 0, n = 1; start < expected.size; start += partBytes, n++) {
          const length = Math.min(partBytes, expected.size - start);
          const body = createReadStream(path, { start, end: start + length - 1 });
          const res = await this.client.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: n, Body: body, ContentLength: length }));
          parts.push({ PartNumber: n, ETag: res.ETag ?? '' });
        }
        await this.client.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: parts } }));
      } catch (err) {
        await this.client.send(new AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
        throw err;
      }
    }
    await this.staging.discard(uploadId);
    return (await this.stat(expected.sha256)) ?? { sha256: expected.sha256, size: expected.size, modifiedAt: Date.now() };
  }

  abortUpload(uploadId: string): Promise<void> {
    return this.staging.discard(uploadId);
  }

  async open(sha256: string, range?: ByteRange): Promise<ByteSource> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(sha256), ...(range ? { Range: `bytes=${range.start}-${range.end - 1}` } : {}) }));
      return res.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) throw new GpuxError('NOT_FOUND', `no blob ${sha256}`, { cause: err });
      throw err;
    }
  }

  async stat(sha256: string): Promise<BlobObject | undefined> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(sha256) }));
      return { sha256, size: Number(res.ContentLength ?? 0), modifiedAt: res.LastModified?.getTime() ?? 0 };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(sha256: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.cfg.bucket, Key: this.key(sha256) }));
  }

  /** ListObjects (v1) with a marker: keys sort as their sha256 (the shard is its prefix), and every S3 server has it. */
  async list(q: { after?: string; limit: number }): Promise<BlobObject[]> {
    const res = await this.client.send(
      new ListObjectsCommand({ Bucket: this.cfg.bucket, Prefix: this.cfg.prefix, MaxKeys: Math.min(1000, q.limit), ...(q.after ? { Marker: this.key(q.after) } : {}) }),
    );
    const out: BlobObject[] = [];
    for (const o of res.Contents ?? []) {
      const sha256 = o.Key?.slice(this.cfg.prefix.length + 3) ?? '';
      if (isSha256Hex(sha256) && o.Key === this.key(sha256)) out.push({ sha256, size: Number(o.Size ?? 0), modifiedAt: o.LastModified?.getTime() ?? 0 });
    }
    return out;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}
