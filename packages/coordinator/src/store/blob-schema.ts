/** Row types of the blob store's tables (migration 0016), as Kysely sees them. */

export interface BlobsTable {
  owner_id: string;
  sha256: string;
  size: number;
  created_at: number;
  last_referenced_at: number;
}

export interface BlobUploadsTable {
  id: string;
  owner_id: string;
  sha256: string;
  size: number;
  received: number;
  created_at: number;
  expires_at: number;
}
