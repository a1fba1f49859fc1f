/**
 * An attempt's data plane (issue 13), handed to the executor with the request: it fetches the blob and URL inputs
 * into the work dir, and uploads the outputs not returned inline while the outputs dir still exists. The attempt
 * runner owns it (its signal aborts transfers when the attempt stops); executors only call it.
 */
import type { ExecutionRequest, Logger } from '@gpux/core';
import { type BlobInputFile, isBlobInput, type OutputFile, type UrlInputFile } from '@gpux/protocol';
import type { CoordinatorClient } from '../coordinator-client.js';
import { DataPlaneError, downloadToFile } from './download.js';
import { blobSource, describeUrl, urlSource } from './input-sources.js';
import { type UploadSummary, uploadOutputs } from './upload.js';

export interface AttemptDataPlane {
  /** Streams a blob or URL input to `target` (size and sha256 checked); throws DataPlaneError (the file removed). */
  fetchInput(file: BlobInputFile | UrlInputFile, target: string): Promise<void>;
  /** Uploads the outputs without inline content from `outputsDir`. Never throws. */
  uploadOutputs(outputsDir: string, outputs: readonly OutputFile[]): Promise<UploadSummary>;
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
}

export function attemptDataPlane(d: DataPlaneDeps): AttemptDataPlane {
  const common = { signal: d.signal, ...(d.retryDelayMs === undefined ? {} : { retryDelayMs: d.retryDelayMs }) };
  return {
    async fetchInput(file, target) {
      if (isBlobInput(file)) {
        const what = `input ${JSON.stringify(file.path)} (blob ${file.blob.slice(0, 12)}…)`;
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
      const summary = await uploadOutputs(d.client, d.attemptId, outputsDir, outputs, {
        ...common,
        logger: d.logger,
        ...(d.chunkBytes === undefined ? {} : { chunkBytes: d.chunkBytes }),
      });
      if (summary.uploaded.length > 0) d.logger.info({ files: summary.uploaded.length }, 'uploaded output files to the blob store');
      return summary;
    },
  };
}
