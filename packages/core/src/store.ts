/**
 * The Store port: durable state of the coordinator, in domain verbs. One Kysely implementation serves
 * SQLite and PostgreSQL (packages/coordinator/src/store). Every method that changes a job, an attempt or a
 * node writes its event rows in the same transaction. Methods that take a `decide` callback run it inside
 * the transaction on the freshly read job, so the state change and its cause commit together.
 */
import type { JobState, LogEntry, NodeAdminState, NodeAdvertisement, NodeStatus, OutputFile } from '@gpux/protocol';
import type { Asset } from '@gpux/protocol';
import type { NewTransfer } from './market/ledger.js';
import type {
  AskRecord,
  LedgerTotals,
  PayoutRecord,
  PayoutState,
  PricePointRecord,
  StakeRecord,
  TransferRecord,
  WalletEntryRecord,
} from './market/records.js';
import type { QueueStanding } from './scheduler/fairness.js';
import type {
  AttemptRecord,
  EquivocationRecord,
  EventRecord,
  FinishAttemptInput,
  JobRecord,
  NewJob,
  NodeRecord,
  NodeStatsRecord,
  Placement,
  Role,
  StoredLogEntry,
  TokenRecord,
  EnrollmentRecord,
  TransitionDecider,
} from './records.js';

export interface Page<T> {
  items: T[];
  /** Opaque; pass back to get the next page. null on the last page. */
  nextCursor: string | null;
}

export interface LostAttempt {
  attemptId: string;
  jobId: string;
  nodeId: string;
  /** The job's state after the loss: queued (will retry), failed (out of retries) or cancelled. */
  jobState: JobState;
  /** How the attempt ended: lost (absent: lost), or cancelled when its job's cancel grace ran out. */
  outcome?: 'lost' | 'cancelled';
}

/** Store.failQueueTimeouts's question. `reason` runs before each job's transaction (it may be slow, never inside a write lock). */
export interface QueueTimeoutInput {
  now: number;
  defaultTimeoutSeconds: number;
  limit: number;
  reason: (job: JobRecord, waitedSeconds: number) => string;
}

export interface RegisterNodeInput {
  id: string;
  publicKey: string;
  advertisement: NodeAdvertisement;
  now: number;
  providerId?: string;
  enrollment?: { id: string; maxProviderNodes: number };
}

/** What a node wrote into an attempt through the budgeted verbs (issue 10 item 5). */
export interface AttemptWriteResult {
  /** ok: written within the budget; gone: the attempt is no longer assigned/running (nothing stored); missing: no such attempt. */
  status: 'ok' | 'gone' | 'missing';
  /** New rows stored (repeats of a stored (attempt, seq) are neither stored nor counted). */
  accepted: number;
  /** Rows past the budget, not stored. */
  dropped: number;
  /** The budget is spent (by this write or before): later writes are dropped too. */
  truncated: boolean;
}

/** One page of a job's history: its own events (state, money) and the node-reported ones in their range. */
export interface JobHistoryPage {
  /** Oldest first. */
  events: EventRecord[];
  /** Older events exist: read them with before = this; null on the oldest page. */
  moreBefore: number | null;
  /** Node-reported events in this page's range left out (more than the limit). */
  nodeElided: number;
}

export interface Store {
  readonly dialect: 'sqlite' | 'postgres';
  /** Apply pending numbered migrations. Idempotent. */
  migrate(): Promise<void>;
  close(): Promise<void>;

