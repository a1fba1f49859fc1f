/** Row types of the coordinator database, as Kysely sees them (snake_case columns, epoch-ms integers, JSON as text). */
import type { Generated } from 'kysely';
import type { BlobsTable, BlobUploadsTable } from './blob-schema.js';
import type { AgentUploadsTable, JobBlobsTable } from './job-blob-schema.js';
import type { AttemptKeysTable, NodeEncryptionKeysTable } from './e2e-key-schema.js';
import type { CoordinatorLeasesTable, NodeNoncesTable } from './cluster-schema.js';
import type { PeersTable } from './peers.js';

export interface TokensTable {
  id: string;
  hash: string;
  role: string;
  account_id: string;
  name: string;
  created_at: number;
  expires_at: number | null; // 0005
  revoked_at: number | null; // 0005
}

/** GPU uuids per node, for the cross-provider uuid check (0005). */
export interface NodeGpusTable {
  node_id: string;
  uuid: string;
}

/** Node enrollment tokens (0005). */
export interface EnrollmentsTable {
  id: string;
  hash: string;
  account_id: string;
  name: string;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  max_nodes: number | null;
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
  pay_asset: string | null; // 0003: null without a market
  pay_cap: number | null;
  pay_units: number | null;
  pay_held: number | null;
  spec_payload: string | null; // 0007: JSON of the spec's command, args, env, labels and inputs (then `spec` holds the rest); null: `spec` is whole
  created_at: number;
  updated_at: number;
  started_at: number | null;
  finished_at: number | null;
  /** 0010: who the job is for ('buyer', or a check run: 'audit' | 'referee' | 'canary'); optional so inserts may omit it. */
  kind?: string;
  check_of?: string | null; // 0010: the job a check run checks
  avoid_provider_ids?: string; // 0010: JSON array of provider ids the job may not be placed with
  hold_pay?: number; // 0010: 0/1, the provider's share accrues to pending:<attempt> until verification
  verify_window_ms?: number | null; // 0010: the dispute window fixed at submission (null: the default)
  audit_floor_bps?: number | null; // 0010: the audit floor fixed at submission (null: the default)
  // 0004: queue_deadline, queue_deadline_attempts (store/queue-timeout.ts declares them; job inserts leave them NULL)
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
  price_asset: string | null; // 0003: the clearing price, null without a market
  price_per_unit_hour: number | null;
  price_units: number | null;
  price_fee_bps: number | null;
  price_provider_id: string | null;
  price_stake_lock: number | null;
  price_class: string | null;
  settled_charged: Generated<number>; // 0003: settled so far
  settled_fee: Generated<number>;
  settled_ms: Generated<number>;
  log_bytes: Generated<number>; // 0006: what the attempt wrote, against its budgets
  log_entries: Generated<number>;
  log_dropped_bytes: Generated<number>;
  log_dropped_entries: Generated<number>;
  event_count: Generated<number>;
  events_dropped: Generated<number>;
  /** 0008: cancel + grace once the job's cancel is requested: charged and leased no later than this. Optional so inserts may omit it. */
  stop_by?: number | null;
  /** 0009: the node's signed result commitment (canonical JSON) and its signature (base64); null until it ends with a report. */
  commitment?: string | null;
  commitment_signature?: string | null;
  /** 0013: the coordinator's deadline (core attempt-end/deadline.ts): no heartbeat leases the attempt past it; null: none yet. */
  deadline_at?: number | null;
}

export interface NodesTable {
  id: string;
  public_key: string;
  advertisement: string; // JSON
  status: string;
  admin_state: string;
  admin_reason: string | null; // 0002
  provider_id: string | null; // 0003
  enrollment_id: string | null; // 0005
  removed_at: number | null; // 0005
  banned_at?: number | null; // 0009: banned (equivocation): removed for good, may not register again
  banned_reason?: string | null;
  simulated: number; // 0/1
  registered_at: number;
  last_heartbeat_at: number;
  /** 0015: proof of hardware (store/challenges.ts); optional so inserts may omit them (the defaults apply). */
  proof_state?: string;
  proven_class?: string | null;
  proof_score?: number | null;
  proven_at?: number | null;
  proof_reason?: string | null;
  next_check_at?: number | null;
  /** 0015: trust tier: open | curated | attested. */
  tier?: string;
}

