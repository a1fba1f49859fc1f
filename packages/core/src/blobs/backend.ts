/**
 * The BlobBackend port: where blob bytes live (issue 13). Content addressed (the key is the sha256 hex of the
 * bytes) and streaming only: no method takes or returns a whole blob in memory. Uploads are staged under an
 * upload id and resumable: appendUpload adds bytes at the offset the backend reports (stagedBytes), and the
 * staged bytes survive a restart of the process. completeUpload checks the sha256 and size of everything
 * staged (by streaming it again from the staging area: no hash state has to survive a restart) and only then
 * makes the blob visible under its sha256. Adapters: packages/coordinator/src/blobs (filesystem, S3).
 * Which account may read which blob is the BlobsPort's business (store/blobs.ts), never the backend's.
 */

/** Bytes as a stream: a Node Readable, a web ReadableStream's iterator, an async generator. */
export type ByteSource = AsyncIterable<Uint8Array>;

/** A byte range of a blob: `start` inclusive, `end` exclusive (end > start). */
export interface ByteRange {
  start: number;
  end: number;
}

/** A stored blob (or an entry of the GC listing). modifiedAt: epoch ms the bytes were last written. */
export interface BlobObject {
  sha256: string;
  size: number;
  modifiedAt: number;
}

export interface AppendOptions {
  /** The most bytes this append may take; more → BODY_TOO_LARGE (bytes up to the limit stay staged). */
  maxBytes: number;
}

export interface BlobBackend {
  /** 'fs' or 's3', for logs and the status page. */
  readonly kind: string;
  /** Create the (empty) staging area of a new upload. Idempotent. */
  beginUpload(uploadId: string): Promise<void>;
  /** How many bytes the upload has staged: the offset the next append must start at. undefined: no such upload. */
  stagedBytes(uploadId: string): Promise<number | undefined>;
  /**
   * Append `data` at `offset`, which must equal stagedBytes (else CONFLICT). Returns the new staged size.
   * If the source fails midway, what arrived stays staged (a valid prefix): the client resumes from stagedBytes.
   * The caller serializes appends of one upload.
   */
  appendUpload(uploadId: string, offset: number, data: ByteSource, opts: AppendOptions): Promise<number>;
  /**
   * Check the staged bytes against `expected` (size, then sha256 by streaming them), then store them as the
   * blob `expected.sha256` (replacing an object of that key: same key, same bytes) and drop the staging area.
   * A mismatch drops the staging area and throws REQUEST_INVALID saying what was received.
   */
  completeUpload(uploadId: string, expected: { sha256: string; size: number }): Promise<BlobObject>;
  /** Drop an upload's staged bytes. Idempotent. */
  abortUpload(uploadId: string): Promise<void>;
  /** The blob's bytes, or a range of them, as a stream. NOT_FOUND when there is no such blob. */
  open(sha256: string, range?: ByteRange): Promise<ByteSource>;
  stat(sha256: string): Promise<BlobObject | undefined>;
  /** Remove the blob. Idempotent. */
  delete(sha256: string): Promise<void>;
  /** Stored blobs in sha256 order after `after`, at most `limit`: the garbage collector's sweep. */
  list(q: { after?: string; limit: number }): Promise<BlobObject[]>;
  /** Release clients and handles. */
  close(): Promise<void>;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A blob key: 64 lowercase hex characters. */
export function isSha256Hex(s: string): boolean {
  return SHA256_HEX.test(s);
}
