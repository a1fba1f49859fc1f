/**
 * Migration 0020: registration counts a provider's (and an enrollment's) live nodes on every registration; with
 * tens of thousands of nodes a count that reads every node row made enrolling N nodes cost O(N²) row reads (issue
 * 14, bench:nodes). Partial indexes over live nodes let the counts read the index alone. FROZEN once it lands.
 */
import { sql, type Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0020: Migration = {
  name: '0020-live-node-counts',
  async up(db: Kysely<unknown>): Promise<void> {
    await sql`create index nodes_provider_live on nodes (provider_id) where removed_at is null`.execute(db);
    await sql`create index nodes_enrollment_live on nodes (enrollment_id) where removed_at is null`.execute(db);
  },
};
