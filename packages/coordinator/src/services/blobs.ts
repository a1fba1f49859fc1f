/**
 * The blob service (issue 13): resumable uploads checked against the account's quota and open-upload cap,
 * chunks streamed to the backend (one at a time per upload, a few transfers at a time per account), ranged
 * downloads, listing and deletion. A blob is visible only to the accounts that uploaded it; the same bytes are
 * stored once. Metadata: the BlobsPort; bytes: the BlobBackend (filesystem or S3, from the config).
 */
import { type BlobBackend, type BlobRecord, type BlobUploadRecord, type ByteRange, type ByteSource, GpuxError, isSha256Hex, newId } from '@gpux/core';
import type { BlobUploadResponse, BlobView, ListBlobsResponse } from '@gpux/protocol';
import { openBlobBackend } from '../blobs/open-backend.js';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { jobBlobRefs, type LiveJobBlobRefs } from './blob-gc.js';
import { RegisterRate } from './register-rate.js';
import { RegisterRateLimited } from './register.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type BlobsDeps = Needs<'clock' | 'config' | 'random' | 'store'>;

export interface BlobDownload {
  status: 200 | 206;
  size: number;
  range: ByteRange | null;
  stream: ByteSource;
  /** Call once the response is over (sent or cut): frees the account's transfer slot. */
  done(): void;
}

/** A Range header → the range to serve; null: serve everything (absent, several ranges, or not bytes=). RFC 9110 §14. */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    return size === 0 ? 'unsatisfiable' : { start: Math.max(0, size - suffix), end: size };
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || last < start) return 'unsatisfiable';
  return { start, end: last + 1 };
}

export class BlobService {
  private backendP: Promise<BlobBackend> | undefined;
  private readonly inFlight = new Set<string>();
  private readonly transfers = new Map<string, number>();
  private readonly begins: RegisterRate;
  /** Which holds live jobs reference (GC keeps them): the job_blobs references (tests may replace it). */
  liveJobBlobRefs: LiveJobBlobRefs;

  constructor(
    private readonly rt: BlobsDeps,
    backend?: BlobBackend,
  ) {
    if (backend) this.backendP = Promise.resolve(backend);
    this.begins = new RegisterRate(rt.config.blobs.uploadsPerMinute);
    this.liveJobBlobRefs = jobBlobRefs(rt.store, rt.clock, { disputeWindowMs: rt.config.disputeWindowSeconds * 1000, outputRetentionMs: rt.config.blobs.retentionMs });
  }

  get busyUploads(): ReadonlySet<string> {
    return this.inFlight;
  }

  backend(): Promise<BlobBackend> {
    this.backendP ??= openBlobBackend(this.rt.config.blobs);
    return this.backendP;
  }

  async close(): Promise<void> {
    if (this.backendP) await (await this.backendP).close();
  }

  view(b: BlobRecord): BlobView {
    return { sha256: b.sha256, size: b.size, createdAt: b.createdAt, lastReferencedAt: b.lastReferencedAt, expiresAt: b.lastReferencedAt + this.rt.config.blobs.retentionMs };
  }

  private checkSha(sha256: string): void {
    if (!isSha256Hex(sha256)) throw new GpuxError('REQUEST_INVALID', `"${sha256.slice(0, 80)}" is not a blob name: a blob is named by the sha256 of its bytes, 64 lowercase hex characters`);
  }

  /** A slot among the account's (or, for the node data plane, `node:<id>`'s) concurrent transfers; the returned function frees it (once). */
  takeTransfer(accountId: string): () => void {
    const n = this.transfers.get(accountId) ?? 0;
    const max = this.rt.config.blobs.transfersPerAccount;
    if (n >= max) throw new GpuxError('LIMIT_EXCEEDED', `account ${accountId} already has ${n} blob transfers in flight, the most allowed (GPUX_BLOB_TRANSFERS_PER_ACCOUNT): wait for one to finish`);
    this.transfers.set(accountId, n + 1);
    let freed = false;
    return () => {
      if (freed) return;
      freed = true;
      const left = (this.transfers.get(accountId) ?? 1) - 1;
      if (left <= 0) this.transfers.delete(accountId);
      else this.transfers.set(accountId, left);
    };
  }

