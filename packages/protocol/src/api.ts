/** Request and response bodies of the /v1 HTTP API. */
import { z } from 'zod';
import { ExpiresInSeconds } from './access-api.js';
import { ResultCommitment } from './commitment.js';
import { AttemptView, EventView, JobLogEntry, JobState, JobView, OutputFile } from './job.js';
import { JobSpec } from './job-spec.js';
import { NodeAdminState, NodeStatus, NodeView } from './node.js';
import { RegionAdvice } from './offers-api.js';
import { RunPrediction } from './prediction.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';

// ---- buyers ----
export const SubmitJobRequest = z.object({ spec: JobSpec }).strict();
export type SubmitJobRequest = z.input<typeof SubmitJobRequest>;
export const SubmitJobResponse = z.object({ job: JobView, created: z.boolean().describe('false when the idempotency key matched an earlier submission') });
export type SubmitJobResponse = z.infer<typeof SubmitJobResponse>;

export const ListJobsQuery = z.object({
  state: z.union([JobState, z.string().regex(/^[a-z]+(,[a-z]+)*$/)]).optional().describe('One state or a comma-separated list'),
  limit: z.coerce.number().int().min(1).max(500).default(50),
  cursor: z.string().optional().describe('nextCursor from the previous page'),
});
export type ListJobsQuery = z.input<typeof ListJobsQuery>;
export const ListJobsResponse = z.object({ jobs: z.array(JobView), nextCursor: z.string().nullable() });
export type ListJobsResponse = z.infer<typeof ListJobsResponse>;

export const GetJobQuery = z.object({
  eventsBefore: z.coerce.number().int().min(0).optional().describe('Page older events: those with seq below this (the moreEventsBefore of the previous page)'),
  eventsLimit: z.coerce.number().int().min(1).max(1000).default(200).describe("The job's own events (state, money) per page; node-reported events (image pulls) get as many again at most"),
});
export const GetJobResponse = z.object({
  job: JobView,
  attempts: z.array(AttemptView),
  events: z
    .array(EventView)
    .describe("Oldest first: the newest eventsLimit state and money events, and the node-reported events (image pulls) between them, at most eventsLimit of those"),
  moreEventsBefore: z.number().int().nullable().optional().describe('Older events exist: pass as ?eventsBefore= to read them; null on the oldest page'),
  nodeEventsElided: z.number().int().optional().describe('Node-reported events in this page\'s range left out (more than eventsLimit of them)'),
  prediction: RunPrediction.optional().describe('Issue 17: the predicted run time (and finish, when running), learned from earlier runs; absent when the coordinator runs with predictions off (GPUX_PREDICTIONS=off) or the job has ended'),
});
export type GetJobResponse = z.infer<typeof GetJobResponse>;

export const CancelJobResponse = z.object({ job: JobView });
export type CancelJobResponse = z.infer<typeof CancelJobResponse>;

export const JobLogsQuery = z.object({
  after: z.coerce.number().int().min(-1).default(-1).describe('Return entries with cursor greater than this'),
  limit: z.coerce.number().int().min(1).max(5000).default(1000).describe('Most entries per page; a page also stops at about 1 MiB of log data (always at least one entry)'),
  waitMs: z.coerce.number().int().min(0).max(30000).default(0).describe('Long-poll: wait up to this long for new entries'),
});
export const JobLogsResponse = z.object({
  entries: z.array(JobLogEntry),
  next: z.number().int().describe('Pass as `after` to continue'),
  done: z.boolean().describe('The job is finished and every entry has been returned'),
});
export type JobLogsResponse = z.infer<typeof JobLogsResponse>;

export const JobResultResponse = z.object({
  jobId: z.string(),
  attemptId: z.string(),
  state: JobState,
  exitCode: z.number().int().nullable(),
  error: z.string().nullable(),
  outputDigest: z.string().nullable(),
  outputs: z.array(OutputFile),
  nodeId: z.string().optional().describe('The node that ran the attempt'),
  commitment: ResultCommitment.nullable().optional().describe("What that node signed for this attempt: its output digest, exit code, inputs and metrics (gpux job verify checks it)"),
  commitmentSignature: z.string().nullable().optional().describe('ed25519 signature over the canonical commitment (base64)'),
  nodePublicKey: z.string().nullable().optional().describe("The node's ed25519 public key (base64 of 32 bytes); its id is derived from it"),
});
export type JobResultResponse = z.infer<typeof JobResultResponse>;

