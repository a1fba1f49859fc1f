/**
 * Migration 0018: end-to-end encrypted jobs (issue 13). FROZEN once it lands.
 * - node_encryption_keys: a node's X25519 encryption key and its identity key's signature over it (a table of its
 *   own beside nodes, so the node row and its readers stay as they are); replaced when the node re-registers.
 * - attempt_keys: per attempt, the input data key the buyer released, wrapped to the node (`data_key`, with its
 *   `data_scope`: 'attempt', or 'job' for one pre-wrapped in the spec), and the output key the node announced,
 *   wrapped to the buyer (`output_key`). Only wrapped keys: the coordinator cannot open either.
 * - outputs.plain_sha256 / plain_size: an encrypted output's plaintext digest and size (size and sha256 are the
 *   ciphertext's, as stored in the blob store).
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0018: Migration = {
  name: '0018-e2e',
  async up(db: Kysely<unknown>): Promise<void> {
    const s = db.schema;
    await s
      .createTable('node_encryption_keys')
      .addColumn('node_id', 'text', (c) => c.primaryKey())
      .addColumn('public_key', 'text', (c) => c.notNull())
      .addColumn('signature', 'text', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await s
      .createTable('attempt_keys')
      .addColumn('attempt_id', 'text', (c) => c.primaryKey())
      .addColumn('job_id', 'text', (c) => c.notNull())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('data_key', 'text')
      .addColumn('data_scope', 'text')
      .addColumn('released_at', 'bigint')
      .addColumn('output_key', 'text')
      .addColumn('output_key_at', 'bigint')
      .execute();
    await s.createIndex('attempt_keys_job').on('attempt_keys').column('job_id').execute();
    await s.alterTable('outputs').addColumn('plain_sha256', 'text').execute();
    await s.alterTable('outputs').addColumn('plain_size', 'bigint').execute();
  },
};
