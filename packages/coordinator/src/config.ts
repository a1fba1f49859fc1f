/** Coordinator configuration: parsed once at start from the environment (and CLI overrides), pure and tested. */
import { isIP } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { type ChallengeTolerance, DEFAULT_AUDIT_BUDGET_BPS, DEFAULT_NODE_STATS_POLICY, GpuxError } from '@gpux/core';
import { REGION_NAME_PATTERN } from '@gpux/protocol';
import { type BlobConfig, loadBlobConfig } from './blobs/config.js';
import type { StorePolicies } from './store/index.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface CoordinatorConfig {
  /** GPUX_DB. `sqlite:<path>` or `postgres://…`. Default `sqlite:<dataDir>/coordinator.db`. */
  db: string;
  /** GPUX_DATA_DIR. Default `$GPUX_HOME/coordinator`; GPUX_HOME defaults to `~/.gpux`. */
  dataDir: string;
  /** GPUX_HOST. Interface to listen on. Default 127.0.0.1. */
  host: string;
  /** GPUX_PORT. TCP port; 0 picks a free one. Default 7070. */
  port: number;
  /** GPUX_HEARTBEAT_MS. How often agents heartbeat. Default 5000. */
  heartbeatIntervalMs: number;
  /** GPUX_LEASE_TTL_MS. An attempt is lost when its lease is not renewed for this long. Default 3 × heartbeat. */
  leaseTtlMs: number;
  /** GPUX_NODE_OFFLINE_AFTER_MS. A node with no heartbeat for this long is offline. Default 3 × heartbeat. */
  nodeOfflineAfterMs: number;
  /** GPUX_SCHEDULE_PASS_MS. Period of the scheduling pass (it also runs at once when kicked). Default 250. */
  schedulePassIntervalMs: number;
  /** GPUX_SCHEDULE_BATCH. Queued jobs taken per scheduling pass. Default 1000. */
  scheduleBatchSize: number;
  /** GPUX_MAX_QUEUED_PER_BUYER. Most queued jobs one buyer may have; beyond it a submit gets 429 LIMIT_EXCEEDED (operators are exempt). Default 10000. */
  maxQueuedPerBuyer: number;
  /** GPUX_EXPIRY_PASS_MS. Period of the node-offline and lease-expiry pass. Default 1000. */
  expiryPassIntervalMs: number;
  /**
   * GPUX_LEADER_LEASE_MS. Replicas on one PostgreSQL (issue 14): the leader renews its lease every third of this;
   * when it dies, another replica leads within this plus a third. Default 10000.
   */
  leaderLeaseMs: number;
  /** GPUX_INDEX_RESYNC_MS. Replicas on PostgreSQL rebuild their capacity index from the store this often (a lost message costs at most this). Default 60000. */
  indexResyncMs: number;
  /** GPUX_BODY_LIMIT_BYTES. Largest request body. Default 4 MiB. */
  bodyLimitBytes: number;
  /** GPUX_RESULT_BODY_LIMIT_BYTES. Largest result report (it carries inline outputs). Default 16 MiB. */
  resultBodyLimitBytes: number;
  /** GPUX_LOG_LEVEL. fatal, error, warn, info, debug, trace or silent. Default info. */
  logLevel: LogLevel;
  /** GPUX_RETRY_BASE_BACKOFF_MS. First retry delay after a lost attempt; doubles per retry. Default 2000. */
  retryBaseBackoffMs: number;
  /** GPUX_RETRY_MAX_BACKOFF_MS. Cap of the retry delay. Default 300000 (5 min). */
  retryMaxBackoffMs: number;
  /** GPUX_NODE_STATS_HALF_LIFE_MS. Half-life of a node's track record (successes, failures, outages decay). Default 3 days. */
  nodeStatsHalfLifeMs: number;
  /** GPUX_CORDON_FAILURES. Infrastructure failures within the cordon window that auto-cordon a node. Default 5. */
  cordonFailures: number;
  /** GPUX_CORDON_WINDOW_MS. The window those failures are counted in. Default 3600000 (1 h). */
  cordonWindowMs: number;
  /** GPUX_PUBLIC_URL. The URL clients reach the coordinator at (shown in OpenAPI). Default: none, the listen address. */
  publicUrl: string | null;
  /**
   * GPUX_MARKET. `on`: jobs are paid (escrow, settlement, stake, the price index). `off`: a private cluster
   * where jobs are free and nodes need no stake. Default on.
   */
  market: boolean;
  /** GPUX_TREASURY_FEE_BPS. The treasury's share of every charge, basis points. Default 500 (5%). */
  treasuryFeeBps: number;
  /** GPUX_MARKET_EPOCH_MS. How often the price index moves. Default 60000. */
  marketEpochMs: number;
  /** GPUX_MARKET_TARGET_BPS. Utilization the index steers to, basis points. Default 8000. */
  marketTargetBps: number;
  /** GPUX_MARKET_MAX_STEP_BPS. Most the index moves in one epoch, basis points. Default 1250. */
  marketMaxStepBps: number;
  /** GPUX_SETTLE_CHUNK_MS. Running attempts settle with their provider this often. Default 300000 (5 min). */
  settleChunkMs: number;
  /** GPUX_UNBOND_DELAY_MS. Unbonded stake returns after this long. Default 14 days (the 7-day dispute window + 7 days). */
  unbondDelayMs: number;
  /**
   * GPUX_CANCEL_GRACE_MS. After a running job's cancel is requested, how long its node has to stop it: the
   * attempt is charged up to the cancel plus this, then ends as cancelled even if the node never answers.
   * Default 30000 (30 s).
   */
  cancelGraceMs: number;
  /**
   * GPUX_RESULT_GRACE_MS. How long past a running attempt's start + its job's timeoutSeconds the coordinator
   * waits for the result; then it ends the attempt as lost (the node held it without finishing it) and the
   * job retries elsewhere. An assigned attempt not started within this plus one lease TTL ends alike. Default 60000.
   */
  resultGraceMs: number;
  /**
   * GPUX_QUEUE_TIMEOUT_S. Longest a job waits queued (from submission, or from its last requeue) before it
   * fails with the reason and its escrow returns, when its spec sets no queueTimeoutSeconds. Default 86400 (1 day).
   */
  queueTimeoutSeconds: number;
  /**
   * GPUX_E2E_KEY_WAIT_S. Longest an assigned attempt of an encrypted job waits for its data key (released by the
   * buyer's client) before it ends unstarted, at no cost to the node, and the job retries or fails. Default 600.
   */
  e2eKeyWaitSeconds: number;
  /** GPUX_DEV_MINT. `1`: any account may mint test funds to itself (a dev network). Default off. */
  devMint: boolean;
  /**
   * GPUX_METRICS. Who may read GET /metrics: `operator` (an operator bearer token, or the metrics token below)
   * or `open` (anyone who reaches the port: only behind a firewall or a separate scrape network). Default operator.
   */
  metrics: 'operator' | 'open';
  /** GPUX_METRICS_TOKEN. A secret (16+ characters) that reads /metrics and nothing else, for a scraper. Default none. */
  metricsToken: string | null;
  /** GPUX_ATTEMPT_LOG_MAX_BYTES. Log bytes one attempt may store; past it one marker entry says what was dropped. Default 64 MiB. */
  attemptLogMaxBytes: number;
  /** GPUX_ATTEMPT_LOG_MAX_ENTRIES. Log entries one attempt may store (same marker). Default 200000. */
  attemptLogMaxEntries: number;
  /** GPUX_ATTEMPT_MAX_EVENTS. Job events (image pulls) one attempt may report; later ones are dropped. Default 1000. */
  attemptMaxEvents: number;
  /** GPUX_LOG_PAGE_MAX_BYTES. Log data in one GET /v1/jobs/:id/logs page (at least one entry). Default 1 MiB. */
  logPageMaxBytes: number;
  /** GPUX_LOG_POLLS_PER_TOKEN. Concurrent log long-polls (waitMs > 0) per bearer token; more: 429 LIMIT_EXCEEDED. Default 32. */
  logPollsPerToken: number;
  /** GPUX_WORK_POLLS_PER_NODE. Concurrent work long-polls per node; more: 429 LIMIT_EXCEEDED. Default 2. */
  workPollsPerNode: number;
  /** GPUX_REGISTER_RATE_PER_MIN. Node registrations (new or again) per provider account per minute; a burst of as many is allowed. Default 30. */
  registerRatePerMin: number;
  /** GPUX_MAX_NODES_PER_PROVIDER. Live nodes one provider account may register. Default 1000. */
  maxNodesPerProvider: number;
  /**
   * GPUX_VERIFY. `on`: a paid job's provider pay is held until its verification step passes or its dispute
   * window closes (audits by re-execution, referees, penalties; TRUST.md). Default on when the market is on, else off.
   */
  verify: boolean;
  /** GPUX_DISPUTE_WINDOW_S. How long a buyer may dispute a result, and pay is held when it was not audited. Default 604800 (7 days), for every tier for now. */
  disputeWindowSeconds: number;
  /** GPUX_AUDIT_FLOOR_BPS. The open tier's audit floor p_floor, basis points (1000 = 10%, TRUST.md). Default 1000. */
  auditFloorBps: number;
  /**
   * GPUX_DISPUTE_BOND_BPS. A buyer's dispute bond as a share of what the job was charged, basis points (10000 =
   * 1×): paid to the node if the referee run sides with it, returned if the result was wrong. Default 10000.
   */
  disputeBondBps: number;
  /** GPUX_DISPUTE_BOND_MIN. The least bond a dispute takes, minor units (6 decimals), so no dispute is free. Default 100000 (0.1). */
  disputeBondMin: number;
  /**
   * GPUX_CANARY_RATE. Probability that a buyer's job ending with a result draws a canary (a known-answer job
   * from the catalog, paid from the treasury), 0 to 1; 0 disables issuing. Default 0.01 (TRUST.md: about 1%).
   */
  canaryRate: number;
  /** GPUX_CANARY_CATALOG_SIZE. Known answers kept for canaries, newest first. Default 1000. */
  canaryCatalogSize: number;
  /**
   * GPUX_AUDIT_BUDGET_BPS. The share of the treasury's fee income that audits, referee runs and canaries may
   * spend, basis points (core trust/audit-budget.ts; money put straight into the treasury adds to it). A
   * check run past it is not funded: the job is labelled unaudited (reason audit-budget). Default 10000 (all).
   */
  auditBudgetBps: number;
  /**
   * GPUX_CHALLENGE. `required`: a node takes no job until it passes the proof-of-hardware challenge (a timed,
   * checked computation, issue 12), and a failed or timed-out one blocks dispatch again. `off`: no challenge
   * (a private cluster; the node's proof reads 'skipped'). Default required when the market is on, else off.
   */
  challenge: 'required' | 'off';
  /** GPUX_CHALLENGE_RECHECK_MS. Mean of the random (exponential) interval between re-checks of a proven node. Default 86400000 (24 h). */
  challengeRecheckMs: number;
  /** GPUX_CHALLENGE_RETRY_MS. After a failed or timed-out challenge, when the next one is issued. Default 600000 (10 min). */
  challengeRetryMs: number;
  /**
   * Tests and benches only (never from the environment): force the challenge's matrix size, compute target or
   * product count, and the class tolerance (start-up allowance, slowdown), so a run fits a shared CPU.
   */
  challengeSizing?: { n?: number; targetComputeMs?: number; maxProducts?: number; tolerance?: Partial<ChallengeTolerance> };
  /**
   * GPUX_TLS_CERT_FILE and GPUX_TLS_KEY_FILE. PEM certificate (chain) and private key: set both and the coordinator
   * serves HTTPS itself, re-reading them when either changes (tls.ts). Both null: plain HTTP. Default none.
   */
  tlsCertFile: string | null;
  tlsKeyFile: string | null;
  /**
   * GPUX_TRUST_PROXY. Comma-separated IPs or CIDRs of reverse proxies whose X-Forwarded-For (and -Proto, -Host)
   * is believed: a request from one of them is seen as from the address it forwards. Default none: the headers
   * are ignored and the client is the socket's peer.
   */
  trustProxy: string[];
  /**
   * GPUX_AUTH_FAILURES_PER_MINUTE. Failed authentications (bad bearer token, enrollment token or node signature)
   * one client address may make per minute; past them its authenticated requests get 429 RATE_LIMITED with
   * Retry-After until the bucket refills. 0 turns the limit off. Default 30.
   */
  authFailuresPerMinute: number;
  /**
   * GPUX_COORDINATOR_KEY_FILE. The coordinator's ed25519 key chain (issue 19: it seals every order agents act on).
   * Made on first start; replicas on one PostgreSQL share it. Default `<dataDir>/coordinator-key.json`.
   */
  coordinatorKeyFile: string;
  /** The blob store (GPUX_BLOB_*, GPUX_S3_*; blobs/config.ts). An override's fields are merged over the parsed ones. */
  blobs: BlobConfig;
  /**
   * GPUX_REGION. This coordinator's region name in a federation (issue 15): 1-32 characters of a-z, 0-9 and -.
   * Its identity is the coordinator key; peers see the name in its summaries. Default `local`.
   */
  region: string;
  /** GPUX_PEER_SUMMARY_MS. How often the leader exchanges signed summaries with every peer region. Default 5000. */
  peerSummaryMs: number;
  /**
   * GPUX_FORWARD (on/off). Forward jobs to peer regions by the routing rules (issue 15). Default on; off: routing is
   * advice only (explain, --dry-run) and nothing leaves this region.
   */
  forward: boolean;
  /**
   * GPUX_PREDICTIONS (on/off). Predict run times from the network's finished runs (issue 17) and show them with jobs
   * (`gpux job get`, explain, the dashboard). Default on; off: no prediction is made or shown.
   */
  predictions: boolean;
  /**
   * GPUX_PREDICTIONS_SCHEDULE (on/off). With predictions on, let them drive placement (issue 17): a reservation for the
   * first job of a pass that does not fit, backfill only by jobs predicted to end before it, shorter predicted work
   * first within a priority class (aged). Default on; off: predictions are shown but the engine places as without them.
   */
  predictionsSchedule: boolean;
  /**
   * GPUX_PG_NAMED_STATEMENTS (on/off). On PostgreSQL, name the store's statements so each connection parses and plans
   * them once (store/pg-prepared.ts). Default on; off sends every statement unnamed (a pooler that cannot keep
   * prepared statements across a session's transactions, such as PgBouncer before 1.21 in transaction mode).
   */
  pgNamedStatements: boolean;
  /** GPUX_FORWARD_AFTER_S. A job no node here can take within this long may go to a peer (constraints.maxQueueSeconds overrides it). Default 60. */
  forwardAfterSeconds: number;
  /** GPUX_FORWARD_POLL_MS. How often the leader asks each peer how the jobs it forwarded stand (logs, state). Default 1000. */
  forwardPollMs: number;
  /** GPUX_FORWARD_LEASE_MS. A forwarded attempt's lease at home, renewed by each answer: past it the job comes back home. Default 60000. */
  forwardLeaseMs: number;
  /** GPUX_PEER_CREDIT. Most (minor units, per asset) one peer may owe this region for the jobs it forwarded here. Default 1000 USDC (1e9). */
  peerCredit: number;
}