export interface OutputsTable {
  attempt_id: string;
  path: string;
  size: number;
  sha256: string;
  content: string | null; // base64
  blob?: number; // 0017: 0/1, the bytes are in the blob store (set by the coordinator)
  plain_sha256?: string | null; // 0018: an encrypted output's plaintext digest
  plain_size?: number | null; // 0018
}

export interface LogsTable {
  id: Generated<number>; // job-wide read cursor
  job_id: string;
  attempt_id: string;
  seq: number;
  stream: string;
  data: string;
  at: number;
  bytes: Generated<number>; // 0006: UTF-8 length of data, for byte-bounded pages
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

/** The ledger (0003). seq orders transfers; postings carry the balance after them. */
export interface LedgerTransfersTable {
  seq: Generated<number>;
  id: string;
  kind: string;
  at: number;
  memo: string;
  job_id: string | null;
  attempt_id: string | null;
  node_id: string | null;
  reference: string | null;
}

export interface LedgerPostingsTable {
  id: Generated<number>;
  transfer_seq: number;
  account: string;
  asset: string;
  amount: number;
  balance_after: number;
}

export interface LedgerBalancesTable {
  account: string;
  asset: string;
  balance: number;
}

export interface PayoutsTable {
  id: string;
  account_id: string;
  asset: string;
  amount: number;
  destination: string;
  adapter: string;
  state: string;
  reference: string | null;
  reason: string | null;
  created_at: number;
  updated_at: number;
}

export interface UnbondingsTable {
  id: string;
  node_id: string;
  provider_id: string;
  amount: number;
  release_at: number;
  released_at: number | null;
}

export interface AsksTable {
  provider_id: string;
  market_class: string;
  price: number;
  updated_at: number;
}

/** The treasury fee's rounding remainder per (provider, asset), in fee-bps units below 10000 (0008). */
/** The treasury's lifetime money in and out per (asset, transfer kind), both ≥ 0 (0014; core trust/audit-budget.ts). */
export interface TreasuryFlowsTable {
  asset: string;
  kind: string;
  amount_in: number;
  amount_out: number;
}

export interface FeeCarryTable {
  provider_id: string;
  asset: string;
  carry: number;
}

export interface MarketPricesTable {
  market_class: string;
  epoch: number;
  at: number;
  price: number;
  utilization_bps: number;
  supply_units: number;
  demand_units: number;
}

/** 0009: evidence of equivocation, two different signed commitments for one attempt (store/equivocations.ts). */
export interface EquivocationsTable {
  id: string;
  node_id: string;
  attempt_id: string;
  job_id: string;
  first_commitment: string;
  first_signature: string;
  second_commitment: string;
  second_signature: string;
  second_digest: string;
  slashed: number;
  transfer_id: string | null;
  at: number;
}

/** A node's decayed reputation sums (core trust/reputation.ts). 0011. */
export interface NodeReputationTable {
  node_id: string;
  good: number;
  bad: number;
  as_of: number;
  updated_at: number;
}

/** 0010: a job's verification step (store/verification.ts). */
export interface VerificationsTable {
  job_id: string;
  attempt_id: string;
  node_id: string;
  provider_id: string | null;
  buyer_id: string;
  asset: string | null;
  state: string;
  label: string;
  p: number;
  draw: number | null;
  reason: string;
  output_digest: string;
  exit_code: number | null;
  window_closes_at: number;
  dispute_buyer_id: string | null;
  dispute_reason: string | null;
  dispute_bond: number | null;
  dispute_asset: string | null;
  dispute_at: number | null;
  dispute_referee_id: string | null;
  verdict: string | null;
  created_at: number;
  resolved_at: number | null;
}

/** 0010: penalties with their evidence (JSON) and ledger transfer. */
export interface PenaltiesTable {
  id: string;
  node_id: string;
  kind: string;
  job_id: string | null;
  attempt_id: string | null;
  evidence: string;
  transfer_id: string | null;
  slashed: number;
  fee: number;
  banned: number;
  suspended: number;
  reason: string;
  at: number;
}

/** 0010: audits passed in a row per node (core trust/audit-rate.ts). */
export interface NodeAuditsTable {
  node_id: string;
  consecutive_passes: number;
  updated_at: number;
}

/** 0012: the canary catalog of known answers (store/canary-catalog.ts). spec and payment are JSON. */
export interface CanarySpecsTable {
  id: string;
  spec_digest: string;
  source_job_id: string;
  spec: string;
  payment: string;
  output_digest: string;
  exit_code: number | null;
  /** JSON: the operators (provider accounts) that produced the known answer. */
  operators: string;
  uses: number;
  created_at: number;
}

/** 0012: one row per canary job (store/canaries.ts). */
export interface CanaryRunsTable {
  job_id: string;
  spec_id: string;
  source_job_id: string;
  /** The buyer-looking account the canary job was submitted under. */
  buyer_id: string;
  /** The buyer's job whose draw issued it. */
  drawn_for: string;
  draw: number;
  known_digest: string;
  known_exit_code: number | null;
  known_operators: string;
  state: string;
  attempt_id: string | null;
  node_id: string | null;
  provider_id: string | null;
  output_digest: string | null;
  exit_code: number | null;
  referees: number;
  verdict: string | null;
  created_at: number;
  resolved_at: number | null;
}

/** 0012: up to which verification (created_at, job_id) the canary pass drew. One row, id 1. */
export interface CanaryCursorTable {
  id: number;
  after_at: number;
  after_job_id: string;
}

/** 0015: a proof-of-hardware challenge (store/challenges.ts). */
export interface ChallengesTable {
  id: string;
  node_id: string;
  provider_id: string | null;
  seed: string;
  n: number;
  products: number;
  row_block: number;
  gpu_indices: string; // JSON number[]
  class: string;
  issued_at: number;
  deadline_at: number;
  state: string;
  runner: string | null;
  digests: string | null; // JSON ChallengeGpuDigests[]
  timings: string | null; // JSON
  digested_at: number | null;
  reveal: string | null; // JSON RevealItem[]
  reveal_by: number | null;
  reason: string | null;
  score: number | null;
  decided_at: number | null;
}

/** Forwarded jobs at home (0022; core store/forwards.ts): one row per attempt sent to a peer region. */
export interface ForwardsTable {
  attempt_id: string;
  job_id: string;
  peer_id: string;
  remote_job_id: string | null;
  state: string; // ForwardState
  log_cursor: Generated<number>;
  charged: number | null; // the peer's final bill once booked
  reason: string;
  created_at: number;
  updated_at: number;
  last_contact_at: number | null;
  last_error: string | null;
}

export interface MigrationsTable {
  name: string;
  applied_at: number;
}

export interface Database {
  tokens: TokensTable;
  enrollments: EnrollmentsTable;
  node_gpus: NodeGpusTable;
  jobs: JobsTable;
  attempts: AttemptsTable;
  nodes: NodesTable;
  outputs: OutputsTable;
  logs: LogsTable;
  events: EventsTable;
  node_stats: NodeStatsTable;
  runtime_expectations: RuntimeExpectationsTable;
  ledger_transfers: LedgerTransfersTable;
  ledger_postings: LedgerPostingsTable;
  ledger_balances: LedgerBalancesTable;
  payouts: PayoutsTable;
  unbondings: UnbondingsTable;
  asks: AsksTable;
  market_prices: MarketPricesTable;
  fee_carry: FeeCarryTable;
  treasury_flows: TreasuryFlowsTable;
  equivocations: EquivocationsTable;
  node_reputation: NodeReputationTable;
  verifications: VerificationsTable;
  penalties: PenaltiesTable;
  node_audits: NodeAuditsTable;
  canary_specs: CanarySpecsTable;
  canary_runs: CanaryRunsTable;
  canary_cursor: CanaryCursorTable;
  challenges: ChallengesTable;
  blobs: BlobsTable; // 0016
  blob_uploads: BlobUploadsTable; // 0016
  job_blobs: JobBlobsTable; // 0017
  agent_uploads: AgentUploadsTable; // 0017
  node_encryption_keys: NodeEncryptionKeysTable; // 0018
  attempt_keys: AttemptKeysTable; // 0018
  coordinator_leases: CoordinatorLeasesTable; // 0019
  node_nonces: NodeNoncesTable; // 0019
  peers: PeersTable; // 0021
  forwards: ForwardsTable; // 0022
  gpux_migrations: MigrationsTable;
}
