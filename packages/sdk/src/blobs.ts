/**
 * Blobs from the SDK (issue 13): content-addressed uploads streamed from a file in chunks, resumed after a cut
 * (the server says its offset), and downloads streamed to a file with their sha256 checked (a cut download
 * resumes with a Range request). Neither side ever holds a whole blob in memory. `blobsOf(client)` uses the
 * client's URL, token, TLS settings and fetch.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { type BlobUploadResponse, type BlobView, CONTROL_CHARS, type OutputFile, outputRootDigest, UPLOAD_OFFSET_HEADER } from '@gpux/protocol';
import type { GpuxClient } from './client.js';
import { GpuxApiError, GpuxClientError, GpuxConnectionError } from './errors.js';
import { FAILOVER_STATUSES, moveOn } from './failover.js';
import { apiError, buildPath, callRoute, guardToken, type RouteResponse, type TransportConfig } from './transport.js';
import { ROUTES } from '@gpux/protocol';
import { streamedBody } from '@gpux/protocol/tls-fetch';

export interface BlobTransferOptions {
  signal?: AbortSignal;
  /** Tries of one chunk or of the download after a connection error or a 5xx, resuming each time. Default 5. */
  retries?: number;
  /** First wait between tries; doubles. Default 500 ms. */
  retryDelayMs?: number;
  /** Bytes done so far, after every chunk (uploads) or often (downloads). */
  onProgress?: (done: number, total: number) => void;
}

export interface UploadFileOptions extends BlobTransferOptions {
  /** Bytes per PUT, at most the server's chunkBytes. Default the server's. */
  chunkBytes?: number;
}

/** The sha256 hex and size of a file, read as a stream. */
export async function hashFile(path: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 256 * 1024 })) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { sha256: hash.digest('hex'), size };
}

const retryable = (err: unknown) => err instanceof GpuxConnectionError || (err instanceof GpuxApiError && err.status >= 500);

export class GpuxBlobs {
  constructor(private readonly cfg: TransportConfig) {}

  private sig(signal: AbortSignal | undefined) {
    return signal ? { signal } : {};
  }