  // ---- tokens ----
  createToken(token: TokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenRecord | undefined>;
  countTokens(role?: Role): Promise<number>;
  getToken(id: string): Promise<TokenRecord | undefined>;
  /** Oldest first (by id), keyset-paginated; of one account or all. */
  listTokens(q: { accountId?: string; limit: number; cursor?: string }): Promise<Page<TokenRecord>>;
  /** Set revokedAt (kept when already revoked). undefined when there is no such token. */
  revokeToken(id: string, now: number): Promise<TokenRecord | undefined>;

  // ---- node enrollments (tokens that only register nodes) ----
  createEnrollment(e: EnrollmentRecord): Promise<void>;
  findEnrollmentByHash(hash: string): Promise<EnrollmentRecord | undefined>;
  getEnrollment(id: string): Promise<EnrollmentRecord | undefined>;
  /** Oldest first (by id), keyset-paginated, each with how many live (not removed) nodes registered with it. */
  listEnrollments(q: { accountId?: string; limit: number; cursor?: string }): Promise<Page<EnrollmentRecord & { nodes: number }>>;
  /**
   * Revoke (revokedAt kept when already set). With removeNodes, every node registered with it and not yet
   * removed gets removedAt = now and goes offline (event node.removed), and the leases of their active
   * attempts are cut to expire (expireLeases then ends them as lost), in the same transaction. `nodes`: its
   * live nodes after the call.
   */
  revokeEnrollment(id: string, now: number, removeNodes: boolean): Promise<{ enrollment: EnrollmentRecord; removedNodeIds: string[]; nodes: number } | undefined>;
  /** Live (not removed) nodes of one provider account. */
  countProviderNodes(providerId: string): Promise<number>;
  /** Enrollments of the account that still register nodes: not revoked, not expired at `now`. */
  countLiveEnrollments(accountId: string, now: number): Promise<number>;

  // ---- jobs ----
  /**
   * Insert a queued job and its `job.submitted` event in one transaction. When (buyerId, idempotencyKey)
   * already exists, returns the existing job with created=false and writes nothing. With job.maxQueued, a
   * buyer who already has that many queued jobs gets GpuxError LIMIT_EXCEEDED and nothing is written or held.
   */
  submitJob(job: NewJob): Promise<{ job: JobRecord; created: boolean }>;
  getJob(id: string): Promise<JobRecord | undefined>;
  /** The jobs among `ids` that exist, in no particular order: one query, for callers that would otherwise loop getJob. */
  getJobs(ids: readonly string[]): Promise<JobRecord[]>;
  /** Newest first. */
  listJobs(q: { buyerId?: string; states?: JobState[]; limit: number; cursor?: string }): Promise<Page<JobRecord>>;
  /**
   * Cancel: a queued job becomes cancelled at once (stopAttemptIds empty). An assigned or running job
   * gets cancelRequested=true and stays in its state until its attempt ends; its active attempt ids are
   * returned. A finished job: throws GpuxError JOB_FINISHED. Unknown: JOB_NOT_FOUND.
   * Its active attempts get stopBy = now + graceMs (default CANCEL_GRACE_MS; a repeated request keeps the
   * first): they are charged only up to stopBy, no heartbeat leases them past it, and expireLeases then
   * ends each still active as cancelled, whether or not its node answers.
   */
  requestCancel(jobId: string, now: number, graceMs?: number): Promise<{ job: JobRecord; stopAttemptIds: string[] }>;
  /**
   * Queued jobs with runAfter null or <= now and no cancel request, oldest first (uses an index). Both claims
   * return each job's scheduling view: its spec with command, args, env, inputs and labels empty (the pass
   * never reads them, and they are most of a large spec; specs never change, so getJob has them).
   */
  claimQueued(now: number, limit: number): Promise<JobRecord[]>;
  /**
   * The fair-share claim (core scheduler/fairness.ts): queued jobs grouped into (buyer, priority class)
   * pairs, at most `limit` pairs starting at the first buyer >= `fromBuyer` (wrapping around), the oldest
   * ceil(limit / pairs) due jobs of each (runAfter null or <= now, no cancel request); then the shares left
   * unused, split among the pairs that filled theirs, in one more round. Indexed per pair.
   */
  claimQueuedFair(now: number, limit: number, fromBuyer?: string): Promise<JobRecord[]>;
  /** A queued job's standing for explain (fairQueuePosition turns it into a position); undefined if not queued. */
  queueStanding(jobId: string, now: number): Promise<QueueStanding | undefined>;
  /**
   * Queue timeouts (issue 10 item 4): queued jobs past their queue deadline (when they entered the queue +
   * spec.queueTimeoutSeconds, else `defaultTimeoutSeconds`) fail, each in its own transaction: state failed,
   * `reason(job, waitedSeconds)` in job.error, events job.queue_timeout and job.failed, the escrow released
   * to the buyer. At most `limit` jobs per call (the caller repeats while it gets `limit`); indexed.
   */
  failQueueTimeouts(q: QueueTimeoutInput): Promise<JobRecord[]>;
  /**
   * Write a scheduling pass in one transaction: per placement, insert the attempt (state assigned, lease),
   * move the job to assigned, bump attemptCount, set currentAttemptId, write `job.assigned`. A placement
   * whose job is no longer queued is skipped. Returns the attempts written. The members of a gang
   * (placements with `gang`, same job) are written together; currentAttemptId is the leader's (rank 0).
   * A gang member's end moves the job only when it fails (the job moves as its decider says and the other
   * active members are ended as cancelled) or when it is the last member to succeed.
   */
  assign(placements: Placement[], now: number): Promise<AttemptRecord[]>;

  // ---- attempts ----
  getAttempt(id: string): Promise<AttemptRecord | undefined>;
  listAttempts(jobId: string): Promise<AttemptRecord[]>;
  /** Attempts in state assigned or running, of one node or of all nodes. */
  listActiveAttempts(nodeId?: string): Promise<AttemptRecord[]>;
  /**
   * assigned -> running (job too, startedAt set). Idempotent when already running. Returns whether the
   * job has a cancel request. Throws ATTEMPT_NOT_FOUND if the attempt is not this node's, CONFLICT if it
   * is no longer active.
   */
  startAttempt(attemptId: string, nodeId: string, now: number): Promise<{ attempt: AttemptRecord; job: JobRecord }>;
  /**
   * End an attempt with the node's signed result. Idempotent: the same report again returns
   * duplicate=true; a different report for an ended attempt throws CONFLICT. `decide` picks the job's
   * next state. Outputs are stored with the attempt.
   */
  finishAttempt(input: FinishAttemptInput, decide: TransitionDecider): Promise<{ attempt: AttemptRecord; job: JobRecord; duplicate: boolean }>;
  getOutputs(attemptId: string): Promise<OutputFile[]>;

  // ---- logs ----
  /** Append entries; an entry whose (attemptId, seq) exists is ignored. Returns how many were new. */
  appendLogs(jobId: string, attemptId: string, entries: LogEntry[]): Promise<number>;
  /** Entries with cursor > after, in cursor order; at most `limit`, and at most `maxBytes` of data (but always one entry when there is one). */
  readLogs(jobId: string, after: number, limit: number, maxBytes?: number): Promise<StoredLogEntry[]>;
  /**
   * A node's log batch under the attempt's budget, in one transaction with the attempt row locked (two
   * concurrent batches cannot both pass the budget). Entries past maxBytes/maxEntries are dropped; the first
   * overflow stores one `system` marker entry (seq `markerSeq`) whose text says what was dropped, updated on
   * later overflows. Nothing is stored for an attempt that is not assigned/running (gone) or unknown (missing).
   */
  writeAttemptLogs(q: { attemptId: string; entries: LogEntry[]; maxBytes: number; maxEntries: number; markerSeq: number; now: number }): Promise<AttemptWriteResult>;
  /**
   * Node-reported job events under the attempt's budget (same transaction rule as writeAttemptLogs): past
   * maxEvents they are dropped, and the first overflow writes one `attempt.events_dropped` event.
   */
  writeAttemptEvents(q: { attemptId: string; events: { type: string; at: number; data: Record<string, unknown> }[]; maxEvents: number; now: number }): Promise<AttemptWriteResult>;
  /** Append events an attempt reported (image pulls) to the job's history, in order, with attemptId in their data. Returns how many. */
  appendJobEvents(jobId: string, attemptId: string, events: { type: string; at: number; data: Record<string, unknown> }[]): Promise<number>;

  // ---- nodes ----
  /**
   * Insert or update (same id = same key) a node: status online, lastHeartbeatAt = now, event node.registered.
   * providerId binds an unowned node to that account; a node owned by another account: FORBIDDEN. With an
   * enrollment (issue 10 item 2), checked in the same transaction with the enrollment row locked: a revoked
   * or expired enrollment registers only a live node that is already its own (UNAUTHORIZED otherwise); a new
   * node past the enrollment's maxNodes or the provider's maxProviderNodes is LIMIT_EXCEEDED; the node
   * records the enrollment and a removed node is restored; and a GPU uuid that a live node of another
   * provider advertises is CONFLICT (naming the uuid).
   */
  registerNode(node: RegisterNodeInput): Promise<NodeRecord>;
  getNode(id: string): Promise<NodeRecord | undefined>;
  /** Ordered by id. */
  listNodes(q: { status?: NodeStatus; limit: number; cursor?: string }): Promise<Page<NodeRecord>>;
  /**
   * A heartbeat: lastHeartbeatAt = now, status online (event node.online if it was offline), and every
   * active attempt of the node gets leaseExpiresAt. Returns the active attempts whose job has a cancel request.
   */
  heartbeat(nodeId: string, now: number, leaseExpiresAt: number): Promise<{ cancelAttemptIds: string[] }>;
  setNodeAdminState(nodeId: string, state: NodeAdminState, now: number): Promise<NodeRecord>;
  /** Online nodes whose last heartbeat is older than `cutoff` become offline (event node.offline). Returns their ids. */
  markStaleNodesOffline(cutoff: number, now: number): Promise<string[]>;
  /**
   * Active attempts whose lease expired before `now` become lost (event attempt.lost), each in a transaction of its own (job, then attempt: the store's lock order); `decide` moves each
   * job on (requeue with backoff, fail, or cancel). At most `limit` per call.
   */
  expireLeases(now: number, decide: TransitionDecider, limit: number): Promise<LostAttempt[]>;
  /** On coordinator start: push every active lease to at least `minExpiresAt` so a restart expires nothing healthy. */
  extendActiveLeases(minExpiresAt: number): Promise<number>;

  /**
   * Node track records changed at or after `since` (every one for 0), with the node's admin state. The store
   * updates them in the transactions that end attempts (finishAttempt, expireLeases) and mark nodes offline,
   * and auto-cordons a node there (event node.auto_cordoned) when its failures cross the policy's threshold.
   */
  listNodeStats(since: number): Promise<NodeStatsRecord[]>;

  // ---- money: the ledger (core market/ledger.ts) ----
  // Job money moves inside the job verbs above, in their transactions: submitJob holds job.payment.held
  // from the buyer's wallet (INSUFFICIENT_FUNDS, nothing written, when short); requestCancel of a queued job
  // releases the escrow; assign checks and locks stake and records each attempt's price; every attempt end
  // settles the attempt's runtime (not a lost attempt's unsettled part), then a finished job's escrow is
  // released to the buyer and a requeued job's escrow is topped up to payment.held (the job fails instead
  // when the wallet cannot cover it).

  /**
   * Post one balanced transfer. Throws INSUFFICIENT_FUNDS (message: the account, what it has, what it
   * needs, the shortfall) when an account other than the world would go below zero; nothing is written.
   */
  postTransfer(t: NewTransfer): Promise<TransferRecord>;
  getBalance(account: string, asset: Asset): Promise<number>;
  /** Postings to wallet:<accountId>, newest first. */
  walletHistory(accountId: string, q: { asset?: Asset; limit: number; cursor?: string }): Promise<Page<WalletEntryRecord>>;
  /** What the buyer's unfinished jobs hold in escrow, per asset (assets with nothing held are absent). */
  escrowOfBuyer(buyerId: string): Promise<Partial<Record<Asset, number>>>;
  /** Transfers newest first, optionally those of one job or touching one account. */
  listTransfers(q: { limit: number; cursor?: string; jobId?: string; account?: string }): Promise<Page<TransferRecord>>;
  /** The job's transfers, oldest first (its bill). */
  jobTransfers(jobId: string): Promise<TransferRecord[]>;
  ledgerTotals(): Promise<LedgerTotals[]>;
  /**
   * Settle running priced attempts whose last settlement is at least `minIntervalMs` of runtime old, up to
   * `now` (one chunk each). At most `limit` attempts per call. Returns how many were settled.
   */
  settleRunning(now: number, minIntervalMs: number, limit: number): Promise<number>;

  // ---- payouts (the settlement adapter's queue) ----
  /** wallet → payout:<id> (INSUFFICIENT_FUNDS when short), state pending. */
  requestPayout(p: { id: string; accountId: string; asset: Asset; amount: number; destination: string; adapter: string; now: number }): Promise<PayoutRecord>;
  /** pending → completed: payout → world. NOT_FOUND; CONFLICT when not pending. */
  completePayout(id: string, reference: string, now: number): Promise<PayoutRecord>;
  /** pending → rejected: the amount returns to the wallet. */
  rejectPayout(id: string, reason: string, now: number): Promise<PayoutRecord>;
  getPayout(id: string): Promise<PayoutRecord | undefined>;
  /** Newest first. */
  listPayouts(q: { accountId?: string; state?: PayoutState; limit: number }): Promise<PayoutRecord[]>;

  // ---- stake (always USDC) ----
  getStake(nodeId: string): Promise<StakeRecord>;
  /** staked and locked of every node with stake or locks (to rebuild the capacity index). */
  listStakes(): Promise<{ nodeId: string; staked: number; locked: number }[]>;
  /** wallet:<provider> → stake:<node>. NODE_NOT_FOUND; FORBIDDEN unless the node's provider is providerId. */
  addStake(q: { nodeId: string; providerId: string; amount: number; now: number }): Promise<StakeRecord>;
  /**
   * stake:<node> → unbonding:<node>, released to the provider's wallet at releaseAt. Only free stake (staked
   * − locked) unbonds: INSUFFICIENT_FUNDS otherwise. FORBIDDEN unless the node's provider is providerId.
   */
  unbondStake(q: { id: string; nodeId: string; providerId: string; amount: number; releaseAt: number; now: number }): Promise<StakeRecord>;
  /** Unbondings due at `now` → their provider's wallet (kind stake.release). Returns how many. */
  releaseUnbonded(now: number, limit: number): Promise<number>;
  /**
   * Move stake from the node to others by the trust rules (kind slash): at most the node's staked balance
   * in all (the legs are cut in order when it is short). Returns the transfer.
   */
  slash(q: { nodeId: string; to: { account: string; amount: number }[]; reason: string; jobId?: string; now: number }): Promise<TransferRecord>;

  // ---- equivocation (issue 11) ----
  /**
   * In one transaction, if the ended attempt's stored commitment differs from `second` (already verified):
   * store both as evidence, write node.equivocated, slash the node's whole stake to the treasury and ban
   * the node (removed, may not register again; its active leases end now). The same pair again: null.
   */
  recordEquivocation(q: { attemptId: string; nodeId: string; commitment: string; signature: string; now: number }): Promise<EquivocationRecord | null>;
  /** The node's equivocations, newest first. */
  listEquivocations(nodeId: string): Promise<EquivocationRecord[]>;

  // ---- asks and the price index ----
  /** Set (price) or remove (null) a provider's ask for a class. Returns the provider's asks. */
  setAsk(providerId: string, marketClass: string, pricePerGpuHour: number | null, now: number): Promise<AskRecord[]>;
  listAsks(providerId?: string): Promise<AskRecord[]>;
  /** Append one epoch of index prices. */
  recordPrices(points: PricePointRecord[]): Promise<void>;
  /** The latest point of every class. */
  latestPrices(): Promise<PricePointRecord[]>;
  /** Points oldest first: of one class or all, at or after `sinceAt`, the newest `limit`. */
  priceHistory(q: { marketClass?: string; sinceAt?: number; limit: number }): Promise<PricePointRecord[]>;

  // ---- history and counts ----
  listEvents(subject: 'job' | 'node', subjectId: string, limit: number): Promise<EventRecord[]>;
  /**
   * A page of a job's history, newest first by page: the newest `limit` events with seq < `before` that are
   * not of `nodeTypes` (the job's state and money events, which node-reported ones cannot crowd out), and
   * the newest `limit` events of `nodeTypes` in the same seq range.
   */
  listJobHistory(jobId: string, q: { before?: number; limit: number; nodeTypes: readonly string[] }): Promise<JobHistoryPage>;
  countJobsByState(): Promise<Record<JobState, number>>;
}
