/** Row types of the end-to-end encryption tables (migration 0018), as Kysely sees them. */

export interface NodeEncryptionKeysTable {
  node_id: string;
  public_key: string;
  signature: string;
  updated_at: number;
}

export interface AttemptKeysTable {
  attempt_id: string;
  job_id: string;
  node_id: string;
  data_key: string | null;
  data_scope: string | null; // 'attempt' | 'job'
  released_at: number | null;
  output_key: string | null;
  output_key_at: number | null;
}
