/** Domain records the Store reads and writes. Times are epoch ms; money (later) integer minor units. */
import type {
  AttemptMetrics,
  AttemptState,
  JobSpec,
  JobState,
  JobView,
  LogEntry,
  NodeAdminState,
  NodeAdvertisement,
  NodeStatus,
  OutputFile,
} from '@gpux/protocol';

export type Role = 'buyer' | 'operator';

export interface TokenRecord {
  id: string;
  hash: string; // sha256 hex of the secret token
  role: Role;
  accountId: string;
  name: string;
  createdAt: number;
}

export interface JobRecord extends JobView {
  idempotencyKey: string | null;
  /** Nodes on which an attempt of this job was lost or failed for infrastructure reasons. */
  avoidNodeIds: string[];
}

export interface AttemptRecord {
  id: string;
  jobId: string;
  nodeId: string;
  state: AttemptState;
  gpuIndices: number[];
  exitCode: number | null;
  error: string | null;
  outputDigest: string | null;
  metrics: AttemptMetrics | null;
  leaseExpiresAt: number | null;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

export interface NodeRecord {
  id: string;
  publicKey: string;
  advertisement: NodeAdvertisement;
  status: NodeStatus;
  adminState: NodeAdminState;
  simulated: boolean;
  registeredAt: number;
  lastHeartbeatAt: number;
}

export interface EventRecord {
  seq: number;
  at: number;
  subject: 'job' | 'node';
  subjectId: string;
  type: string;
  data: Record<string, unknown>;
}

export interface NewJob {
  id: string;
  buyerId: string;
  spec: JobSpec;
  idempotencyKey: string | null;
  now: number;
}

/** One decision of the scheduling pass. */
export interface Placement {
  jobId: string;
  attemptId: string;
  nodeId: string;
  gpuIndices: number[];
  leaseExpiresAt: number;
}

export interface AttemptEnd {
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'lost';
  exitCode: number | null;
  error: string | null;
}

export interface FinishAttemptInput {
  attemptId: string;
  nodeId: string;
  outcome: 'succeeded' | 'failed' | 'cancelled';
  exitCode: number | null;
  error: string | null;
  outputDigest: string;
  outputs: OutputFile[];
  metrics: AttemptMetrics;
  now: number;
}

/** How a job moves after one of its attempts ended (see core/lifecycle.ts). */
export interface JobTransition {
  state: JobState;
  runAfter: number | null;
  error: string | null;
  exitCode: number | null;
  /** Add the attempt's node to the job's avoid list. */
  avoidNode: boolean;
}

export type TransitionDecider = (job: JobRecord, end: AttemptEnd, now: number) => JobTransition;

export interface StoredLogEntry extends LogEntry {
  attemptId: string;
  cursor: number;
}