type Env = Record<string, string | undefined>;

/**
 * Bounds of the node-stats policy: a half-life from 1 min to 1 year, 1 to 10000 failures, a window from
 * 1 s to 30 days. Outside them decay or auto-cordon would be meaningless (0 divides; huge never fires).
 */
const NODE_STATS_LIMITS = {
  halfLifeMs: [60_000, 365 * 24 * 3_600_000],
  cordonFailures: [1, 10_000],
  cordonWindowMs: [1_000, 30 * 24 * 3_600_000],
} as const;

function invalid(name: string, value: string, form: string): never {
  throw new GpuxError('REQUEST_INVALID', `${name}=${JSON.stringify(value)} is invalid: expected ${form}`);
}

function int(env: Env, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return undefined;
  const v = raw.trim();
  if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) invalid(name, raw, `an integer from ${min} to ${max}`);
  return Number(v);
}

/** A switch written as one of two words (`[yes, no]`, e.g. on/off or 1/0); true/false are accepted too. */
function bool(env: Env, name: string, [yes, no]: [string, string]): boolean | undefined {
  const v = str(env, name)?.toLowerCase();
  if (v === undefined) return undefined;
  if (v === yes || v === 'true') return true;
  if (v === no || v === 'false') return false;
  return invalid(name, v, `${yes} or ${no}`);
}

