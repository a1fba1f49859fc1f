/**
 * The data plane for nodes (issue 13): an attempt's node downloads the blob inputs its job names, and uploads
 * outputs too large to return inline, and checkpoints, into the blob store, owned by the job's buyer.
 *
 * Downloads are node-signed GETs (no body, so the signature covers the request). Uploads start with a node-signed
 * POST that answers an upload and a capability token for it: the chunks (PUT, application/octet-stream, bodies up
 * to `chunkBytes`) carry the token in OUTPUT_UPLOAD_TOKEN_HEADER instead of a signature, because a signature over a
 * body digest could only be checked after the whole chunk was streamed to disk. The token is random, stored hashed,
 * and good for that one upload only.
 */
import { z } from 'zod';
import { BlobUploadResponse, Sha256Hex } from './blob-api.js';
import { OutputPath } from './job.js';

export const OUTPUT_UPLOAD_TOKEN_HEADER = 'x-gpux-upload-token';

/** The largest output or checkpoint one upload may declare: 5 TiB (the blob store's limit); the coordinator may set less. */
export const MAX_AGENT_UPLOAD_BYTES = 5 * 2 ** 40;

export const CreateOutputUploadRequest = z
  .object({
    path: OutputPath.describe('The output file this is (as it will appear in the result report)'),
    sha256: Sha256Hex,
    size: z.number().int().nonnegative().max(MAX_AGENT_UPLOAD_BYTES),
  })
  .strict();
export type CreateOutputUploadRequest = z.infer<typeof CreateOutputUploadRequest>;

export const CreateCheckpointUploadRequest = z
  .object({
    sha256: Sha256Hex.describe('sha256 of the checkpoint archive (a tar of /gpux/checkpoints)'),
    size: z.number().int().nonnegative().max(MAX_AGENT_UPLOAD_BYTES),
  })
  .strict();
export type CreateCheckpointUploadRequest = z.infer<typeof CreateCheckpointUploadRequest>;

export const AgentUploadResponse = BlobUploadResponse.extend({
  uploadToken: z.string().nullable().describe('Capability for PUT/GET /v1/agent/uploads/:id (header x-gpux-upload-token); null when the blob is already stored'),
});
export type AgentUploadResponse = z.infer<typeof AgentUploadResponse>;

/** A checkpoint a retried attempt starts from: the latest one an earlier attempt of the job completed. */
export const CheckpointRef = z.object({
  sha256: Sha256Hex,
  size: z.number().int().nonnegative(),
  attemptId: z.string().describe('The attempt that wrote it'),
  createdAt: z.number().int(),
});
export type CheckpointRef = z.infer<typeof CheckpointRef>;
