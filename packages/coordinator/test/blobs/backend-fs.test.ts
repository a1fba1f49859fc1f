/** The BlobBackend conformance suite on the filesystem backend (real files in a temp dir), plus its file modes and layout. */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { pieces, runBlobBackendConformance, seededBytes, sha256Of, tempDir } from '@gpux/testing';
import { FsBlobBackend } from '../../src/blobs/fs-backend.js';

runBlobBackendConformance('filesystem', async () => {
  const dir = tempDir('gpux-blobs-fs');
  const root = join(dir.path, 'blobs');
  return { backend: new FsBlobBackend(root), reopen: async () => new FsBlobBackend(root), cleanup: dir.cleanup };
});

test('filesystem backend: blobs sharded by the first 2 hex, files 0600 in 0700 directories, nothing left staged', async () => {
  const dir = tempDir('gpux-blobs-fs-modes');
  try {
    const root = join(dir.path, 'blobs');
    const b = new FsBlobBackend(root);
    const data = seededBytes(1000, 9);
    await b.beginUpload('u1');
    assert.equal(statSync(join(root, 'uploads', 'u1')).mode & 0o777, 0o600);
    await b.appendUpload('u1', 0, pieces(data), { maxBytes: 2000 });
    const digest = sha256Of(data);
    await b.completeUpload('u1', { sha256: digest, size: data.length });
    const file = join(root, digest.slice(0, 2), digest);
    assert.equal(statSync(file).mode & 0o777, 0o600);
    for (const d of [root, join(root, 'uploads'), join(root, digest.slice(0, 2))]) assert.equal(statSync(d).mode & 0o777, 0o700, d);
    assert.equal(await b.stagedBytes('u1'), undefined);
  } finally {
    await dir.cleanup();
  }
});
