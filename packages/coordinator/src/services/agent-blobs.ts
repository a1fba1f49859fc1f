/**
 * The node data plane (issue 13): an attempt's node reads the blob inputs its job names and the checkpoint it
 * restarts from, and writes outputs and checkpoints into the blob store, owned by the job's buyer.
 *
 * Reads are node-signed and only while the attempt is assigned or running. Uploads open with a node-signed POST
 * answering a capability token (random 32 bytes, stored as its sha256, dead once the upload completes or the
 * attempt ends); chunks carry the token, and go through the buyer upload machinery (BlobService.appendTo).
 * Node uploads are bounded per attempt (GPUX_MAX_OUTPUT_BYTES, GPUX_MAX_UPLOADS_PER_ATTEMPT), not by the
 * buyer's quota: a job's outputs are never refused for the buyer's other blobs, and a node can add no more
 * than its attempt's bound to what the buyer holds. Transfers are bounded per node (`node:<id>` slots).
 */
import { timingSafeEqual } from 'node:crypto';
import { type AgentUploadKind, type AttemptRecord, type BlobUploadRecord, type ByteSource, GpuxError, isSha256Hex, type JobRecord, newId } from '@gpux/core';
import { type AgentUploadResponse, type BlobUploadResponse, isBlobInput, OUTPUT_UPLOAD_TOKEN_HEADER, sha256Hex } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { nodeAttempt } from './agent.js';
import { type BlobDownload, type BlobService, parseRange } from './blobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type AgentBlobsDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

/** Unfinished uploads one attempt may have at once. */
export const MAX_OPEN_UPLOADS_PER_ATTEMPT = 8;

const ACTIVE = new Set(['assigned', 'running']);

const badToken = (uploadId: string) =>
  new GpuxError(
    'UNAUTHORIZED',
    `upload ${uploadId}: no valid upload token in ${OUTPUT_UPLOAD_TOKEN_HEADER} (a token is good for its one upload until it completes): open the upload again with POST /v1/agent/attempts/:id/outputs or /checkpoints`,
  );

