/**
 * The Store port: durable state of the coordinator, in domain verbs, composed of smaller ports (store/*.ts),
 * each with its own conformance file (packages/testing/src/conformance). One Kysely implementation serves
 * SQLite and PostgreSQL (packages/coordinator/src/store). Every method that changes a job, an attempt or a
 * node writes its event rows in the same transaction. Methods that take a `decide` callback run it inside
 * the transaction on the freshly read job, so the state change and its cause commit together.
 */
import type { AttemptsPort } from './store/attempts.js';
import type { BlobsPort } from './store/blobs.js';
import type { CanaryPort } from './store/canaries.js';
import type { ClusterPort } from './store/cluster.js';
import type { ChallengePort } from './store/challenges.js';
import type { HistoryPort } from './store/history.js';
import type { JobBlobsPort } from './store/job-blobs.js';
import type { E2eKeysPort } from './store/e2e-keys.js';
import type { ForwardsPort } from './store/forwards.js';
import type { JobsPort } from './store/jobs.js';
import type { LedgerPort } from './store/ledger.js';
import type { MarketPort } from './store/market.js';
import type { NodesPort } from './store/nodes.js';
import type { PeersPort } from './store/peers.js';
import type { ProviderPort } from './store/provider.js';
import type { ReputationPort } from './store/reputation.js';
import type { RunHistoryPort } from './store/runs.js';
import type { TokensPort } from './store/tokens.js';
import type { VerificationPort } from './store/verification.js';

export type { AttemptsPort, AttemptWriteResult, LostAttempt } from './store/attempts.js';
export type { BeginBlobUploadInput, BlobRecord, BlobsPort, BlobUploadRecord, BlobUsage } from './store/blobs.js';
export type { CanaryIssueQuery, CanaryPassResult, CanaryPort, CanaryStats } from './store/canaries.js';
export type { ChallengeDigestsInput, ChallengeDigestsResult, ChallengePort, ChallengeRecord, ChallengeState, ChallengeVerdictInput, NewChallenge } from './store/challenges.js';
export type { HistoryPort, JobHistoryPage } from './store/history.js';
export type { AgentUploadKind, AgentUploadRecord, BeginAgentUploadInput, CheckpointRecord, JobBlobRefPolicy, JobBlobsPort } from './store/job-blobs.js';
export type { JobsPort, QueueTimeoutInput } from './store/jobs.js';
export { type ClusterPort, type LeaseGrant, LeaseLostError } from './store/cluster.js';
export type { AttemptKeyRecord, E2eKeysPort, KeyWaitingAttempt, NodeEncryptionKeyRecord } from './store/e2e-keys.js';
export type { ClearingBalanceRecord, FinishForwardInput, ForwardCounts, ForwardProgress, ForwardRecord, ForwardState, ForwardsPort } from './store/forwards.js';
export type { HeldPayRecord, LedgerPort } from './store/ledger.js';
export type { MarketPort } from './store/market.js';
export type { NodesPort, RegisterNodeInput } from './store/nodes.js';
export type { Page } from './store/page.js';
export type { NewPeer, PeerExchangeOutcome, PeerRecord, PeersPort } from './store/peers.js';
export type { ProviderEarningRecord, ProviderPort } from './store/provider.js';
export type { FinishedRun, FinishedRunsPage, RunCursor, RunHistoryPort } from './store/runs.js';
export type { ReputationPort, ReputationRecord } from './store/reputation.js';
export type { TokensPort } from './store/tokens.js';
export type { VerificationPort } from './store/verification.js';

export interface Store extends TokensPort, JobsPort, AttemptsPort, NodesPort, ProviderPort, LedgerPort, MarketPort, VerificationPort, ReputationPort, CanaryPort, ChallengePort, HistoryPort, BlobsPort, JobBlobsPort, E2eKeysPort, ClusterPort, PeersPort, ForwardsPort, RunHistoryPort {
  readonly dialect: 'sqlite' | 'postgres';
  /** Apply pending numbered migrations. Idempotent. */
  migrate(): Promise<void>;
  /**
   * Resolves once every commit made so far is on disk. Answers wait for it, so nobody is shown state a power cut
   * could take back (a SQLite file flushes its WAL off the event loop; elsewhere commits are durable when they return).
   */
  synced(): Promise<void>;
  close(): Promise<void>;
}
