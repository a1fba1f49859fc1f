/**
 * An attempt's data plane (issue 13), handed to the executor with the request: it fetches the blob and URL inputs
 * into the work dir, and uploads the outputs not returned inline while the outputs dir still exists. The attempt
 * runner owns it (its signal aborts transfers when the attempt stops); executors only call it.
 */
import { rm } from 'node:fs/promises';
import type { ExecutionRequest, Logger } from '@gpux/core';
import { type BlobInputFile, isBlobInput, type OutputFile, outputRootDigest, type UrlInputFile } from '@gpux/protocol';
import { plaintextSize } from '@gpux/protocol/e2e';
import type { CoordinatorClient } from '../coordinator-client.js';
import type { AttemptE2e } from '../e2e/attempt-e2e.js';
import { DataPlaneError, downloadToFile } from './download.js';
import { uploadEncryptedOutputs } from './e2e-outputs.js';
import { blobSource, describeUrl, urlSource } from './input-sources.js';
import { type UploadSummary, uploadOutputs } from './upload.js';

export interface AttemptDataPlane {
  /**
   * Streams a blob or URL input to `target` (size and sha256 checked); throws DataPlaneError (the file removed). An
   * encrypted input's ciphertext goes to `stage` (default beside `target`), then decrypts to `target`.
   */
  fetchInput(file: BlobInputFile | UrlInputFile, target: string, stage?: string): Promise<void>;
  /** Uploads the outputs without inline content from `outputsDir` (encrypted jobs: all of them, encrypted). Never throws. */
  uploadOutputs(outputsDir: string, outputs: readonly OutputFile[]): Promise<UploadSummary>;
  /** Set for an encrypted job (issue 13): its keys. */
  readonly e2e?: AttemptE2e | undefined;
}

/** The executor request as the agent passes it: the core request plus the attempt's data plane. */
export interface DataPlaneRequest extends ExecutionRequest {
  dataPlane?: AttemptDataPlane;
}

export const dataPlaneOf = (req: ExecutionRequest): AttemptDataPlane | undefined => (req as DataPlaneRequest).dataPlane;

export interface DataPlaneDeps {
  client: CoordinatorClient;
  attemptId: string;
  /** The job asked for network (`network: true`). */
  jobNetwork: boolean;
  /** The node allows jobs network (--allow-network): URL inputs are fetched only when both are true. */
  nodeAllowsNetwork: boolean;
  /** For URL inputs. Default the global fetch. */
  urlFetch?: typeof fetch;
  signal: AbortSignal;
  logger: Logger;
  retryDelayMs?: number;
  chunkBytes?: number;
  /** An encrypted job's keys (spec.encryption): inputs are decrypted, outputs encrypted. */
  e2e?: AttemptE2e;
}

export function attemptDataPlane(d: DataPlaneDeps): AttemptDataPlane {
  const common = { signal: d.signal, ...(d.retryDelayMs === undefined ? {} : { retryDelayMs: d.retryDelayMs }) };
  return {
    e2e: d.e2e,
    async fetchInput(file, target, stage) {
      if (isBlobInput(file)) {
        const what = `input ${JSON.stringify(file.path)} (blob ${file.blob.slice(0, 12)}…)`;
        if (file.encrypted) {
          if (!d.e2e) throw new DataPlaneError(`${what}: an encrypted input, but the attempt has no data key`);
          if (plaintextSize(file.size) !== file.encrypted.size) throw new DataPlaneError(`${what}: ${file.size} bytes of ciphertext cannot hold the ${file.encrypted.size} bytes of plaintext the spec names`);
          // The ciphertext is checked like any blob, then decrypted; the plaintext is checked against the spec.
          const sealed = stage ?? `${target}.gpxe`;
          try {
            await downloadToFile(blobSource(d.client, d.attemptId, file), sealed, { sha256: file.blob, size: file.size }, what, common);
            await d.e2e.open(sealed, target, what, file.encrypted);
          } finally {
            await rm(sealed, { force: true });
          }
          return;
        }
        await downloadToFile(blobSource(d.client, d.attemptId, file), target, { sha256: file.blob, size: file.size }, what, common);
        return;
      }
      const what = `input ${JSON.stringify(file.path)} (${describeUrl(file.url)})`;
      if (!d.jobNetwork) throw new DataPlaneError(`${what}: a URL input needs network: true in the spec`);
      if (!d.nodeAllowsNetwork) {
        throw new DataPlaneError(`${what}: this node does not allow network (the operator can start it with --allow-network), so it cannot fetch URL inputs`);
      }
      await downloadToFile(urlSource(d.urlFetch ?? fetch, file), target, { sha256: file.sha256, size: file.size }, what, common);
    },
    async uploadOutputs(outputsDir, outputs) {
      const opts = { ...common, logger: d.logger, ...(d.chunkBytes === undefined ? {} : { chunkBytes: d.chunkBytes }) };
      const summary = d.e2e
        ? await uploadEncryptedOutputs(d.client, d.attemptId, d.e2e, outputsDir, outputs, opts)
        : await uploadOutputs(d.client, d.attemptId, outputsDir, outputs, opts);
      if (summary.uploaded.length > 0) d.logger.info({ files: summary.uploaded.length }, 'uploaded output files to the blob store');
      return summary;
    },
  };
}

/**
 * The outputs an executor reports: uploaded (those not inline; an encrypted job's all, as ciphertext) while the
 * outputs dir still exists. The digest stays the collected one (an encrypted job's covers the plaintext digests).
 */
export async function finishOutputs(req: ExecutionRequest, outputsDir: string, collected: { outputs: OutputFile[]; outputDigest: string; error: string | null }) {
  const plane = dataPlaneOf(req);
  const none = (error: string) => ({ outputs: [], outputDigest: outputRootDigest([]), error });
  // An encrypted job's outputs never leave the node in clear: without its keys, or on any error, none are reported.
  if (req.spec.encryption && !plane?.e2e) return none(collected.error ?? 'an encrypted job without its keys: no outputs reported');
  if (collected.error) return req.spec.encryption ? none(collected.error) : collected;
  if (!plane) return collected;
  const summary = await plane.uploadOutputs(outputsDir, collected.outputs);
  if (summary.error) return none(summary.error);
  return { outputs: summary.outputs ?? collected.outputs, outputDigest: collected.outputDigest, error: null };
}
