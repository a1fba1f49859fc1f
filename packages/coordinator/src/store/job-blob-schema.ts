/** Row types of the tables of jobs' blobs (migration 0017), as Kysely sees them. */

export interface JobBlobsTable {
  job_id: string;
  role: string; // 'input' | 'output' | 'checkpoint'
  sha256: string;
  owner_id: string;
  size: number;
  attempt_id: string | null;
  created_at: number;
}

export interface AgentUploadsTable {
  upload_id: string;
  attempt_id: string;
  job_id: string;
  owner_id: string;
  kind: string; // 'output' | 'checkpoint'
  path: string | null;
  sha256: string;
  size: number;
  token_hash: string | null;
  created_at: number;
  completed_at: number | null;
}
