/**
 * The job-blobs port (issue 13): which blobs jobs reference (inputs, uploaded outputs, the latest checkpoint)
 * and the uploads nodes open for their attempts. The blobs themselves are the BlobsPort's holds, owned by the
 * job's buyer; this port says which of those holds a job still needs, so the garbage collector keeps them.
 */
import type { BlobRecord, BlobUploadRecord } from './blobs.js';

export type AgentUploadKind = 'output' | 'checkpoint';

export interface AgentUploadRecord {
  uploadId: string;
  attemptId: string;
  jobId: string;
  /** The job's buyer: the blob becomes theirs. */
  ownerId: string;
  kind: AgentUploadKind;
  /** The output's path (null for a checkpoint). */
  path: string | null;
  sha256: string;
  size: number;
  /** sha256 hex of the upload's capability token; null once the upload completed (the token is dead). */
  tokenHash: string | null;
  createdAt: number;
  completedAt: number | null;
}

export interface CheckpointRecord {
  jobId: string;
  attemptId: string;
  sha256: string;
  size: number;
  createdAt: number;
}

export interface BeginAgentUploadInput {
  /** The blob upload, owned by the job's buyer. */
  upload: BlobUploadRecord;
  attemptId: string;
  jobId: string;
  kind: AgentUploadKind;
  path: string | null;
  tokenHash: string;
  /** Declared bytes of the attempt's output uploads in all, this one included, may not pass this (LIMIT_EXCEEDED). */
  maxOutputBytes: number;
  /** Uploads one attempt may open in all (outputs and checkpoints), and unfinished at once (LIMIT_EXCEEDED). */
  maxUploads: number;
  maxOpenUploads: number;
}

/** How long ended jobs keep their blobs referenced. */
export interface JobBlobRefPolicy {
  /** An ended job's inputs stay referenced this long (its dispute window: audits re-run it), unless the job fixed its own. */
  disputeWindowMs: number;
  /** An ended job's uploaded outputs stay referenced this long from its end. */
  outputRetentionMs: number;
}

export interface JobBlobsPort {
  /**
   * Open a node's upload for an attempt (bounded per attempt, never by the buyer's quota: see README). When
   * the buyer already holds the blob, nothing is uploaded: the upload is recorded complete at once (the hold's
   * lastReferencedAt = now) and `blob` returned.
   */
  beginAgentUpload(q: BeginAgentUploadInput): Promise<{ upload: AgentUploadRecord } | { upload: AgentUploadRecord; blob: BlobRecord }>;
  getAgentUpload(uploadId: string): Promise<AgentUploadRecord | undefined>;
  /**
   * The upload's bytes are stored: in one transaction the buyer's hold is made (or refreshed), the upload is
   * marked complete (its token cleared), and the job references the blob: an output, or its latest checkpoint
   * (replacing the previous one, which is then free to expire).
   */
  finishAgentUpload(uploadId: string, now: number): Promise<BlobRecord | undefined>;
  /** The completed output uploads of an attempt: path, sha256, size. */
  completedOutputUploads(attemptId: string): Promise<Array<{ path: string; sha256: string; size: number }>>;
  /** The latest checkpoint of each of these jobs that has one. */
  latestCheckpoints(jobIds: readonly string[]): Promise<Map<string, CheckpointRecord>>;
  /** Make sure `ownerId` holds these blobs (lastReferencedAt = now): a result's blob outputs become the buyer's. */
  grantBlobHolds(ownerId: string, blobs: ReadonlyArray<{ sha256: string; size: number }>, now: number): Promise<void>;
  /**
   * Of these holds, the `${ownerId}/${sha256}` keys some job still references: inputs of jobs not ended or
   * inside their dispute window, outputs of jobs not ended or ended less than outputRetentionMs ago, and the
   * checkpoints of jobs not ended.
   */
  referencedBlobHolds(holds: readonly BlobRecord[], now: number, policy: JobBlobRefPolicy): Promise<Set<string>>;
}