function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export class AgentBlobService {
  constructor(
    private readonly rt: AgentBlobsDeps,
    private readonly blobs: BlobService,
  ) {}

  /** The calling node's attempt, while it may still read and write (assigned or running). */
  private async activeAttempt(nodeId: string, attemptId: string): Promise<{ attempt: AttemptRecord; job: JobRecord }> {
    const attempt = await nodeAttempt(this.rt, nodeId, attemptId);
    if (!ACTIVE.has(attempt.state)) throw new GpuxError('GONE', `attempt ${attemptId} is ${attempt.state}: its blobs can be read and written only while it is assigned or running`);
    const job = await this.rt.store.getJob(attempt.jobId);
    if (!job) throw new GpuxError('ATTEMPT_NOT_FOUND', `no job ${attempt.jobId} for attempt ${attemptId}`);
    return { attempt, job };
  }

  /** Whose holds a job's blobs are: the buyer's, or for a check run (audit, referee) the checked job's buyer's. */
  private async ownerOf(job: JobRecord): Promise<string> {
    if (!job.checkOf) return job.buyerId;
    return (await this.rt.store.getJob(job.checkOf))?.buyerId ?? job.buyerId;
  }

  /** GET /v1/agent/attempts/:id/inputs/:sha256: a blob input of the attempt's job. */
  async input(nodeId: string, attemptId: string, sha256: string, rangeHeader: string | undefined): Promise<BlobDownload | { unsatisfiable: true; size: number }> {
    if (!isSha256Hex(sha256)) throw new GpuxError('REQUEST_INVALID', `"${sha256.slice(0, 80)}" is not a blob name: 64 lowercase hex characters`);
    const { job } = await this.activeAttempt(nodeId, attemptId);
    const input = (job.spec.inputs ?? []).find((f) => isBlobInput(f) && f.blob === sha256);
    if (!input || !isBlobInput(input)) throw new GpuxError('NOT_FOUND', `job ${job.id} has no blob input ${sha256}: a node reads only the blob inputs its attempt's job names`);
    return this.stream(nodeId, sha256, input.size, rangeHeader, await this.ownerOf(job));
  }

  /** GET /v1/agent/attempts/:id/checkpoint: the job's latest checkpoint (the one its assignment names). */
  async checkpoint(nodeId: string, attemptId: string, rangeHeader: string | undefined): Promise<BlobDownload | { unsatisfiable: true; size: number }> {
    const { job } = await this.activeAttempt(nodeId, attemptId);
    const cp = (await this.rt.store.latestCheckpoints([job.id])).get(job.id);
    if (!cp) throw new GpuxError('NOT_FOUND', `job ${job.id} has no checkpoint: start without one`);
    return this.stream(nodeId, cp.sha256, cp.size, rangeHeader, await this.ownerOf(job));
  }

  private async stream(nodeId: string, sha256: string, size: number, rangeHeader: string | undefined, owner: string): Promise<BlobDownload | { unsatisfiable: true; size: number }> {
    const range = parseRange(rangeHeader, size);
    if (range === 'unsatisfiable') return { unsatisfiable: true, size };
    const free = this.blobs.takeTransfer(`node:${nodeId}`);
    try {
      const stream = await (await this.blobs.backend()).open(sha256, range ?? undefined);
      // A job using the blob counts as a reference: retention starts again.
      await this.rt.store.touchBlob(owner, sha256, this.rt.clock.now());
      return { status: range ? 206 : 200, size, range, stream, done: free };
    } catch (err) {
      free();
      throw err;
    }
  }

  /** POST /v1/agent/attempts/:id/outputs and /checkpoints. */
  async begin(nodeId: string, attemptId: string, kind: AgentUploadKind, body: { path?: string; sha256: string; size: number }): Promise<AgentUploadResponse> {
    const cfg = this.rt.config.blobs;
    const { attempt, job } = await this.activeAttempt(nodeId, attemptId);
    const now = this.rt.clock.now();
    const token = Buffer.from(this.rt.random.bytes(32)).toString('base64url');
    const upload: BlobUploadRecord = { id: newId('upl', now, this.rt.random), ownerId: job.buyerId, sha256: body.sha256, size: body.size, received: 0, createdAt: now, expiresAt: now + cfg.uploadTtlMs };
    const r = await this.rt.store.beginAgentUpload({
      upload,
      attemptId: attempt.id,
      jobId: job.id,
      kind,
      path: body.path ?? null,
      tokenHash: sha256Hex(token),
      maxOutputBytes: cfg.maxOutputBytes,
      maxUploads: cfg.maxUploadsPerAttempt,
      maxOpenUploads: MAX_OPEN_UPLOADS_PER_ATTEMPT,
    });
    if ('blob' in r) return { uploadId: null, sha256: body.sha256, size: body.size, offset: body.size, expiresAt: null, chunkBytes: cfg.chunkBytes, blob: this.blobs.view(r.blob), uploadToken: null };
    try {
      await (await this.blobs.backend()).beginUpload(upload.id);
    } catch (err) {
      await this.rt.store.deleteBlobUpload(upload.id);
      throw err;
    }
    return { uploadId: upload.id, sha256: upload.sha256, size: upload.size, offset: 0, expiresAt: upload.expiresAt, chunkBytes: cfg.chunkBytes, blob: null, uploadToken: token };
  }

  /** The upload this token opens, while its attempt is active. A wrong or dead token is 401 (counted per address). */
  private async byToken(uploadId: string, token: string | undefined): Promise<{ up: BlobUploadRecord; nodeId: string }> {
    const au = await this.rt.store.getAgentUpload(uploadId);
    if (!token || !au || au.tokenHash === null || !sameHash(sha256Hex(token), au.tokenHash)) throw badToken(uploadId);
    const attempt = await this.rt.store.getAttempt(au.attemptId);
    if (!attempt || !ACTIVE.has(attempt.state)) throw new GpuxError('GONE', `attempt ${au.attemptId} is ${attempt?.state ?? 'gone'}: its uploads are closed`);
    const up = await this.rt.store.getBlobUpload(uploadId);
    if (!up) throw new GpuxError('NOT_FOUND', `upload ${uploadId} expired or failed its digest check: open it again`);
    return { up, nodeId: attempt.nodeId };
  }

  /** PUT /v1/agent/uploads/:id. */
  async append(uploadId: string, token: string | undefined, offset: number, data: ByteSource, declaredLength: number | undefined, onOffset: (offset: number) => void): Promise<BlobUploadResponse> {
    const { up, nodeId } = await this.byToken(uploadId, token);
    return this.blobs.appendTo(up, `node:${nodeId}`, offset, data, declaredLength, onOffset, (id, now) => this.rt.store.finishAgentUpload(id, now));
  }

  /** GET /v1/agent/uploads/:id. */
  async status(uploadId: string, token: string | undefined): Promise<BlobUploadResponse> {
    const { up } = await this.byToken(uploadId, token);
    return this.blobs.statusOf(up);
  }
}
