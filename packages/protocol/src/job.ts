/** Jobs, attempts, events, logs and results as the API shows them to buyers and operators. */
import { z } from 'zod';
import { VerificationView } from './verification.js';
import { ResultCommitment } from './commitment.js';
import { JobSpec, RelativePath } from './job-spec.js';
import { Amount, Asset } from './money.js';
import { utf8Length } from './utf8.js';
import { EncryptedPayload } from './e2e-api.js';

export { utf8Length };

export const JOB_STATES = ['queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export const JobState = z.enum(JOB_STATES);
export type JobState = z.infer<typeof JobState>;
export const TERMINAL_JOB_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

/** lost: the node stopped heartbeating (or vanished) while holding the lease. */
export const ATTEMPT_STATES = ['assigned', 'running', 'succeeded', 'failed', 'lost', 'cancelled'] as const;
export const AttemptState = z.enum(ATTEMPT_STATES);
export type AttemptState = z.infer<typeof AttemptState>;
export const ACTIVE_ATTEMPT_STATES: readonly AttemptState[] = ['assigned', 'running'];

export const AttemptOutcome = z.enum(['succeeded', 'failed', 'cancelled']);
export type AttemptOutcome = z.infer<typeof AttemptOutcome>;

export const JobPayment = z.object({
  asset: Asset,
  capPerUnitHour: Amount.describe('Most it pays per GPU-hour (per job-hour when CPU-only): its maxPricePerGpuHour, or the market cap at submission'),
  units: z.number().int().describe('Priced units per node: GPUs, or 1 for a CPU-only job'),
  held: Amount.describe('Escrow held at submission: cap × units × nodes × timeout'),
});
export type JobPayment = z.infer<typeof JobPayment>;

export const JobView = z.object({
  id: z.string(),
  name: z.string(),
  buyerId: z.string(),
  state: JobState,
  spec: JobSpec,
  attemptCount: z.number().int().describe('Attempts made so far (retries = attemptCount - 1)'),
  currentAttemptId: z.string().nullable(),
  runAfter: z.number().int().nullable().describe('Epoch ms before which a queued job will not be placed (retry backoff)'),
  exitCode: z.number().int().nullable(),
  error: z.string().nullable(),
  cancelRequested: z.boolean(),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
  startedAt: z.number().int().nullable(),
  finishedAt: z.number().int().nullable(),
  payment: JobPayment.nullable().optional().describe('What the job may cost; null when the coordinator runs without a market'),
  kind: z.enum(['buyer', 'audit', 'referee', 'canary', 'checker']).optional().describe('Absent: a buyer\'s job. audit: a run that re-executes another job to check it (the replica run of a replicas: 2 job is one). checker: a run of the buyer\'s verify checker comparing two runs\' outputs'),
  checkOf: z.string().nullable().optional().describe('For a check run: the job whose result it checks'),
  verification: VerificationView.nullable().optional().describe('The verification step of an ended job (issue 11): its honest label; null when it has none'),
});
export type JobView = z.infer<typeof JobView>;

export const AttemptView = z.object({
  id: z.string(),
  jobId: z.string(),
  nodeId: z.string(),
  state: AttemptState,
  gpuIndices: z.array(z.number().int()),
  exitCode: z.number().int().nullable(),
  error: z.string().nullable(),
  outputDigest: z.string().nullable(),
  leaseExpiresAt: z.number().int().nullable(),
  createdAt: z.number().int(),
  startedAt: z.number().int().nullable(),
  finishedAt: z.number().int().nullable(),
  price: z
    .object({
      asset: Asset,
      pricePerUnitHour: Amount.describe('What this attempt pays per GPU-hour (per job-hour when CPU-only), fixed at placement'),
      units: z.number().int(),
      marketClass: z.string(),
      providerId: z.string(),
      charged: Amount.describe('Settled so far (provider + fee)'),
    })
    .nullable()
    .optional()
    .describe('null without a market'),
  commitment: ResultCommitment.nullable().optional().describe("The node's signed result commitment, once it reported (issue 11)"),
  commitmentSignature: z.string().nullable().optional().describe('ed25519 signature of the node key over the commitment (base64)'),
});
export type AttemptView = z.infer<typeof AttemptView>;

export const EventView = z.object({
  seq: z.number().int(),
  at: z.number().int(),
  subject: z.enum(['job', 'node']),
  subjectId: z.string(),
  type: z.string().describe('e.g. job.submitted, job.assigned, attempt.lost, node.offline'),
  data: z.record(z.string(), z.unknown()),
});
export type EventView = z.infer<typeof EventView>;

export const LogStream = z.enum(['stdout', 'stderr', 'system']);
export type LogStream = z.infer<typeof LogStream>;

/** Largest `data` of one log entry, in UTF-8 bytes: agents split longer output into several entries. */
export const LOG_ENTRY_MAX_BYTES = 64 * 1024;
/** Largest per-attempt `seq` a node may send; the coordinator's own entries (its limit marker) use the ones above. */
export const LOG_SEQ_MAX = 2 ** 40;


export const LogEntry = z.object({
  seq: z.number().int().min(0).max(LOG_SEQ_MAX).describe('Per-attempt sequence number, from 0, assigned by the agent'),
  stream: LogStream,
  data: z
    .string()
    .max(LOG_ENTRY_MAX_BYTES)
    .refine((d) => utf8Length(d) <= LOG_ENTRY_MAX_BYTES, { message: `must be at most ${LOG_ENTRY_MAX_BYTES} bytes (UTF-8); split longer output into several entries` }),
  at: z.number().int(),
});
export type LogEntry = z.infer<typeof LogEntry>;

export const JobLogEntry = LogEntry.extend({
  seq: z.number().int().min(0).describe('Per-attempt sequence number; above LOG_SEQ_MAX for the coordinator\'s own entries (its log-limit marker)'),
  data: z.string(),
  attemptId: z.string(),
  cursor: z.number().int().describe('Job-wide position; pass as `after` to read on'),
});
export type JobLogEntry = z.infer<typeof JobLogEntry>;

/** C0 and C1 control characters, DEL included: never in a name a node chooses. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
export const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/;

/** An output file's path as a node reports it: the inputs' rule (relative, no "..") and no control characters. */
export const OutputPath = RelativePath.refine((p) => !CONTROL_CHARS.test(p), { message: 'must not contain control characters' });

export const OutputFile = z.object({
  path: OutputPath,
  size: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  content: z.string().optional().describe('base64; absent when the file was too large to return inline'),
  blob: z
    .boolean()
    .optional()
    .describe('Set by the coordinator (a node cannot claim it): the bytes are in the blob store, owned by the job\'s buyer — GET /v1/blobs/:sha256 (gpux job result --out)'),
  encrypted: EncryptedPayload.optional().describe(
    'Encrypted jobs (issue 13): size and sha256 above are of the ciphertext (what is stored); these are of the plaintext, which the result\'s outputDigest covers',
  ),
});
export type OutputFile = z.infer<typeof OutputFile>;

export const AttemptMetrics = z.object({
  durationMs: z.number().int().min(0),
  logBytes: z.number().int().min(0).optional(),
  logsTruncated: z.boolean().optional(),
});
export type AttemptMetrics = z.infer<typeof AttemptMetrics>;
