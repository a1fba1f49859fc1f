/**
 * Outputs of an encrypted job (issue 13): every file, however small, is encrypted under the attempt's output key
 * to a temp file beside the outputs dir (out of the job's reach), hashed, and uploaded as a blob: the coordinator
 * never gets an output inline, nor any plaintext. Each is reported with the ciphertext's sha256 and size and
 * `encrypted` {sha256, size} of its plaintext (which the result's outputDigest, and so the commitment, covers).
 */
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { OutputFile } from '@gpux/protocol';
import type { CoordinatorClient } from '../coordinator-client.js';
import type { AttemptE2e } from '../e2e/attempt-e2e.js';
import { UPLOAD_PARALLEL, type UploadOptions, type UploadSummary, uploadFile } from './upload.js';

export async function uploadEncryptedOutputs(
  client: CoordinatorClient,
  attemptId: string,
  e2e: AttemptE2e,
  outputsDir: string,
  outputs: readonly OutputFile[],
  opts: UploadOptions,
): Promise<UploadSummary> {
  const sealed: OutputFile[] = new Array(outputs.length);
  const summary: UploadSummary = { uploaded: [], failed: [], outputs: sealed };
  const queue = outputs.map((f, i) => ({ f, i }));
  const worker = async () => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const { f, i } = next;
      const temp = join(dirname(outputsDir), `sealed-output-${i}.gpxe`);
      try {
        const ct = await e2e.sealOutput(join(outputsDir, ...f.path.split('/')), temp);
        sealed[i] = { path: f.path, size: ct.size, sha256: ct.sha256, encrypted: { sha256: f.sha256, size: f.size } };
        if (opts.signal.aborted) throw new Error('the attempt stopped');
        const begin = (signal: AbortSignal) => client.createOutputUpload(attemptId, { path: f.path, sha256: ct.sha256, size: ct.size }, signal);
        await uploadFile(client, begin, temp, ct.size, f.path, opts);
        summary.uploaded.push(f.path);
      } catch (e) {
        const error = (e as Error).message;
        if (!sealed[i]) summary.error ??= `output ${JSON.stringify(f.path)} could not be encrypted: ${error}`;
        summary.failed.push({ path: f.path, error });
        opts.logger.warn({ path: f.path, size: f.size, err: error }, 'could not upload an encrypted output file; it is reported without its bytes');
      } finally {
        await rm(temp, { force: true }).catch(() => {});
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPLOAD_PARALLEL, queue.length) }, worker));
  return summary;
}
