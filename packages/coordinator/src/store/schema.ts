/** Row types of the coordinator database, as Kysely sees them (snake_case columns, epoch-ms integers, JSON as text). */
import type { Generated } from 'kysely';

export interface TokensTable {
  id: string;
  hash: string;
  role: string;
  account_id: string;
  name: string;
  created_at: number;
}

export interface JobsTable {
  id: string;
  buyer_id: string;
  name: string;
  state: string;
  spec: string; // JSON
  idempotency_key: string | null;
  attempt_count: number;
  current_attempt_id: string | null;
  run_after: number | null;
  exit_code: number | null;
  error: string | null;
  cancel_requested: number; // 0/1
  avoid_node_ids: string; // JSON array of node ids
  priority: number; // 0 high, 1 normal, 2 low (migration 0002)
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
}

/** Attempts carry their lease (lease_expires_at, indexed with state for expiry). */
export interface AttemptsTable {
  id: string;
  job_id: string;
  node_id: string;
  state: string;
  gpu_indices: string; // JSON array
  exit_code: number | null;
  error: string | null;
  output_digest: string | null;
  metrics: string | null; // JSON
  lease_expires_at: number | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  gang_leader: string | null; // leader attempt id of a gang member (0002)
  gang: string | null; // JSON { rank, worldSize, peers } (0002)
}

export interface NodesTable {
  id: string;
  public_key: string;
  advertisement: string; // JSON
  status: string;
  admin_state: string;
  admin_reason: string | null; // 0002
  simulated: number; // 0/1
  registered_at: number;
  last_heartbeat_at: number;
}

export interface OutputsTable {
  attempt_id: string;
  path: string;
  size: number;
  sha256: string;
  content: string | null; // base64
}

export interface LogsTable {
  id: Generated<number>; // job-wide read cursor
  job_id: string;
  attempt_id: string;
  seq: number;
  stream: string;
  data: string;
  at: number;
}

export interface EventsTable {
  seq: Generated<number>;
  at: number;
  subject: string;
  subject_id: string;
  type: string;
  data: string; // JSON object
}

/** A node's decayed track record (core scheduler/node-stats.ts). 0002. */
export interface NodeStatsTable {
  node_id: string;
  successes: number;
  failures: number;
  outages: number;
  decayed_at: number;
  runtime_ratio: number | null;
  runtime_weight: number;
  recent_failures: string; // JSON array of epoch ms
  updated_at: number;
}

/** Mean runtime of a job shape on a GPU class: key = shape@class. 0002. */
export interface RuntimeExpectationsTable {
  key: string;
  mean_ms: number;
  samples: number;
  updated_at: number;
}

export interface MigrationsTable {
  name: string;
  applied_at: number;
}

export interface Database {
  tokens: TokensTable;
  jobs: JobsTable;
  attempts: AttemptsTable;
  nodes: NodesTable;
  outputs: OutputsTable;
  logs: LogsTable;
  events: EventsTable;
  node_stats: NodeStatsTable;
  runtime_expectations: RuntimeExpectationsTable;
  gpux_migrations: MigrationsTable;
}
