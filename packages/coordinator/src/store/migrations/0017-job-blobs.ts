/**
 * Migration 0017: jobs read and write blobs (issue 13). FROZEN once it lands.
 * - job_blobs: which blobs a job references, by role: `input` (a blob input of its spec, written with the job),
 *   `output` (an output a node of the job uploaded) and `checkpoint` (the job's latest checkpoint; one per job).
 *   owner_id is the job's buyer, who holds the blob. The blob garbage collector asks it, by sha256, which holds
 *   a live job still needs. attempt_id: the attempt that wrote an output or checkpoint (null for inputs).
 * - agent_uploads: the uploads a node opened for an attempt (the blob_uploads row is the upload itself, owned
 *   by the buyer): kind, output path, the capability token's sha256 (cleared when the upload completes), and
 *   when it completed. A result's output is a blob output only when a completed upload of its attempt names it.
 * - outputs.blob: 1 when the output's bytes are in the blob store (set by the coordinator, never by a node).
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0017: Migration = {
  name: '0017-job-blobs',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    await s
      .createTable('job_blobs')
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('role', 'text', (c) => c.notNull())
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('attempt_id', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('job_blobs_pk', ['job_id', 'role', 'sha256'])
      .execute();
    await s.createIndex('job_blobs_sha256').on('job_blobs').columns(['sha256', 'owner_id']).execute();
    await s
      .createTable('agent_uploads')
      .addColumn('upload_id', 'text', (c) => c.primaryKey())
      .addColumn('attempt_id', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('owner_id', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('path', 'text')
      .addColumn('sha256', 'text', (c) => c.notNull())
      .addColumn('size', 'bigint', (c) => c.notNull())
      .addColumn('token_hash', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('completed_at', 'bigint')
      .execute();
    await s.createIndex('agent_uploads_attempt').on('agent_uploads').columns(['attempt_id', 'kind']).execute();
    await s.alterTable('outputs').addColumn('blob', 'integer', (c) => c.notNull().defaultTo(0)).execute();
  },
};