/** A decimal fraction from 0 to 1 (a rate). */
function fraction(env: Env, name: string): number | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  if (!/^(0(\.\d+)?|1(\.0+)?|\.\d+)$/.test(v)) invalid(name, v, 'a number from 0 to 1, e.g. 0.01');
  return Number(v);
}

function str(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw.trim() === '' ? undefined : raw.trim();
}

/** The forms openStore accepts (store/index.ts parseDbUrl). */
/** Stake stays bonded this long past the dispute window (TRUST.md). */
const UNBOND_MARGIN_MS = 7 * 24 * 3_600_000;

const DB_FORM = 'sqlite:PATH, sqlite://PATH, a file path ending in .db, postgres://… or postgresql://…';
const isDbUrl = (s: string) => /^sqlite:.+/i.test(s) || /^postgres(ql)?:\/\/.+/i.test(s) || (/\.db$/i.test(s) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(s));

/** Check a finished config; overrides go through here too, so a bad value from the CLI is reported alike. */
function check(c: CoordinatorConfig): CoordinatorConfig {
  const positive: Array<keyof CoordinatorConfig> = [
    'heartbeatIntervalMs',
    'leaseTtlMs',
    'nodeOfflineAfterMs',
    'schedulePassIntervalMs',
    'scheduleBatchSize',
    'maxQueuedPerBuyer',
    'expiryPassIntervalMs',
    'leaderLeaseMs',
    'indexResyncMs',
    'bodyLimitBytes',
    'resultBodyLimitBytes',
    'retryBaseBackoffMs',
    'retryMaxBackoffMs',
    'nodeStatsHalfLifeMs',
    'cordonFailures',
    'cordonWindowMs',
    'marketEpochMs',
    'marketTargetBps',
    'marketMaxStepBps',
    'settleChunkMs',
    'unbondDelayMs',
    'cancelGraceMs',
    'resultGraceMs',
    'queueTimeoutSeconds',
    'e2eKeyWaitSeconds',
    'attemptLogMaxBytes',
    'attemptLogMaxEntries',
    'attemptMaxEvents',
    'logPageMaxBytes',
    'logPollsPerToken',
    'workPollsPerNode',
    'registerRatePerMin',
    'maxNodesPerProvider',
    'challengeRecheckMs',
    'challengeRetryMs',
    'peerSummaryMs',
    'forwardAfterSeconds',
    'forwardPollMs',
    'forwardLeaseMs',
  ];
  for (const k of positive) {
    const v = c[k];
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1) invalid(k, String(v), 'a positive integer');
  }
  if (!Number.isInteger(c.port) || c.port < 0 || c.port > 65535) invalid('port', String(c.port), 'an integer from 0 to 65535');
  if (!isDbUrl(c.db)) invalid('db', c.db, DB_FORM);
  if (!LOG_LEVELS.includes(c.logLevel)) invalid('logLevel', String(c.logLevel), LOG_LEVELS.join(', '));
  if (!Number.isInteger(c.treasuryFeeBps) || c.treasuryFeeBps < 0 || c.treasuryFeeBps > 5000) invalid('treasuryFeeBps', String(c.treasuryFeeBps), 'an integer from 0 to 5000');
  if (c.marketTargetBps > 10_000) invalid('marketTargetBps', String(c.marketTargetBps), 'at most 10000');
  for (const [k, [min, max]] of [
    ['nodeStatsHalfLifeMs', NODE_STATS_LIMITS.halfLifeMs],
    ['cordonFailures', NODE_STATS_LIMITS.cordonFailures],
    ['cordonWindowMs', NODE_STATS_LIMITS.cordonWindowMs],
  ] as const) {
    if (c[k] < min || c[k] > max) invalid(k, String(c[k]), `an integer from ${min} to ${max}`);
  }
  if (!Number.isSafeInteger(c.disputeBondBps) || c.disputeBondBps < 0 || c.disputeBondBps > 1_000_000) invalid('disputeBondBps', String(c.disputeBondBps), 'an integer from 0 to 1000000');
  if (!Number.isSafeInteger(c.disputeBondMin) || c.disputeBondMin < 1 || c.disputeBondMin > 10 ** 15) invalid('disputeBondMin', String(c.disputeBondMin), 'an integer from 1 to 10^15');
  if (!Number.isSafeInteger(c.disputeWindowSeconds) || c.disputeWindowSeconds < 1) invalid('disputeWindowSeconds', String(c.disputeWindowSeconds), 'a positive integer');
  if (!Number.isSafeInteger(c.auditFloorBps) || c.auditFloorBps < 1 || c.auditFloorBps > 10_000) invalid('auditFloorBps', String(c.auditFloorBps), 'an integer from 1 to 10000');
  if (!(c.canaryRate >= 0 && c.canaryRate <= 1)) invalid('canaryRate', String(c.canaryRate), 'a number from 0 to 1');
  if (!Number.isSafeInteger(c.canaryCatalogSize) || c.canaryCatalogSize < 1) invalid('canaryCatalogSize', String(c.canaryCatalogSize), 'a positive integer');
  if (c.challenge !== 'required' && c.challenge !== 'off') invalid('challenge', String(c.challenge), 'required or off');
  if (!Number.isInteger(c.auditBudgetBps) || c.auditBudgetBps < 0 || c.auditBudgetBps > 10_000) invalid('auditBudgetBps', String(c.auditBudgetBps), 'an integer from 0 to 10000');
  // TRUST.md: stake unbonds only after the longest dispute window plus 7 days, so a cheat found late still has stake to slash.
  if (c.verify && c.unbondDelayMs < c.disputeWindowSeconds * 1000 + UNBOND_MARGIN_MS) {
    invalid('unbondDelayMs', String(c.unbondDelayMs), `at least the dispute window plus 7 days (${c.disputeWindowSeconds * 1000 + UNBOND_MARGIN_MS} ms) while verification is on`);
  }
  // Half a pair would silently serve plain HTTP to an operator who meant TLS.
  if ((c.tlsCertFile === null) !== (c.tlsKeyFile === null)) {
    const [missing, set] = c.tlsCertFile === null ? ['GPUX_TLS_CERT_FILE', 'GPUX_TLS_KEY_FILE'] : ['GPUX_TLS_KEY_FILE', 'GPUX_TLS_CERT_FILE'];
    throw new GpuxError('REQUEST_INVALID', `${set} is set but ${missing} is not: set both (a PEM certificate and its private key) to serve HTTPS, or neither for plain HTTP`);
  }
  if (typeof c.coordinatorKeyFile !== 'string' || c.coordinatorKeyFile === '' || /[/\\]$/.test(c.coordinatorKeyFile)) {
    invalid('GPUX_COORDINATOR_KEY_FILE', String(c.coordinatorKeyFile), 'the path of a file (not a directory), e.g. /var/lib/gpux/coordinator-key.json');
  }
  if (typeof c.region !== 'string' || !REGION_NAME_PATTERN.test(c.region)) invalid('GPUX_REGION', String(c.region), 'a region name: 1-32 characters of a-z, 0-9 and -, starting and ending with a letter or digit, e.g. eu-west');
  if (c.leaseTtlMs <= c.heartbeatIntervalMs) invalid('leaseTtlMs', String(c.leaseTtlMs), `more than heartbeatIntervalMs (${c.heartbeatIntervalMs})`);
  return c;
}