  createUpload(sha256: string, size: number, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'createBlobUpload'>> {
    return callRoute(this.cfg, 'createBlobUpload', { body: { sha256, size }, ...this.sig(opts.signal) });
  }

  uploadStatus(uploadId: string, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'getBlobUpload'>> {
    return callRoute(this.cfg, 'getBlobUpload', { params: { id: uploadId }, ...this.sig(opts.signal) });
  }

  abortUpload(uploadId: string, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'abortBlobUpload'>> {
    return callRoute(this.cfg, 'abortBlobUpload', { params: { id: uploadId }, ...this.sig(opts.signal) });
  }

  list(q: { limit?: number; cursor?: string } = {}, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'listBlobs'>> {
    return callRoute(this.cfg, 'listBlobs', { query: { limit: q.limit, cursor: q.cursor }, ...this.sig(opts.signal) });
  }

  info(sha256: string, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'getBlobInfo'>> {
    return callRoute(this.cfg, 'getBlobInfo', { params: { id: sha256 }, ...this.sig(opts.signal) });
  }

  delete(sha256: string, opts: { signal?: AbortSignal } = {}): Promise<RouteResponse<'deleteBlob'>> {
    return callRoute(this.cfg, 'deleteBlob', { params: { id: sha256 }, ...this.sig(opts.signal) });
  }

  /** One raw call whose body or answer is bytes: the client's auth and transport checks, errors as GpuxApiError. */
  private async raw(method: 'GET' | 'PUT', path: string, init: { headers?: Record<string, string>; body?: Readable; signal?: AbortSignal }): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.cfg.token) {
      guardToken(this.cfg);
      headers.authorization = `Bearer ${this.cfg.token}`;
    }
    const req: RequestInit & { duplex?: 'half' } = { method, headers, ...this.sig(init.signal), ...(init.body ? streamedBody(init.body) : {}) };
    let res: Response;
    const base = this.cfg.baseUrl;
    try {
      res = await this.cfg.fetch(base + path, req);
    } catch (err) {
      if (init.signal?.aborted) throw init.signal.reason;
      // A streamed body cannot be sent twice: no failover inside this call, but the transfer's own retry (which
      // resumes from the server's offset) goes to the next coordinator URL.
      moveOn(this.cfg, base);
      throw new GpuxConnectionError(base, `cannot reach the coordinator at ${base} (${(err as Error).message})`, { cause: err, reason: (err as Error).message });
    }
    if (FAILOVER_STATUSES.includes(res.status)) moveOn(this.cfg, base);
    if (res.status >= 200 && res.status < 300) return res;
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const err = apiError(res.status, json, text, `${method} ${path}`);
    (err as GpuxApiError & { serverOffset?: number }).serverOffset = Number(res.headers.get(UPLOAD_OFFSET_HEADER) ?? Number.NaN);
    throw err;
  }

  /** Send bytes [offset, offset + length) of the file as one chunk. */
  async appendChunk(uploadId: string, offset: number, file: string, length: number, opts: { signal?: AbortSignal } = {}): Promise<BlobUploadResponse> {
    const body = length > 0 ? createReadStream(file, { start: offset, end: offset + length - 1, highWaterMark: 1 << 20 }) : Readable.from([]);
    const res = await this.raw('PUT', buildPath(ROUTES.appendBlobUpload.path, { id: uploadId }), {
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(length), [UPLOAD_OFFSET_HEADER]: String(offset) },
      body,
      ...this.sig(opts.signal),
    });
    const parsed = ROUTES.appendBlobUpload.response.safeParse(await res.json());
    if (!parsed.success) throw new GpuxClientError('the coordinator answered an upload chunk with a body that is not an upload: is it a different gpux version?');
    return parsed.data;
  }

  /**
   * Upload a file as a blob: hash it (one streaming read), open an upload (nothing to send if you already hold
   * it), send chunks; after a cut, ask the server where it stands and go on from there. Returns the blob.
   */
  async uploadFile(file: string, opts: UploadFileOptions = {}): Promise<BlobView> {
    const { sha256, size } = await hashFile(file);
    const started = await this.createUpload(sha256, size, opts);
    if (started.blob) return started.blob;
    const uploadId = started.uploadId as string;
    const chunk = Math.max(1, Math.min(opts.chunkBytes ?? started.chunkBytes, started.chunkBytes));
    let offset = started.offset;
    let failures = 0;
    for (;;) {
      try {
        const length = Math.min(chunk, size - offset);
        const r = await this.appendChunk(uploadId, offset, file, length, opts);
        offset = r.offset;
        failures = 0;
        opts.onProgress?.(offset, size);
        if (r.blob) return r.blob;
      } catch (err) {
        const conflict = err instanceof GpuxApiError && err.status === 409;
        if (!conflict && !retryable(err)) throw err;
        if (++failures > (opts.retries ?? 5)) throw err;
        if (!conflict) await sleep((opts.retryDelayMs ?? 500) * 2 ** (failures - 1), undefined, this.sig(opts.signal));
        offset = await this.resumeOffset(uploadId, sha256, opts);
        if (offset < 0) return this.info(sha256, opts);
      }
    }
  }

  /** Where to go on from: the server's offset; -1 when the upload already completed (its last answer was lost). */
  private async resumeOffset(uploadId: string, sha256: string, opts: BlobTransferOptions): Promise<number> {
    for (let i = 0; ; i++) {
      try {
        return (await this.uploadStatus(uploadId, opts)).offset;
      } catch (err) {
        if (err instanceof GpuxApiError && err.status === 404) {
          await this.info(sha256, opts); // throws NOT_FOUND when the upload is truly gone
          return -1;
        }
        // The chunk that was cut may still be landing on the server: ask again shortly.
        if (!(err instanceof GpuxApiError && err.status === 409) && !retryable(err)) throw err;
        if (i >= (opts.retries ?? 5)) throw err;
        await sleep((opts.retryDelayMs ?? 500) * 2 ** i, undefined, this.sig(opts.signal));
      }
    }
  }

  /** The blob's bytes as a web stream (or a range: end exclusive). */
  async open(sha256: string, range?: { start: number; end?: number }, opts: { signal?: AbortSignal } = {}): Promise<Response> {
    const headers: Record<string, string> = {};
    if (range) headers.range = `bytes=${range.start}-${range.end === undefined ? '' : range.end - 1}`;
    return this.raw('GET', buildPath(ROUTES.downloadBlob.path, { id: sha256 }), { headers, ...this.sig(opts.signal) });
  }

  /**
   * Download a blob to `file`: bytes go to `file.partial` and are hashed as they come; a cut download resumes
   * with a Range request (the partial file is hashed again first); the file appears only once its sha256 matches.
   */
  async downloadToFile(sha256: string, file: string, opts: BlobTransferOptions = {}): Promise<{ sha256: string; size: number }> {
    const partial = `${file}.partial`;
    await rm(partial, { force: true });
    let failures = 0;
    for (;;) {
      const have = (await stat(partial).catch(() => undefined))?.size ?? 0;
      try {
        const res = await this.open(sha256, have > 0 ? { start: have } : undefined, opts);
        if (have > 0 && res.status !== 206) throw new GpuxClientError('the coordinator ignored the Range of a resumed download');
        const total = Number(/\/(\d+)$/.exec(res.headers.get('content-range') ?? '')?.[1] ?? res.headers.get('content-length') ?? 0);
        let done = have;
        const body = Readable.fromWeb(res.body as unknown as import('node:stream/web').ReadableStream<Uint8Array>);
        body.on('data', (c: Buffer) => {
          done += c.length;
          opts.onProgress?.(done, total);
        });
        await pipeline(body, createWriteStream(partial, { flags: have > 0 ? 'a' : 'w', mode: 0o600 }));
        break;
      } catch (err) {
        const cut = retryable(err) || (err instanceof Error && !(err instanceof GpuxClientError) && !opts.signal?.aborted);
        if (!cut || ++failures > (opts.retries ?? 5)) {
          await rm(partial, { force: true });
          throw err;
        }
        await sleep((opts.retryDelayMs ?? 500) * 2 ** (failures - 1), undefined, this.sig(opts.signal));
      }
    }
    const got = await hashFile(partial);
    if (got.sha256 !== sha256) {
      await rm(partial, { force: true });
      throw new GpuxClientError(`the downloaded bytes hash to sha256 ${got.sha256}, not ${sha256}: nothing was written to ${file}; try again`);
    }
    const fh = await open(partial, 'r');
    await fh.sync();
    await fh.close();
    await rename(partial, file);
    return got;
  }
}

/** Blobs through `client`: the same URL, token, TLS settings and fetch. */
export function blobsOf(client: GpuxClient): GpuxBlobs {
  // The transport is protected in the client class; it is read here so the two never disagree.
  return new GpuxBlobs((client as unknown as { cfg: TransportConfig }).cfg);
}

export interface DownloadedJobOutputs {
  /** Files written, each with its sha256 checked (inline ones decoded, blob ones streamed from the blob store). */
  written: { path: string; size: number; target: string; from: 'inline' | 'blob' }[];
  /** Files reported without content and not in the blob store (an upload the node could not finish): not written. */
  missing: string[];
}

/**
 * Write every output file of a finished job into `dir` (issue 13): inline ones from the result, blob ones
 * (`blob: true`) streamed from GET /v1/blobs/:sha256 with their sha256 checked before the file appears. The output
 * list must match the result's output digest; no path may leave `dir` (nor through a symlink inside it).
 */
export async function downloadJobOutputs(client: GpuxClient, jobId: string, dir: string, opts: BlobTransferOptions = {}): Promise<DownloadedJobOutputs> {
  const res = await client.jobResult(jobId, opts.signal ? { signal: opts.signal } : {});
  if (res.outputDigest !== null && outputRootDigest(res.outputs) !== res.outputDigest) {
    throw new GpuxClientError(`the output list of job ${jobId} does not match its output digest ${res.outputDigest}`);
  }
  await mkdir(dir, { recursive: true });
  const root = await realpath(resolve(dir));
  const blobs = blobsOf(client);
  const out: DownloadedJobOutputs = { written: [], missing: [] };
  for (const file of res.outputs) {
    if (file.content === undefined && file.blob !== true) {
      out.missing.push(file.path);
      continue;
    }
    const target = await outputTarget(root, file.path);
    if (file.content !== undefined) {
      const data = Buffer.from(file.content, 'base64');
      const got = createHash('sha256').update(data).digest('hex');
      if (got !== file.sha256 || data.length !== file.size) {
        throw new GpuxClientError(`output ${JSON.stringify(file.path)} is corrupt: expected ${file.size} bytes with sha256 ${file.sha256}, got ${data.length} bytes with sha256 ${got}`);
      }
      await writeFile(target, data);
      out.written.push({ path: file.path, size: data.length, target, from: 'inline' });
    } else {
      await downloadOutputBlob(blobs, file, target, opts);
      out.written.push({ path: file.path, size: file.size, target, from: 'blob' });
    }
  }
  return out;
}

/** One blob output to `target`: its sha256 (checked by downloadToFile) and its size must be the reported ones. */
export async function downloadOutputBlob(blobs: GpuxBlobs, file: OutputFile, target: string, opts: BlobTransferOptions = {}): Promise<void> {
  const got = await blobs.downloadToFile(file.sha256, target, opts);
  if (got.size !== file.size) {
    await rm(target, { force: true });
    throw new GpuxClientError(`output ${JSON.stringify(file.path)}: the blob has ${got.size} bytes, the result says ${file.size}; nothing was written`);
  }
}

/** Where an output lands inside `root` (a real path): never outside, never through a symlink. */
async function outputTarget(root: string, path: string): Promise<string> {
  const target = resolve(root, path);
  const rel = relative(root, target);
  if (CONTROL_CHARS.test(path) || path.includes('\0') || isAbsolute(path) || rel === '' || rel.startsWith(`..${sep}`) || rel === '..' || isAbsolute(rel)) {
    throw new GpuxClientError(`refusing to write output ${JSON.stringify(path)}: it would land outside ${root}`);
  }
  await mkdir(dirname(target), { recursive: true });
  const parent = await realpath(dirname(target));
  if (parent !== root && !parent.startsWith(root + sep)) throw new GpuxClientError(`refusing to write output ${JSON.stringify(path)}: ${dirname(target)} leads outside ${root}`);
  if ((await lstat(target).catch(() => undefined))?.isSymbolicLink()) throw new GpuxClientError(`refusing to write output ${JSON.stringify(path)}: ${target} is a symbolic link`);
  return target;
}
