/**
 * Output uploads (issue 13): the files of an attempt not returned inline go to the blob store (owned by the job's
 * buyer) before the result is reported. Each file: open an upload (node-signed), then PUT chunks streamed from the
 * file with the upload's capability token; after a cut, ask the server its offset and go on from there. At most
 * UPLOAD_PARALLEL files at once. A file that cannot be uploaded is logged and left out: the result is reported
 * anyway (its digests still commit to the outputs; the buyer sees the file without `blob: true`).
 */
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '@gpux/core';
import type { AgentUploadResponse, OutputFile } from '@gpux/protocol';
import { CoordinatorApiError, type CoordinatorClient } from '../coordinator-client.js';
import { sleep } from '../loop/backoff.js';
import { DataPlaneError, isTransient } from './download.js';

export const UPLOAD_PARALLEL = 2;

export interface UploadOptions {
  signal: AbortSignal;
  logger: Logger;
  /** Consecutive failures without progress before a file is given up. Default 5. */
  retries?: number;
  /** First wait after a failure; doubles. Default 500 ms. */
  retryDelayMs?: number;
  /** Largest chunk sent, at most the server's chunkBytes. Default the server's. */
  chunkBytes?: number;
}

export interface UploadSummary {
  uploaded: string[];
  failed: { path: string; error: string }[];
  /** Encrypted jobs: the outputs as reported (ciphertext digests, `encrypted` of the plaintext), in place of the collected ones. */
  outputs?: OutputFile[];
  /** Encrypted jobs: an output could not be encrypted at all; the attempt fails with this. */
  error?: string;
}

/** Uploads every output without inline content from `outputsDir`. Never throws (failures are in the summary). */
export async function uploadOutputs(client: CoordinatorClient, attemptId: string, outputsDir: string, outputs: readonly OutputFile[], opts: UploadOptions): Promise<UploadSummary> {
  const queue = outputs.filter((f) => f.content === undefined);
  const summary: UploadSummary = { uploaded: [], failed: [] };
  const worker = async () => {
    for (let f = queue.shift(); f; f = queue.shift()) {
      if (opts.signal.aborted) {
        summary.failed.push({ path: f.path, error: 'the attempt stopped' });
        continue;
      }
      try {
        await uploadOne(client, attemptId, join(outputsDir, ...f.path.split('/')), f, opts);
        summary.uploaded.push(f.path);
      } catch (e) {
        const error = (e as Error).message;
        summary.failed.push({ path: f.path, error });
        opts.logger.warn({ path: f.path, size: f.size, err: error }, 'could not upload an output file; it is reported without its bytes');
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_PARALLEL, queue.length) }, worker));
  return summary;
}

function uploadOne(client: CoordinatorClient, attemptId: string, abs: string, f: OutputFile, opts: UploadOptions): Promise<void> {
  return uploadFile(client, (signal) => client.createOutputUpload(attemptId, { path: f.path, sha256: f.sha256, size: f.size }, signal), abs, f.size, f.path, opts);
}

/** One file of `size` bytes at `abs`: `begin` opens its upload (an output or a checkpoint); then chunks, resumed after a cut. Throws on failure. */
export async function uploadFile(
  client: CoordinatorClient,
  begin: (signal: AbortSignal) => Promise<AgentUploadResponse>,
  abs: string,
  size: number,
  what: string,
  opts: UploadOptions,
): Promise<void> {
  const started = await retrying(() => begin(opts.signal), opts);
  if (started.uploadToken === null || started.blob || started.uploadId === null) return; // already stored
  const { uploadId, uploadToken: token } = started;
  const chunk = Math.max(1, Math.min(opts.chunkBytes ?? started.chunkBytes, started.chunkBytes));
  let offset = started.offset;
  let failures = 0;
  for (;;) {
    const before = offset;
    try {
      const length = Math.min(chunk, size - offset);
      const body = length > 0 ? createReadStream(abs, { start: offset, end: offset + length - 1, highWaterMark: 1 << 20 }) : emptyBody();
      const r = await client.appendUpload(uploadId, token, offset, length, body, opts.signal);
      offset = r.offset;
      if (r.blob) return;
      if (offset <= before) throw new DataPlaneError(`the upload of ${what} made no progress at offset ${offset}`);
      failures = 0;
    } catch (e) {
      const conflict = e instanceof CoordinatorApiError && e.status === 409;
      if (opts.signal.aborted || (!conflict && !isTransient(e))) throw e;
      if (++failures > (opts.retries ?? 5)) throw e;
      if (!conflict) await sleep((opts.retryDelayMs ?? 500) * 2 ** (failures - 1), opts.signal);
      // Where the server stands: a cut chunk may have landed in part, or in full.
      const status = await retrying(() => client.uploadStatus(uploadId, token, opts.signal), opts);
      if (status.blob) return;
      offset = status.offset;
    }
  }
}

async function* emptyBody(): AsyncIterable<Uint8Array> {}

async function retrying<T>(fn: () => Promise<T>, opts: UploadOptions): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (opts.signal.aborted || !isTransient(e) || i >= (opts.retries ?? 5)) throw e;
      await sleep((opts.retryDelayMs ?? 500) * 2 ** i, opts.signal);
    }
  }
}
