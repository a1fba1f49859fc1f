/** The blob store's configuration (issue 13), parsed from the environment with the coordinator's config (config.ts). */
import { join } from 'node:path';
import { GpuxError } from '@gpux/core';

export interface S3BlobConfig {
  /** GPUX_S3_BUCKET. Required with GPUX_BLOB_STORE=s3. */
  bucket: string;
  /** GPUX_S3_ENDPOINT. An S3-compatible server's URL; null: AWS's endpoint for the region. */
  endpoint: string | null;
  /** GPUX_S3_REGION (else AWS_REGION). Default us-east-1. */
  region: string;
  /** GPUX_S3_FORCE_PATH_STYLE. `1`: http://endpoint/bucket/key (most S3-compatible servers); default 0 (virtual-host style). */
  forcePathStyle: boolean;
  /** GPUX_S3_PREFIX. Key prefix inside the bucket. Default `blobs/`. */
  prefix: string;
}

export interface BlobConfig {
  /** GPUX_BLOB_STORE. `fs` (the default: files under `dir`) or `s3`. */
  store: 'fs' | 's3';
  /** `<dataDir>/blobs`: the fs backend's blobs, and every backend's staged uploads (`uploads/`). */
  dir: string;
  /** The S3 settings; null unless store is s3. Credentials: the usual AWS variables (AWS_ACCESS_KEY_ID…, AWS_PROFILE). */
  s3: S3BlobConfig | null;
  /** GPUX_BLOB_QUOTA_BYTES. Bytes one account may hold in blobs plus open uploads. Default 10 GiB. */
  quotaBytes: number;
  /** GPUX_BLOB_RETENTION_S. A blob not referenced (uploaded, downloaded, used by a live job) for this long is deleted. Default 7 days. */
  retentionMs: number;
  /** GPUX_BLOB_CHUNK_BYTES. Largest body of one upload PUT. Default 64 MiB. */
  chunkBytes: number;
  /** GPUX_BLOB_MAX_OPEN_UPLOADS. Unfinished uploads one account may have. Default 16. */
  maxOpenUploads: number;
  /** GPUX_BLOB_UPLOAD_TTL_S. An upload with no new bytes for this long is abandoned (GC drops it). Default 86400 (1 day). */
  uploadTtlMs: number;
  /** GPUX_BLOB_UPLOADS_PER_MIN. New uploads one account may open per minute (a burst of as many). Default 60. */
  uploadsPerMinute: number;
  /** GPUX_BLOB_TRANSFERS_PER_ACCOUNT. Chunk uploads and downloads one account may have in flight at once. Default 8. */
  transfersPerAccount: number;
  /** GPUX_BLOB_GC_INTERVAL_S. How often the blob garbage collector runs. Default 600. */
  gcIntervalMs: number;
  /** GPUX_MAX_OUTPUT_BYTES. Declared bytes of the output uploads of one attempt in all, and of one checkpoint. Default 10 GiB. */
  maxOutputBytes: number;
  /** GPUX_MAX_UPLOADS_PER_ATTEMPT. Output and checkpoint uploads one attempt may open in all. Default 10000. */
  maxUploadsPerAttempt: number;
}

type Env = Record<string, string | undefined>;

/** S3's largest object; no blob may be declared larger. */
export const MAX_BLOB_BYTES = 5 * 2 ** 40;

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

function int(env: Env, name: string, min: number, max: number): number | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new GpuxError('REQUEST_INVALID', `${name}=${JSON.stringify(v)} is invalid: expected an integer from ${min} to ${max}`);
  return Number(v);
}

export function loadBlobConfig(env: Env, dataDir: string): BlobConfig {
  const store = (str(env, 'GPUX_BLOB_STORE') ?? 'fs').toLowerCase();
  if (store !== 'fs' && store !== 's3') throw new GpuxError('REQUEST_INVALID', `GPUX_BLOB_STORE=${JSON.stringify(store)} is invalid: expected fs or s3`);
  let s3: S3BlobConfig | null = null;
  if (store === 's3') {
    const bucket = str(env, 'GPUX_S3_BUCKET');
    if (!bucket) throw new GpuxError('REQUEST_INVALID', 'GPUX_BLOB_STORE=s3 needs GPUX_S3_BUCKET (and GPUX_S3_ENDPOINT for a server other than AWS)');
    const endpoint = str(env, 'GPUX_S3_ENDPOINT') ?? null;
    if (endpoint !== null && !/^https?:\/\/\S+$/.test(endpoint)) throw new GpuxError('REQUEST_INVALID', `GPUX_S3_ENDPOINT=${JSON.stringify(endpoint)} is invalid: expected an http:// or https:// URL`);
    const pathStyle = str(env, 'GPUX_S3_FORCE_PATH_STYLE')?.toLowerCase();
    if (pathStyle !== undefined && !['1', '0', 'true', 'false'].includes(pathStyle)) throw new GpuxError('REQUEST_INVALID', `GPUX_S3_FORCE_PATH_STYLE=${JSON.stringify(pathStyle)} is invalid: expected 1 or 0`);
    s3 = {
      bucket,
      endpoint,
      region: str(env, 'GPUX_S3_REGION') ?? str(env, 'AWS_REGION') ?? 'us-east-1',
      forcePathStyle: pathStyle === '1' || pathStyle === 'true',
      prefix: str(env, 'GPUX_S3_PREFIX') ?? 'blobs/',
    };
  }
  return {
    store,
    dir: join(dataDir, 'blobs'),
    s3,
    quotaBytes: int(env, 'GPUX_BLOB_QUOTA_BYTES', 0, MAX_BLOB_BYTES * 1024) ?? 10 * 2 ** 30,
    retentionMs: (int(env, 'GPUX_BLOB_RETENTION_S', 60, 10 * 365 * 86_400) ?? 7 * 86_400) * 1000,
    chunkBytes: int(env, 'GPUX_BLOB_CHUNK_BYTES', 64 * 1024, 2 ** 32) ?? 64 * 2 ** 20,
    maxOpenUploads: int(env, 'GPUX_BLOB_MAX_OPEN_UPLOADS', 1, 100_000) ?? 16,
    uploadTtlMs: (int(env, 'GPUX_BLOB_UPLOAD_TTL_S', 60, 30 * 86_400) ?? 86_400) * 1000,
    uploadsPerMinute: int(env, 'GPUX_BLOB_UPLOADS_PER_MIN', 1, 1_000_000) ?? 60,
    transfersPerAccount: int(env, 'GPUX_BLOB_TRANSFERS_PER_ACCOUNT', 1, 10_000) ?? 8,
    gcIntervalMs: (int(env, 'GPUX_BLOB_GC_INTERVAL_S', 1, 7 * 86_400) ?? 600) * 1000,
    maxOutputBytes: int(env, 'GPUX_MAX_OUTPUT_BYTES', 0, MAX_BLOB_BYTES) ?? 10 * 2 ** 30,
    maxUploadsPerAttempt: int(env, 'GPUX_MAX_UPLOADS_PER_ATTEMPT', 1, 1_000_000) ?? 10_000,
  };
}
