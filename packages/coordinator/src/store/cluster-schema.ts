/** Row types of the replica tables (migration 0019), as Kysely sees them. */

export interface CoordinatorLeasesTable {
  name: string;
  holder: string;
  epoch: number;
  expires_at: number;
}

export interface NodeNoncesTable {
  node_id: string;
  nonce: string;
  expires_at: number;
}