  async begin(p: Principal, body: { sha256: string; size: number }): Promise<BlobUploadResponse> {
    const cfg = this.rt.config.blobs;
    const now = this.rt.clock.now();
    const wait = this.begins.take(p.accountId, now);
    if (wait > 0) throw new RegisterRateLimited(`too many blob uploads opened by account ${p.accountId}: at most ${cfg.uploadsPerMinute} per minute; retry in ${Math.ceil(wait / 1000)} s`, wait);
    const upload = { id: newId('upl', now, this.rt.random), ownerId: p.accountId, sha256: body.sha256, size: body.size, received: 0, createdAt: now, expiresAt: now + cfg.uploadTtlMs };
    const r = await this.rt.store.beginBlobUpload({ upload, quotaBytes: cfg.quotaBytes, maxOpenUploads: cfg.maxOpenUploads });
    if ('blob' in r) return { uploadId: null, sha256: body.sha256, size: r.blob.size, offset: r.blob.size, expiresAt: null, chunkBytes: cfg.chunkBytes, blob: this.view(r.blob) };
    try {
      await (await this.backend()).beginUpload(upload.id);
    } catch (err) {
      await this.rt.store.deleteBlobUpload(upload.id);
      throw err;
    }
    return { uploadId: upload.id, sha256: upload.sha256, size: upload.size, offset: 0, expiresAt: upload.expiresAt, chunkBytes: cfg.chunkBytes, blob: null };
  }

  private async ownUpload(p: Principal, uploadId: string) {
    const up = await this.rt.store.getBlobUpload(uploadId);
    // Someone else's upload reads as missing, never as forbidden.
    if (!up || up.ownerId !== p.accountId) throw new GpuxError('NOT_FOUND', `no upload ${uploadId}: it finished (see gpux blob ls), expired, was aborted or was never started`);
    return up;
  }

  async status(p: Principal, uploadId: string): Promise<BlobUploadResponse> {
    return this.statusOf(await this.ownUpload(p, uploadId));
  }

  /** Where an upload the caller may write stands (the node data plane checks its token first). */
  async statusOf(up: BlobUploadRecord): Promise<BlobUploadResponse> {
    const uploadId = up.id;
    const offset = (await (await this.backend()).stagedBytes(uploadId)) ?? 0;
    return { uploadId, sha256: up.sha256, size: up.size, offset, expiresAt: up.expiresAt, chunkBytes: this.rt.config.blobs.chunkBytes, blob: null };
  }

  /**
   * Append a chunk at `offset`; when the upload then holds all its bytes, complete it (hash checked). `onOffset`
   * is told the server's offset when the client's is wrong (the route sends it as Upload-Offset).
   */
  async append(p: Principal, uploadId: string, offset: number, data: ByteSource, declaredLength: number | undefined, onOffset: (offset: number) => void): Promise<BlobUploadResponse> {
    const up = await this.ownUpload(p, uploadId);
    return this.appendTo(up, p.accountId, offset, data, declaredLength, onOffset);
  }