/** Build the config: overrides win over the environment, which wins over the defaults. */
export function loadCoordinatorConfig(env: Env, overrides: Partial<CoordinatorConfig> = {}): CoordinatorConfig {
  const db = str(env, 'GPUX_DB');
  if (db !== undefined && !isDbUrl(db)) invalid('GPUX_DB', db, DB_FORM);
  const logLevel = str(env, 'GPUX_LOG_LEVEL');
  if (logLevel !== undefined && !LOG_LEVELS.includes(logLevel as LogLevel)) invalid('GPUX_LOG_LEVEL', logLevel, LOG_LEVELS.join(', '));
  const publicUrl = str(env, 'GPUX_PUBLIC_URL');
  if (publicUrl !== undefined && !/^https?:\/\/[^\s]+$/.test(publicUrl)) invalid('GPUX_PUBLIC_URL', publicUrl, 'an http:// or https:// URL');

  const home = str(env, 'GPUX_HOME') ?? join(str(env, 'HOME') ?? homedir(), '.gpux');
  const dataDir = overrides.dataDir ?? str(env, 'GPUX_DATA_DIR') ?? join(home, 'coordinator');
  const heartbeatIntervalMs = overrides.heartbeatIntervalMs ?? int(env, 'GPUX_HEARTBEAT_MS', 1) ?? 5000;
  const leaseTtlEnv = int(env, 'GPUX_LEASE_TTL_MS', 1);
  const offlineEnv = int(env, 'GPUX_NODE_OFFLINE_AFTER_MS', 1);
  const c: CoordinatorConfig = {
    db: db ?? `sqlite:${join(dataDir, 'coordinator.db')}`,
    dataDir,
    host: str(env, 'GPUX_HOST') ?? '127.0.0.1',
    port: int(env, 'GPUX_PORT', 0, 65535) ?? 7070,
    heartbeatIntervalMs,
    leaseTtlMs: leaseTtlEnv ?? 3 * heartbeatIntervalMs,
    nodeOfflineAfterMs: offlineEnv ?? 3 * heartbeatIntervalMs,
    schedulePassIntervalMs: int(env, 'GPUX_SCHEDULE_PASS_MS', 1) ?? 250,
    scheduleBatchSize: int(env, 'GPUX_SCHEDULE_BATCH', 1, 100_000) ?? 1000,
    maxQueuedPerBuyer: int(env, 'GPUX_MAX_QUEUED_PER_BUYER', 1, 10_000_000) ?? 10_000,
    expiryPassIntervalMs: int(env, 'GPUX_EXPIRY_PASS_MS', 1) ?? 1000,
    leaderLeaseMs: int(env, 'GPUX_LEADER_LEASE_MS', 300, 600_000) ?? 10_000,
    indexResyncMs: int(env, 'GPUX_INDEX_RESYNC_MS', 1000, 86_400_000) ?? 60_000,
    bodyLimitBytes: int(env, 'GPUX_BODY_LIMIT_BYTES', 1024) ?? 4 * 1024 * 1024,
    resultBodyLimitBytes: int(env, 'GPUX_RESULT_BODY_LIMIT_BYTES', 1024) ?? 16 * 1024 * 1024,
    logLevel: (logLevel as LogLevel | undefined) ?? 'info',
    retryBaseBackoffMs: int(env, 'GPUX_RETRY_BASE_BACKOFF_MS', 1) ?? 2000,
    retryMaxBackoffMs: int(env, 'GPUX_RETRY_MAX_BACKOFF_MS', 1) ?? 5 * 60_000,
    nodeStatsHalfLifeMs: int(env, 'GPUX_NODE_STATS_HALF_LIFE_MS', NODE_STATS_LIMITS.halfLifeMs[0], NODE_STATS_LIMITS.halfLifeMs[1]) ?? DEFAULT_NODE_STATS_POLICY.halfLifeMs,
    cordonFailures: int(env, 'GPUX_CORDON_FAILURES', NODE_STATS_LIMITS.cordonFailures[0], NODE_STATS_LIMITS.cordonFailures[1]) ?? DEFAULT_NODE_STATS_POLICY.cordonAfterFailures,
    cordonWindowMs: int(env, 'GPUX_CORDON_WINDOW_MS', NODE_STATS_LIMITS.cordonWindowMs[0], NODE_STATS_LIMITS.cordonWindowMs[1]) ?? DEFAULT_NODE_STATS_POLICY.cordonWindowMs,
    publicUrl: publicUrl ?? null,
    market: bool(env, 'GPUX_MARKET', ['on', 'off']) ?? true,
    treasuryFeeBps: int(env, 'GPUX_TREASURY_FEE_BPS', 0, 5000) ?? 500,
    marketEpochMs: int(env, 'GPUX_MARKET_EPOCH_MS', 1) ?? 60_000,
    marketTargetBps: int(env, 'GPUX_MARKET_TARGET_BPS', 1, 10_000) ?? 8000,
    marketMaxStepBps: int(env, 'GPUX_MARKET_MAX_STEP_BPS', 1, 5000) ?? 1250,
    settleChunkMs: int(env, 'GPUX_SETTLE_CHUNK_MS', 1) ?? 5 * 60_000,
    unbondDelayMs: int(env, 'GPUX_UNBOND_DELAY_MS', 1) ?? 14 * 24 * 3_600_000,
    cancelGraceMs: int(env, 'GPUX_CANCEL_GRACE_MS', 1, 24 * 3_600_000) ?? 30_000,
    resultGraceMs: int(env, 'GPUX_RESULT_GRACE_MS', 1, 24 * 3_600_000) ?? 60_000,
    devMint: bool(env, 'GPUX_DEV_MINT', ['1', '0']) ?? false,
    metrics: metricsAccess(env),
    metricsToken: metricsToken(env),
    queueTimeoutSeconds: int(env, 'GPUX_QUEUE_TIMEOUT_S', 1, 30 * 24 * 3600) ?? 86_400,
    e2eKeyWaitSeconds: int(env, 'GPUX_E2E_KEY_WAIT_S', 1, 7 * 24 * 3600) ?? 600,
    attemptLogMaxBytes: int(env, 'GPUX_ATTEMPT_LOG_MAX_BYTES', 1024, 2 ** 40) ?? 64 * 1024 * 1024,
    attemptLogMaxEntries: int(env, 'GPUX_ATTEMPT_LOG_MAX_ENTRIES', 1, 1e9) ?? 200_000,
    attemptMaxEvents: int(env, 'GPUX_ATTEMPT_MAX_EVENTS', 1, 1e6) ?? 1000,
    logPageMaxBytes: int(env, 'GPUX_LOG_PAGE_MAX_BYTES', 64 * 1024, 256 * 1024 * 1024) ?? 1024 * 1024,
    logPollsPerToken: int(env, 'GPUX_LOG_POLLS_PER_TOKEN', 1, 100_000) ?? 32,
    workPollsPerNode: int(env, 'GPUX_WORK_POLLS_PER_NODE', 1, 1000) ?? 2,
    registerRatePerMin: int(env, 'GPUX_REGISTER_RATE_PER_MIN', 1, 1_000_000) ?? 30,
    maxNodesPerProvider: int(env, 'GPUX_MAX_NODES_PER_PROVIDER', 1, 10_000_000) ?? 1000,
    // Resolved below: its default follows the market after overrides.
    verify: bool(env, 'GPUX_VERIFY', ['on', 'off']) ?? (undefined as unknown as boolean),
    disputeWindowSeconds: int(env, 'GPUX_DISPUTE_WINDOW_S', 1, 365 * 24 * 3600) ?? 7 * 24 * 3600,
    auditFloorBps: int(env, 'GPUX_AUDIT_FLOOR_BPS', 1, 10_000) ?? 1000,
    disputeBondBps: int(env, 'GPUX_DISPUTE_BOND_BPS', 0, 1_000_000) ?? 10_000,
    disputeBondMin: int(env, 'GPUX_DISPUTE_BOND_MIN', 1, 10 ** 15) ?? 100_000,
    canaryRate: fraction(env, 'GPUX_CANARY_RATE') ?? 0.01,
    canaryCatalogSize: int(env, 'GPUX_CANARY_CATALOG_SIZE', 1, 1_000_000) ?? 1000,
    auditBudgetBps: int(env, 'GPUX_AUDIT_BUDGET_BPS', 0, 10_000) ?? DEFAULT_AUDIT_BUDGET_BPS,
    // Resolved below: its default follows the market after overrides.
    challenge: challengeMode(env) ?? (undefined as unknown as 'required'),
    challengeRecheckMs: int(env, 'GPUX_CHALLENGE_RECHECK_MS', 1) ?? 24 * 3_600_000,
    challengeRetryMs: int(env, 'GPUX_CHALLENGE_RETRY_MS', 1) ?? 10 * 60_000,
    tlsCertFile: str(env, 'GPUX_TLS_CERT_FILE') ?? null,
    tlsKeyFile: str(env, 'GPUX_TLS_KEY_FILE') ?? null,
    trustProxy: trustedProxies(env),
    authFailuresPerMinute: int(env, 'GPUX_AUTH_FAILURES_PER_MINUTE', 0, 1_000_000) ?? 30,
    coordinatorKeyFile: str(env, 'GPUX_COORDINATOR_KEY_FILE') ?? join(dataDir, 'coordinator-key.json'),
    blobs: { ...loadBlobConfig(env, dataDir), ...overrides.blobs },
    region: str(env, 'GPUX_REGION') ?? 'local',
    peerSummaryMs: int(env, 'GPUX_PEER_SUMMARY_MS', 100, 3_600_000) ?? 5000,
    forward: bool(env, 'GPUX_FORWARD', ['on', 'off']) ?? true,
    predictions: bool(env, 'GPUX_PREDICTIONS', ['on', 'off']) ?? true,
    predictionsSchedule: bool(env, 'GPUX_PREDICTIONS_SCHEDULE', ['on', 'off']) ?? true,
    pgNamedStatements: bool(env, 'GPUX_PG_NAMED_STATEMENTS', ['on', 'off']) ?? true,
    forwardAfterSeconds: int(env, 'GPUX_FORWARD_AFTER_S', 1, 7 * 86_400) ?? 60,
    forwardPollMs: int(env, 'GPUX_FORWARD_POLL_MS', 50, 600_000) ?? 1000,
    forwardLeaseMs: int(env, 'GPUX_FORWARD_LEASE_MS', 1000, 3_600_000) ?? 60_000,
    peerCredit: int(env, 'GPUX_PEER_CREDIT', 0, Number.MAX_SAFE_INTEGER) ?? 1_000_000_000,
  };
  // Derived defaults (lease, offline, db) already follow an overridden heartbeat or data dir above.
  const merged = { ...c, ...withoutUndefined(overrides), blobs: c.blobs };
  if (merged.verify === undefined) merged.verify = merged.market;
  if (merged.challenge === undefined) merged.challenge = merged.market ? 'required' : 'off';
  return check(merged);
}