export const ExplainFilter = z.object({
  name: z
    .string()
    .describe('state, gpuVendor, gpuModel, gpuVram, gpuCount, region, labels, trust, cpu, memory, price, failedBefore or busy'),
  rejected: z.number().int().describe('Nodes this filter rejected; each node is counted once, at the first filter it fails'),
  message: z.string(),
});
export type ExplainFilter = z.infer<typeof ExplainFilter>;
export const ExplainJobResponse = z.object({
  jobId: z.string(),
  state: JobState,
  pending: z.boolean().describe('The job is queued, waiting to be placed'),
  summary: z.string(),
  queuePosition: z.number().int().nullable().describe('Queued jobs ahead of it in claim order (priority, then fair share between buyers); null when not queued'),
  queuedTotal: z.number().int().nullable().describe('Queued jobs due now, all buyers'),
  runAfter: z.number().int().nullable().describe('Retry backoff: not placed before this time'),
  nodesTotal: z.number().int(),
  nodesFitting: z.number().int().describe('Nodes that pass every filter and have the free capacity now'),
  nodesBusy: z.number().int().describe('Nodes that pass every filter but lack free capacity now'),
  filters: z.array(ExplainFilter),
  cheapestFittingAsk: z
    .number()
    .int()
    .nullable()
    .describe('Lowest price (minor units per GPU-hour, per job-hour when CPU-only) among the nodes that fit now; null when none fits or none asks (no market). `price` says it in words'),
  price: z.string().describe('What the job pays at most and what the nodes that fit would charge, amounts with their asset ("pays at most 0.492188 USDC per GPU-hour; …")'),
  suggestions: z.array(z.string()).describe('Why it cannot be placed, each with what to change ("… — raise maxPricePerGpuHour to 0.600000 USDC …"); empty when enough nodes fit'),
  regions: RegionAdvice.optional().describe('Issue 15: for a queued job, the regions that could run it and the one routing would pick (advice); only when this coordinator has peers'),
  prediction: RunPrediction.optional().describe('Issue 17: the predicted run time, learned from earlier runs; absent with predictions off or for an ended job'),
});
export type ExplainJobResponse = z.infer<typeof ExplainJobResponse>;

// ---- operators ----
export const ListNodesQuery = z.object({
  status: NodeStatus.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().optional(),
});
export type ListNodesQuery = z.input<typeof ListNodesQuery>;
export const ListNodesResponse = z.object({ nodes: z.array(NodeView), nextCursor: z.string().nullable() });
export type ListNodesResponse = z.infer<typeof ListNodesResponse>;
export const GetNodeResponse = z.object({ node: NodeView });
export type GetNodeResponse = z.infer<typeof GetNodeResponse>;
export const SetNodeAdminStateResponse = z.object({ node: NodeView });

export const CreateTokenRequest = z.object({ role: z.enum(['buyer', 'operator']), name: z.string().min(1).max(128), expiresInSeconds: ExpiresInSeconds }).strict();
export const CreateTokenResponse = z.object({
  token: z.string().describe('Shown once; only its hash is stored'),
  id: z.string(),
  accountId: z.string(),
  role: z.enum(['buyer', 'operator']),
  expiresAt: z.number().int().nullable().optional(),
});
export type CreateTokenResponse = z.infer<typeof CreateTokenResponse>;

export const WhoAmIResponse = z.object({ accountId: z.string(), role: z.enum(['buyer', 'operator']), tokenId: z.string() });
export type WhoAmIResponse = z.infer<typeof WhoAmIResponse>;

export const HealthResponse = z.object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.string()).optional() });

export { NodeAdminState };

// ---- network statistics (dashboard overview) ----
export const GpuClassStats = z.object({
  class: z.string().describe('GPU class: the model name as nodes advertise it (until the market defines classes)'),
  vendor: z.string(),
  total: z.number().int().describe('GPUs of this class on online nodes'),
  busy: z.number().int().describe('Held by an assigned or running attempt'),
  free: z.number().int().describe('Idle on nodes that take work'),
  unavailable: z.number().int().describe('Idle on cordoned or draining nodes'),
  nodes: z.number().int().describe('Online nodes with at least one GPU of this class'),
});
export type GpuClassStats = z.infer<typeof GpuClassStats>;
export const StatsResponse = z.object({
  at: z.number().int(),
  nodes: z.object({
    total: z.number().int(),
    online: z.number().int(),
    offline: z.number().int(),
    cordoned: z.number().int().describe('Online nodes that take no new work (cordoned or draining)'),
    simulated: z.number().int(),
  }),
  gpus: z.object({ total: z.number().int(), busy: z.number().int(), free: z.number().int(), byClass: z.array(GpuClassStats) }),
  jobs: z.object({ total: z.number().int(), byState: z.record(JobState, z.number().int()) }),
  placements: z.object({
    total: z.number().int().describe('Attempts placed by this coordinator process since it started'),
    perMinute: z.number().describe('Placement rate over the last minute (or since start when younger)'),
    windowMs: z.number().int().describe('The span the rate was measured over'),
  }),
});
export type StatsResponse = z.infer<typeof StatsResponse>;
