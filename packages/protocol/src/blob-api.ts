/**
 * The blob store on the wire (issue 13): content-addressed blobs (named by the sha256 hex of their bytes),
 * uploaded in chunks with resume and downloaded as streams with Range support. A blob is private to the
 * accounts that uploaded it; the same bytes are stored once.
 *
 * Upload: POST /v1/blobs/uploads {sha256, size} → an upload (or the blob at once when you already hold it);
 * then PUT /v1/blobs/uploads/:id with header Upload-Offset and an application/octet-stream body of at most
 * `chunkBytes`, repeated; the chunk that reaches `size` completes it (sha256 checked). A wrong offset is 409
 * with the server's offset in the Upload-Offset header; GET /v1/blobs/uploads/:id says where to resume.
 */
import { z } from 'zod';

/** Request header of a chunk: the byte offset its first byte goes to. Also on 409 answers: the server's offset. */
export const UPLOAD_OFFSET_HEADER = 'upload-offset';

export const Sha256Hex = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a sha256 digest: 64 lowercase hex characters')
  .describe('sha256 of the bytes, lowercase hex');

export const BlobView = z.object({
  sha256: Sha256Hex,
  size: z.number().int().nonnegative(),
  createdAt: z.number().int(),
  lastReferencedAt: z.number().int().describe('Last upload, download or use by a job: retention counts from here'),
  expiresAt: z.number().int().describe('When the garbage collector deletes it if nothing references it before'),
});
export type BlobView = z.infer<typeof BlobView>;

export const CreateBlobUploadRequest = z
  .object({
    sha256: Sha256Hex,
    size: z.number().int().nonnegative().max(5 * 2 ** 40).describe('Bytes of the whole blob (at most 5 TiB); reserved against your quota until done'),
  })
  .strict();
export type CreateBlobUploadRequest = z.input<typeof CreateBlobUploadRequest>;

export const BlobUploadResponse = z.object({
  uploadId: z.string().nullable().describe('null: you already hold this blob, nothing to upload'),
  sha256: Sha256Hex,
  size: z.number().int(),
  offset: z.number().int().describe('Bytes the server has: send the next chunk from here'),
  expiresAt: z.number().int().nullable().describe('An upload with no new bytes until then is abandoned'),
  chunkBytes: z.number().int().describe('Largest body of one PUT'),
  blob: BlobView.nullable().describe('Set once the blob is stored (the last chunk, or at once)'),
});
export type BlobUploadResponse = z.infer<typeof BlobUploadResponse>;

export const BlobUsageView = z.object({
  blobBytes: z.number().int(),
  reservedBytes: z.number().int().describe('Declared sizes of your open uploads'),
  openUploads: z.number().int(),
  quotaBytes: z.number().int(),
});

export const ListBlobsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(512).optional(),
});

export const ListBlobsResponse = z.object({
  blobs: z.array(BlobView),
  nextCursor: z.string().nullable(),
  usage: BlobUsageView,
});
export type ListBlobsResponse = z.infer<typeof ListBlobsResponse>;

export const DeleteBlobResponse = z.object({ deleted: z.boolean().describe('false: you held no such blob') });
export const AbortBlobUploadResponse = z.object({ aborted: z.boolean() });

/** GET /v1/blobs/:sha256 answers with the bytes (application/octet-stream), not JSON; this documents it. */
export const BlobBytes = z.unknown().describe('The blob bytes (application/octet-stream); Range: bytes=a-b gives 206 with Content-Range');
