/**
 * The blob backend the config names. The S3 client is loaded only when GPUX_BLOB_STORE=s3, so a coordinator on
 * the filesystem backend never pays for it.
 */
import type { BlobBackend } from '@gpux/core';
import type { BlobConfig } from './config.js';
import { FsBlobBackend } from './fs-backend.js';

export async function openBlobBackend(cfg: BlobConfig): Promise<BlobBackend> {
  if (cfg.store === 'fs') return new FsBlobBackend(cfg.dir);
  if (!cfg.s3) throw new Error('GPUX_BLOB_STORE=s3 without its S3 settings');
  const { S3BlobBackend } = await import('./s3-backend.js');
  return new S3BlobBackend(cfg.s3, cfg.dir);
}
