/** Request and response bodies of the /v1 HTTP API. */
import { z } from 'zod';
import { AttemptView, EventView, JobLogEntry, JobState, JobView, OutputFile } from './job.js';
import { JobSpec } from './job-spec.js';
import { NodeAdminState, NodeStatus, NodeView } from './node.js';

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

export const GetJobResponse = z.object({ job: JobView, attempts: z.array(AttemptView), events: z.array(EventView) });
export type GetJobResponse = z.infer<typeof GetJobResponse>;

export const CancelJobResponse = z.object({ job: JobView });
export type CancelJobResponse = z.infer<typeof CancelJobResponse>;

export const JobLogsQuery = z.object({
  after: z.coerce.number().int().min(-1).default(-1).describe('Return entries with cursor greater than this'),
  limit: z.coerce.number().int().min(1).max(5000).default(1000),
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
});
export type JobResultResponse = z.infer<typeof JobResultResponse>;

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

export const CreateTokenRequest = z.object({ role: z.enum(['buyer', 'operator']), name: z.string().min(1).max(128) }).strict();
export const CreateTokenResponse = z.object({ token: z.string().describe('Shown once; only its hash is stored'), id: z.string(), accountId: z.string(), role: z.enum(['buyer', 'operator']) });
export type CreateTokenResponse = z.infer<typeof CreateTokenResponse>;

export const WhoAmIResponse = z.object({ accountId: z.string(), role: z.enum(['buyer', 'operator']), tokenId: z.string() });
export type WhoAmIResponse = z.infer<typeof WhoAmIResponse>;

export const HealthResponse = z.object({ status: z.enum(['ok', 'unavailable']), checks: z.record(z.string(), z.string()).optional() });

export { NodeAdminState };