  /**
   * append() for an upload the caller may write: `transferKey` names whose transfer slots the chunk takes;
   * `finish` turns the completed upload's row into a hold (the node data plane also records it for its attempt).
   */
  async appendTo(
    up: BlobUploadRecord,
    transferKey: string,
    offset: number,
    data: ByteSource,
    declaredLength: number | undefined,
    onOffset: (offset: number) => void,
    finish: (uploadId: string, now: number) => Promise<BlobRecord | undefined> = (id, now) => this.rt.store.finishBlobUpload(id, now),
  ): Promise<BlobUploadResponse> {
    const cfg = this.rt.config.blobs;
    const uploadId = up.id;
    const backend = await this.backend();
    if (this.inFlight.has(uploadId)) throw new GpuxError('CONFLICT', `a chunk of upload ${uploadId} is being received already: send one chunk at a time`);
    const staged = await backend.stagedBytes(uploadId);
    if (staged === undefined) throw new GpuxError('NOT_FOUND', `upload ${uploadId} has no staged bytes on this coordinator: abort it and start again`);
    if (staged !== offset) {
      onOffset(staged);
      throw new GpuxError('CONFLICT', `Upload-Offset is ${offset} but the server has ${staged} bytes of this upload: send the bytes from offset ${staged}`);
    }
    const room = Math.min(cfg.chunkBytes, up.size - offset);
    if (declaredLength !== undefined && declaredLength > room) {
      throw new GpuxError('BODY_TOO_LARGE', `this chunk has ${declaredLength} bytes but at most ${room} are accepted here (chunks of at most ${cfg.chunkBytes} bytes, and the upload declared ${up.size} in all)`);
    }
    const free = this.takeTransfer(transferKey);
    this.inFlight.add(uploadId);
    try {
      const now = this.rt.clock.now();
      let reached: number;
      try {
        reached = await backend.appendUpload(uploadId, offset, data, { maxBytes: room });
      } finally {
        // Recorded even when the chunk was cut: what arrived stays staged and counts.
        const have = (await backend.stagedBytes(uploadId)) ?? offset;
        await this.rt.store.recordBlobUploadProgress(uploadId, have, now + cfg.uploadTtlMs);
      }
      if (reached < up.size) return { uploadId, sha256: up.sha256, size: up.size, offset: reached, expiresAt: now + cfg.uploadTtlMs, chunkBytes: cfg.chunkBytes, blob: null };
      try {
        await backend.completeUpload(uploadId, { sha256: up.sha256, size: up.size });
      } catch (err) {
        if (err instanceof GpuxError && err.code === 'REQUEST_INVALID') await this.rt.store.deleteBlobUpload(uploadId);
        throw err;
      }
      const blob = await finish(uploadId, this.rt.clock.now());
      if (!blob) throw new GpuxError('NOT_FOUND', `upload ${uploadId} was dropped while completing: start again`);
      return { uploadId, sha256: up.sha256, size: up.size, offset: up.size, expiresAt: null, chunkBytes: cfg.chunkBytes, blob: this.view(blob) };
    } finally {
      this.inFlight.delete(uploadId);
      free();
    }
  }

  async abort(p: Principal, uploadId: string): Promise<{ aborted: boolean }> {
    await this.ownUpload(p, uploadId);
    if (this.inFlight.has(uploadId)) throw new GpuxError('CONFLICT', `a chunk of upload ${uploadId} is being received: abort after it`);
    await (await this.backend()).abortUpload(uploadId);
    await this.rt.store.deleteBlobUpload(uploadId);
    return { aborted: true };
  }

  async list(p: Principal, q: { limit: number; cursor?: string | undefined }): Promise<ListBlobsResponse> {
    const page = await this.rt.store.listBlobs({ ownerId: p.accountId, limit: q.limit, ...(q.cursor ? { cursor: q.cursor } : {}) });
    const usage = await this.rt.store.blobUsage(p.accountId);
    return { blobs: page.items.map((b) => this.view(b)), nextCursor: page.nextCursor, usage: { ...usage, quotaBytes: this.rt.config.blobs.quotaBytes } };
  }

  private async ownBlob(p: Principal, sha256: string): Promise<BlobRecord> {
    this.checkSha(sha256);
    const b = await this.rt.store.getBlob(p.accountId, sha256);
    if (!b) throw new GpuxError('NOT_FOUND', `you hold no blob ${sha256}: upload it with \`gpux blob put FILE\` (blobs unused for the retention period are deleted)`);
    return b;
  }

  async info(p: Principal, sha256: string): Promise<BlobView> {
    return this.view(await this.ownBlob(p, sha256));
  }

  /** The blob's bytes (or the Range asked for); 'unsatisfiable' with the size for a 416. */
  async download(p: Principal, sha256: string, rangeHeader: string | undefined): Promise<BlobDownload | { unsatisfiable: true; size: number }> {
    const b = await this.ownBlob(p, sha256);
    const range = parseRange(rangeHeader, b.size);
    if (range === 'unsatisfiable') return { unsatisfiable: true, size: b.size };
    const free = this.takeTransfer(p.accountId);
    try {
      const stream = await (await this.backend()).open(sha256, range ?? undefined);
      await this.rt.store.touchBlob(p.accountId, sha256, this.rt.clock.now());
      return { status: range ? 206 : 200, size: b.size, range, stream, done: free };
    } catch (err) {
      free();
      throw err;
    }
  }

  async remove(p: Principal, sha256: string): Promise<{ deleted: boolean }> {
    this.checkSha(sha256);
    return { deleted: await this.rt.store.deleteBlob(p.accountId, sha256) };
  }
}
