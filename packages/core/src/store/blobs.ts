/**
 * The blobs port (issue 13): which account holds which blob, and the uploads in progress, in the coordinator's
 * database. The bytes live behind the BlobBackend port (core/src/blobs/backend.ts). An account's usage, for
 * its quota, is the size of the blobs it holds plus the declared size of its open uploads (reserved at begin).
 */
import type { Page } from './page.js';

export interface BlobRecord {
  sha256: string;
  ownerId: string;
  size: number;
  createdAt: number;
  /** Creation, a download, or a re-upload of the same bytes: the retention clock starts again from here. */
  lastReferencedAt: number;
}

export interface BlobUploadRecord {
  id: string;
  ownerId: string;
  sha256: string;
  size: number;
  /** Bytes received as of the last append (the backend's staged size is the truth; this is for views and GC). */
  received: number;
  createdAt: number;
  /** Past this (pushed on by every append) an unfinished upload is abandoned: the GC drops it and its staged bytes. */
  expiresAt: number;
}

export interface BlobUsage {
  /** Bytes of the blobs the account holds. */
  blobBytes: number;
  /** Declared bytes of its open uploads. */
  reservedBytes: number;
  openUploads: number;
}

export interface BeginBlobUploadInput {
  upload: BlobUploadRecord;
  /** The account's byte quota (blobs + reservations) and its most open uploads; over either: LIMIT_EXCEEDED. */
  quotaBytes: number;
  maxOpenUploads: number;
}

export interface BlobsPort {
  /**
   * Open an upload, unless the owner already holds the blob (then its lastReferencedAt = now and it is
   * returned: nothing to upload). Checks the quota and the open-upload cap in the same transaction, so
   * concurrent begins of one account cannot overrun them.
   */
  beginBlobUpload(q: BeginBlobUploadInput): Promise<{ upload: BlobUploadRecord } | { blob: BlobRecord }>;
  getBlobUpload(id: string): Promise<BlobUploadRecord | undefined>;
  /** Record the bytes received so far (kept monotonic) and push the abandonment time to `expiresAt` (never back). */
  recordBlobUploadProgress(id: string, received: number, expiresAt: number): Promise<void>;
  /** The upload's bytes are stored: its row becomes the owner's blob (an existing one is refreshed), in one transaction. */
  finishBlobUpload(id: string, now: number): Promise<BlobRecord | undefined>;
  /** Drop an upload row (aborted, failed its hash check, or expired). */
  deleteBlobUpload(id: string): Promise<void>;
  getBlob(ownerId: string, sha256: string): Promise<BlobRecord | undefined>;
  /** Set lastReferencedAt = now (a download). */
  touchBlob(ownerId: string, sha256: string, now: number): Promise<void>;
  /** The owner's blobs by sha256, keyset-paginated. */
  listBlobs(q: { ownerId: string; limit: number; cursor?: string }): Promise<Page<BlobRecord>>;
  /**
   * Remove the owner's hold on a blob; true when there was one. The bytes go when no account holds them (GC).
   * unreferencedSince: only if it was not referenced since then (the retention pass, racing a download).
   */
  deleteBlob(ownerId: string, sha256: string, opts?: { unreferencedSince?: number }): Promise<boolean>;
  blobUsage(ownerId: string): Promise<BlobUsage>;
  /** Holds not referenced since `before` (oldest first), at most `limit`: the retention pass's candidates. */
  staleBlobs(before: number, limit: number): Promise<BlobRecord[]>;
  /** Uploads whose expiresAt <= now, at most `limit`. */
  expiredBlobUploads(now: number, limit: number): Promise<BlobUploadRecord[]>;
  /** Of these sha256s, those some account holds or some open upload declares: the sweep must keep their bytes. */
  blobsInUse(sha256s: readonly string[]): Promise<Set<string>>;
}