/** The store's policies from the config (start.ts passes them to openStore): node track records and auto-cordon, attempt deadlines, the audit budget. */
export function storePolicies(c: CoordinatorConfig): StorePolicies {
  return {
    nodeStats: { halfLifeMs: c.nodeStatsHalfLifeMs, cordonAfterFailures: c.cordonFailures, cordonWindowMs: c.cordonWindowMs },
    // An agent starts an attempt as soon as it receives it: one lease on top of the grace to do so.
    deadlines: { resultGraceMs: c.resultGraceMs, startGraceMs: c.resultGraceMs + c.leaseTtlMs },
    auditBudgetBps: c.auditBudgetBps,
  };
}

/** GPUX_TRUST_PROXY: IPs and CIDRs (v4 or v6), comma-separated; each checked so a typo is not a silent "trust nobody". */
function trustedProxies(env: Env): string[] {
  const v = str(env, 'GPUX_TRUST_PROXY');
  if (v === undefined) return [];
  return v.split(',').map((raw) => {
    const entry = raw.trim();
    const [ip = '', bits, ...rest] = entry.split('/');
    const family = isIP(ip);
    const okBits = bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32));
    if (family === 0 || !okBits || rest.length > 0) invalid('GPUX_TRUST_PROXY', entry, 'comma-separated IP addresses or CIDRs of your reverse proxies, e.g. 127.0.0.1 or 10.0.0.0/8');
    return entry;
  });
}

function challengeMode(env: Env): 'required' | 'off' | undefined {
  const v = str(env, 'GPUX_CHALLENGE')?.toLowerCase();
  if (v === undefined) return undefined;
  if (v === 'required' || v === 'off') return v;
  return invalid('GPUX_CHALLENGE', v, 'required or off');
}

function metricsAccess(env: Env): 'operator' | 'open' {
  const v = str(env, 'GPUX_METRICS')?.toLowerCase();
  if (v === undefined || v === 'operator') return 'operator';
  if (v === 'open') return 'open';
  return invalid('GPUX_METRICS', v, 'operator or open');
}

function metricsToken(env: Env): string | null {
  const v = str(env, 'GPUX_METRICS_TOKEN');
  if (v === undefined) return null;
  if (v.length < 16 || /\s/.test(v)) invalid('GPUX_METRICS_TOKEN', '<hidden>', 'a secret of at least 16 characters without spaces');
  return v;
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
