/**
 * The BlobBackend conformance suite on the S3 backend against s3rver, an S3 API EMULATOR (npm devDependency):
 * no real S3-compatible server installs here from the registries. Skipped when s3rver is missing, a failure
 * under GPUX_REQUIRE_ALL=1. A bucket prefix per test keeps the tests apart on one emulator.
 */
import { after, before, describe } from 'node:test';
import { requireS3Emulator, runBlobBackendConformance, type S3Emulator, startS3Emulator, tempDir } from '@gpux/testing';
import type { S3BlobConfig } from '../../src/blobs/config.js';
import { S3BlobBackend } from '../../src/blobs/s3-backend.js';

describe('S3 blob backend (s3rver emulator)', requireS3Emulator(), () => {
  let s3: S3Emulator;
  let n = 0;
  before(async () => {
    s3 = await startS3Emulator();
    // The AWS SDK reads credentials from the usual variables, as it does in production.
    process.env.AWS_ACCESS_KEY_ID = s3.accessKeyId;
    process.env.AWS_SECRET_ACCESS_KEY = s3.secretAccessKey;
  });
  after(async () => {
    await s3?.stop();
  });

  runBlobBackendConformance('s3 (s3rver emulator)', async () => {
    const staging = tempDir('gpux-blobs-s3-staging');
    const cfg: S3BlobConfig = { bucket: s3.bucket, endpoint: s3.endpoint, region: 'us-east-1', forcePathStyle: true, prefix: `t${++n}/` };
    return { backend: new S3BlobBackend(cfg, staging.path), reopen: async () => new S3BlobBackend(cfg, staging.path), cleanup: staging.cleanup };
  });
});
