/**
 * Forwarded jobs (issue 15, forwarding and clearing). The home region keeps the buyer, the escrow and the bill; a
 * peer runs the job for the home as its buyer, under its own market and node trust rules. Every call is signed by
 * the calling region's coordinator key and answered signed over the request's nonce, exactly like the summary
 * exchange (federation-api.ts: "gpux-peer-v1" / "gpux-peer-answer-v1").
 *
 * - `POST /v1/federation/jobs` (home → peer): run this job. Idempotent by `homeAttemptId`: the same attempt again
 *   answers the job it made the first time (created false), so a home that lost the answer may simply send again.
 *   The peer holds the job's escrow from its clearing account for the home (a bounded credit line) and refuses
 *   with 402 INSUFFICIENT_FUNDS (saying it is the credit line) when the home would owe it more than its limit.
 * - `GET /v1/federation/jobs/:id?logsAfter=N` (home → peer): where the job stands, its bill so far and the
 *   log entries after cursor N. The home polls it; each answer renews the home attempt's lease.
 * - `POST /v1/federation/jobs/:id/cancel` (home → peer): the buyer cancelled, or the home fenced the attempt.
 * - `GET /v1/federation/jobs/:id/blobs/:sha256` (home → peer): the bytes of an output the signed status lists with
 *   `blob: true`, streamed and NOT signed (they may be gigabytes): the home checks them against the size and sha256
 *   of the signed listing, and keeps nothing that differs.
 *
 * Clearing: each region keeps one clearing account per peer and asset (`clearing:<peer id>`): positive, this region
 * owes the peer; negative, the peer owes this region. A forwarded job's final bill moves the home's escrow to its
 * clearing account for the peer (+bill) and is drawn at the peer from its clearing account for the home (−bill), so
 * a pair's two balances net to zero once their jobs have ended. Execution is at least once; payment at most once.
 */
import { z } from 'zod';
import { JobState, LogEntry, OutputFile } from './job.js';
import { JobSpec } from './job-spec.js';
import { Asset } from './money.js';

/** Largest forward request (a spec with inline inputs is bounded by the spec's own limits, well under this). */
export const MAX_FORWARD_BODY_BYTES = 2 * 1024 * 1024;
/** Largest status answer: at most MAX_FORWARD_LOG_ENTRIES entries of at most LOG_ENTRY_MAX_BYTES each, plus the rest. */
export const MAX_FORWARD_ANSWER_BYTES = 4 * 1024 * 1024;
/** Log entries one status answer carries at most (the home asks again from the new cursor). */
export const MAX_FORWARD_LOG_ENTRIES = 200;
/** Output files one status answer lists at most: what one node result may carry (agent-api.ts ResultReport). */
export const MAX_FORWARD_OUTPUTS = 1000;
/**
 * Inline output content (base64 characters) one status answer carries at most; the outputs past it are listed
 * `blob: true` instead, their bytes read from the blobs route. With the listing itself (paths of at most 255
 * characters) this keeps an answer under MAX_FORWARD_ANSWER_BYTES: outputs never share an answer with log entries.
 */
export const MAX_FORWARD_INLINE_OUTPUT_CHARS = 2 * 1024 * 1024;

const Id = z.string().regex(/^[A-Za-z0-9_:-]{1,96}$/, 'an id: 1-96 characters of A-Z, a-z, 0-9, _, : and -');
const Amount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const Time = z.number().int().min(0).max(1e14);

export const ForwardJobRequest = z
  .object({
    homeJobId: Id.describe("The job's id at home (shown to the peer's operator; the buyer keeps talking to the home)"),
    homeAttemptId: Id.describe('The home attempt this run is: the idempotency key at the peer'),
    spec: JobSpec,
    payment: z
      .object({ asset: Asset, capPerUnitHour: Amount.describe("The buyer's cap per GPU-hour (per job-hour when CPU-only), minor units") })
      .strict()
      .nullable()
      .describe('Null: the home runs without a market, and so must the peer (it refuses otherwise)'),
  })
  .strict();
export type ForwardJobRequest = z.infer<typeof ForwardJobRequest>;

export const ForwardedJobView = z.object({
  remoteJobId: Id,
  homeAttemptId: Id,
  state: JobState,
  createdAt: Time,
  startedAt: Time.nullable(),
  endedAt: Time.nullable(),
  exitCode: z.number().int().nullable(),
  error: z.string().max(4096).nullable(),
  asset: Asset.nullable(),
  charged: Amount.describe("What the peer has charged so far (its settlements from the job's hold); the final bill once the job has ended"),
  logs: z.array(LogEntry).max(MAX_FORWARD_LOG_ENTRIES).describe('Entries after the cursor asked for, in order'),
  nextLogCursor: z.number().int().min(0).describe('Ask with logsAfter=this next time'),
  moreLogs: z.boolean().describe('More entries wait after nextLogCursor: ask again at once'),
  outputDigest: z
    .string()
    .regex(/^[0-9a-f]{64}$/)
    .nullable()
    .default(null)
    .describe("The node's output root digest (over every output's path and sha256) once the job has ended; null before, or without a node report"),
  outputs: z
    .array(OutputFile)
    .max(MAX_FORWARD_OUTPUTS)
    .default([])
    .describe(
      'Once the job has ended, on an answer without log entries (one that has them says moreLogs): its output files. Inline ones carry `content`; `blob: true` ones are read from GET /v1/federation/jobs/:id/blobs/:sha256; the rest are listed only (the node never uploaded their bytes)',
    ),
});
export type ForwardedJobView = z.infer<typeof ForwardedJobView>;

export const ForwardJobResponse = z.object({ job: ForwardedJobView, created: z.boolean() });
export type ForwardJobResponse = z.infer<typeof ForwardJobResponse>;

export const ForwardedJobQuery = z.object({ logsAfter: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0) }).strict();
export type ForwardedJobQuery = z.infer<typeof ForwardedJobQuery>;

export const ForwardedJobResponse = z.object({ job: ForwardedJobView });
export type ForwardedJobResponse = z.infer<typeof ForwardedJobResponse>;

export const ClearingBalanceView = z.object({
  peerId: z.string(),
  peer: z.string().describe("The peer's name here"),
  region: z.string().nullable().describe("The peer's region name (from its last summary)"),
  asset: Asset,
  balance: z.number().int().describe('Positive: this region owes the peer; negative: the peer owes this region (minor units)'),
  creditLimit: Amount.describe('Most the peer may owe this region in this asset (GPUX_PEER_CREDIT)'),
  jobsSent: z.number().int().min(0).describe('Jobs this region forwarded to the peer'),
  jobsReceived: z.number().int().min(0).describe('Jobs the peer forwarded to this region'),
  open: z.number().int().min(0).describe("Forwarded jobs either way that have not ended: until they do, the pair's balances need not net to zero"),
});
export type ClearingBalanceView = z.infer<typeof ClearingBalanceView>;

export const RegionBalanceResponse = z.object({ region: z.string(), balances: z.array(ClearingBalanceView) });
export type RegionBalanceResponse = z.infer<typeof RegionBalanceResponse>;
