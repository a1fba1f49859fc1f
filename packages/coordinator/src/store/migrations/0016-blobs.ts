/**
 * Migration 0016: the blob store's metadata (issue 13). FROZEN once it lands.
 * - blobs: one row per (owner account, sha256) the account holds, with its size, creation and last reference
 *   (retention counts from it). The bytes live in the blob backend, once per sha256 however many accounts hold it.
 * - blob_uploads: resumable uploads in progress: the declared sha256 and size (reserved against the owner's
 *   quota), bytes received so far, and when the upload is abandoned. Indexed for the owner's count and the GC.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0016: Migration = {
  name: '0016-blobs',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    await s
      .createTable('blobs')
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('last_referenced_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('blobs_pk', ['owner_id', 'sha256'])
      .execute();
    await s.createIndex('blobs_sha256').on('blobs').columns(['sha256']).execute();
    await s.createIndex('blobs_last_referenced').on('blobs').columns(['last_referenced_at']).execute();
    await s
      .createTable('blob_uploads')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('received', 'bigint', (c) => c.notNull())
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('expires_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('blob_uploads_owner').on('blob_uploads').columns(['owner_id']).execute();
    await s.createIndex('blob_uploads_sha256').on('blob_uploads').columns(['sha256']).execute();
    await s.createIndex('blob_uploads_expires').on('blob_uploads').columns(['expires_at']).execute();
  },
};
