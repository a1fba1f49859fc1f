/** The job spec a buyer submits (YAML or JSON through the CLI). */
import { z } from 'zod';
import { utf8Length } from './utf8.js';
import { Asset } from './money.js';
import { EncryptedPayload, JobEncryption } from './e2e-api.js';

/** Inline inputs: at most this many characters of content in all, in at most MAX_INPUT_FILES files. */
export const MAX_INPUT_BYTES = 1024 * 1024;
export const MAX_INPUT_FILES = 64;
/** A buyer's checker (verify) runs with this timeout unless verify.timeoutSeconds says otherwise. */
export const DEFAULT_CHECKER_TIMEOUT_S = 600;

/**
 * Bounds on a spec (issue 10 item 7): the whole spec without its inline inputs serializes to at most
 * MAX_SPEC_BYTES of UTF-8 JSON; command, args and env have counted, sized entries; lists and strings the
 * scheduler reads are short. Inline inputs keep their own 1 MiB bound.
 */
export const MAX_SPEC_BYTES = 64 * 1024;
export const MAX_ARGV_ENTRIES = 256;
export const MAX_ARG_CHARS = 8 * 1024;
export const MAX_ENV_VARS = 256;
export const MAX_ENV_VALUE_CHARS = 8 * 1024;
export const MAX_LABELS = 64;
export const MAX_NODE_LABELS = 32;
export const MAX_GPU_MODELS = 16;
const SHORT = 128;


/** Bytes of the spec as stored, less its inline inputs (which have their own bound). */
export function specBytesWithoutInputs(spec: object): number {
  const { inputs: _inputs, ...rest } = spec as { inputs?: unknown };
  return utf8Length(JSON.stringify(rest));
}

/** A relative path inside the inputs/outputs dir: no absolute paths, no `..`, no backslashes. */
export const RelativePath = z
  .string()
  .min(1)
  .max(255)
  .refine((p) => !p.startsWith('/') && !p.includes('\\') && !p.split('/').some((s) => s === '..' || s === '' || s === '.'), {
    message: 'must be a relative path like "data/in.txt" with no "..", "." or empty segments',
  });

export const GpuRequest = z
  .object({
    count: z.number().int().min(0).max(64).default(0).describe('GPUs on one node; 0 for a CPU-only job'),
    vendor: z.enum(['nvidia', 'amd']).optional(),
    models: z.array(z.string().min(1).max(SHORT)).min(1).max(MAX_GPU_MODELS).optional().describe('Accepted model names, matched case-insensitively as substrings, e.g. ["H100", "A100"]'),
    minVramGb: z.number().positive().max(1_048_576).optional(),
  })
  .strict();

export const Resources = z
  .object({
    gpu: GpuRequest.default({ count: 0 }),
    cpuCores: z.number().positive().max(1024).optional(),
    memoryGb: z.number().positive().max(16384).optional(),
  })
  .strict();

export const InlineInputFile = z
  .object({
    path: RelativePath,
    content: z.string(),
    encoding: z.enum(['utf8', 'base64']).default('utf8'),
  })
  .strict();

/** Largest blob or URL input: 5 TiB (the blob store's own limit). */
export const MAX_INPUT_FILE_BYTES = 5 * 2 ** 40;
const InputSha256 = z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 digest: 64 lowercase hex characters');

/** Issue 13: a blob the buyer holds (`gpux blob put FILE`, or `{path, file}` uploaded by `gpux job submit`). */
export const BlobInputFile = z
  .object({
    path: RelativePath,
    blob: InputSha256.describe('sha256 of a blob you hold in the blob store; the node downloads it and checks the digest'),
    size: z.number().int().min(0).max(MAX_INPUT_FILE_BYTES).describe('Its size in bytes (checked against the blob at submission)'),
    encrypted: EncryptedPayload.optional().describe('Only in an encrypted job (encryption): the blob is ciphertext of a plaintext of this sha256 and size, which the node checks after decrypting'),
  })
  .strict();

/** Issue 13: a file the node fetches over https itself, only for a job with `network: true`; checked against sha256. */
export const UrlInputFile = z
  .object({
    path: RelativePath,
    url: z
      .string()
      .max(2048)
      .refine((u) => {
        try {
          return new URL(u).protocol === 'https:';
        } catch {
          return false;
        }
      }, 'must be an https:// URL'),
    sha256: InputSha256.describe('The digest the fetched bytes must have, or the attempt fails'),
    size: z.number().int().min(0).max(MAX_INPUT_FILE_BYTES).describe('Its size in bytes; more bytes than this fail the attempt'),
  })
  .strict();

export const InputFile = z.union([InlineInputFile, BlobInputFile, UrlInputFile]);
export type InputFile = z.infer<typeof InputFile>;
export type InlineInputFile = z.infer<typeof InlineInputFile>;
export type BlobInputFile = z.infer<typeof BlobInputFile>;
export type UrlInputFile = z.infer<typeof UrlInputFile>;
export const isInlineInput = (f: InputFile): f is InlineInputFile => 'content' in f;
export const isBlobInput = (f: InputFile): f is BlobInputFile => 'blob' in f;
export const isUrlInput = (f: InputFile): f is UrlInputFile => 'url' in f;

export const Constraints = z
  .object({
    region: z.string().min(1).max(SHORT).optional(),
    nodeLabels: z
      .record(z.string().max(SHORT), z.string().max(256))
      .refine((r) => Object.keys(r).length <= MAX_NODE_LABELS, { message: `at most ${MAX_NODE_LABELS} node labels` })
      .optional().describe('Labels the node must carry with these exact values'),
    preferredRegion: z.string().min(1).max(SHORT).optional().describe('Soft: nodes in this region score higher for latency (region is the hard filter)'),
    maxQueueSeconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .optional()
      .describe("Federation: when no node here can take the job within this many seconds, a peer region that can may run it (default: the coordinator's GPUX_FORWARD_AFTER_S)"),
    maxLatencyMs: z
      .number()
      .int()
      .min(1)
      .max(60_000)
      .optional()
      .describe('Federation: a peer region within this round trip that is cheaper than here may run the job'),
    minTrustTier: z
      .enum(['open', 'attested', 'curated'])
      .optional()
      .describe('Only nodes of this trust tier or above (open < attested < curated): curated nodes are vouched for by an operator (gpux node tier set); attested needs a configured attestation verifier'),
    minTier: z.enum(['open', 'attested', 'curated']).optional().describe('Alias of minTrustTier; give one or the other'),
  })
  .strict();

/**
 * A checker the buyer supplies for a job that cannot be bit-exact: it runs (no GPU, no network, in the same
 * sandbox as jobs) with two runs' output sets as its inline inputs, the executor's under "a/" and the other
 * run's under "b/", and exits 0 when they agree.
 */
export const VerifySpec = z
  .object({
    image: z.string().min(1).max(512).describe('Container image of the checker, e.g. "repo/checker@sha256:…"'),
    command: z
      .array(z.string().max(MAX_ARG_CHARS))
      .min(1)
      .max(MAX_ARGV_ENTRIES)
      .describe(`The checker's program and arguments: at most ${MAX_ARGV_ENTRIES} entries of ${MAX_ARG_CHARS} characters; it reads $GPUX_INPUTS/a and $GPUX_INPUTS/b and exits 0 when they agree`),
    timeoutSeconds: z.number().int().min(1).max(3600).optional().describe(`Longest one checker run may take; absent: ${DEFAULT_CHECKER_TIMEOUT_S}`),
  })
  .strict();

const EnvName = z.string().max(256).regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be a valid environment variable name');
const LabelKey = z.string().regex(/^[a-zA-Z0-9][a-zA-Z0-9._/-]{0,62}$/, 'must be 1-63 characters of letters, digits, ".", "_", "/", "-"');

export const JobSpec = z
  .object({
    name: z.string().min(1).max(128),
    image: z.string().min(1).max(512).describe('Container image, e.g. "busybox:1.36" or "repo/img@sha256:…"'),
    command: z
      .array(z.string().max(MAX_ARG_CHARS))
      .min(1)
      .max(MAX_ARGV_ENTRIES)
      .describe(`Program and its leading arguments: at most ${MAX_ARGV_ENTRIES} entries of ${MAX_ARG_CHARS} characters`),
    args: z.array(z.string().max(MAX_ARG_CHARS)).max(MAX_ARGV_ENTRIES).default([]),
    env: z
      .record(EnvName, z.string().max(MAX_ENV_VALUE_CHARS))
      .refine((e) => Object.keys(e).length <= MAX_ENV_VARS, { message: `at most ${MAX_ENV_VARS} environment variables` })
      .default({}),
    resources: Resources.default({ gpu: { count: 0 } }),
    inputs: z
      .array(InputFile)
      .max(MAX_INPUT_FILES)
      .default([])
      .refine((files) => files.reduce((n, f) => n + ('content' in f ? f.content.length : 0), 0) <= MAX_INPUT_BYTES, {
        message: `inline inputs may hold at most ${MAX_INPUT_BYTES} bytes in all; put larger files in the blob store (gpux blob put, or {path, file} in the spec)`,
      })
      .refine((files) => new Set(files.map((f) => f.path)).size === files.length, { message: 'input paths must be unique' }),
    timeoutSeconds: z.number().int().min(1).max(7 * 24 * 3600).default(3600),
    network: z.boolean().optional().describe('Needs network access in its container (default: none); a node that does not allow network refuses the attempt'),
    checkpoint: z
      .object({ everySeconds: z.number().int().min(10).max(86_400).describe('How often the node uploads /gpux/checkpoints (also when the attempt is stopped)') })
      .strict()
      .optional()
      .describe('Issue 13: the job writes its state to /gpux/checkpoints; a retry on another node starts with the latest upload restored there'),
    encryption: JobEncryption.optional().describe(
      'Issue 13: an end-to-end encrypted job. Every input is a blob of ciphertext with `encrypted`; the node waits for its data key (released by your client, or pre-wrapped); outputs and logs come back encrypted to buyerKey. The command, args and env are NOT encrypted',
    ),
    maxRetries: z.number().int().min(0).max(20).default(3),
    queueTimeoutSeconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 24 * 3600)
      .optional()
      .describe('Longest the job may wait queued before it fails with the reason and its escrow returns; absent: the coordinator default (GPUX_QUEUE_TIMEOUT_S)'),
    labels: z
      .record(LabelKey, z.string().max(256))
      .refine((l) => Object.keys(l).length <= MAX_LABELS, { message: `at most ${MAX_LABELS} labels` })
      .default({}),
    constraints: Constraints.default({}),
    priority: z.enum(['high', 'normal', 'low']).optional().describe('Priority class; absent means normal. Waiting jobs age upwards, so low never starves'),
    nodes: z.number().int().min(1).max(64).optional().describe('Gang job: this many nodes, placed all or nothing, each with resources as above; absent means 1'),
    maxPricePerGpuHour: z
      .number()
      .int()
      .min(0)
      .max(1_000_000_000_000, 'must be at most 1000000000000 minor units (1,000,000.0 per GPU-hour)')
      .optional()
      .describe('Most the buyer pays per GPU-hour (per job-hour when CPU-only), integer minor units (1000000 = 1.0; a spec file read by the gpux CLI may write a decimal, 2.5 or "2.5 USDC"), at most 10^12; with a market, at least the floor of a class it accepts (400 otherwise). Absent: the market price at submission plus one epoch step'),
    asset: Asset.optional().describe('What the job is paid with; default usdc'),
    deterministic: z
      .boolean()
      .optional()
      .describe('false: the job cannot reproduce its output bit for bit (GPU training, sampling); it is never audited by re-execution and its result is labelled not verifiable. Absent: true'),
    replicas: z
      .union([z.literal(1), z.literal(2)])
      .optional()
      .describe(
        '2: the job runs again on a second, independent operator and the two results are compared; a referee decides a mismatch; the buyer pays both runs (both are held in escrow at submission). Not with deterministic: false (results cannot be compared) nor with nodes > 1. Absent: 1',
      ),
    verify: VerifySpec.optional().describe(
      'For a job that cannot be bit-exact: a checker image and command that receives the executor\'s outputs (inputs a/) and a re-run\'s (inputs b/) and exits 0 when they agree. The job is audited (and replicas: 2 compared) with it instead of by output digest. Not with deterministic: false',
    ),
    canaryReuse: z
      .boolean()
      .optional()
      .describe('true: once an independent audit agrees with its result, the network may re-run this exact spec (command, env, inputs) on up to 8 other operators as a known-answer canary. Absent: false — a buyer\'s job is only ever re-run to verify it'),
  })
  .strict()
  .superRefine((spec, ctx) => {
    if (spec.replicas === 2 && spec.deterministic === false) {
      ctx.addIssue({
        code: 'custom',
        path: ['replicas'],
        message: 'replicas: 2 compares the two runs\' outputs bit for bit, and a job with deterministic: false cannot reproduce its output, so the results cannot be compared — drop replicas, or make the job deterministic',
      });
    }
    if (spec.verify && spec.deterministic === false) {
      ctx.addIssue({
        code: 'custom',
        path: ['verify'],
        message:
          'verify gives a checker that compares a re-run\'s outputs with this job\'s, so the job is audited; deterministic: false says it is never audited — keep verify and drop deterministic: false, or drop verify to leave the job unaudited (not-verifiable)',
      });
    }
    // A gang's members each commit their own output; comparing two gangs member by member is not built.
    if (spec.replicas === 2 && (spec.nodes ?? 1) > 1) {
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: 'replicas: 2 is not supported for gang jobs (nodes > 1) — drop replicas, or run one node' });
    }
    const c = spec.constraints;
    if (c.minTier !== undefined && c.minTrustTier !== undefined && c.minTier !== c.minTrustTier) {
      ctx.addIssue({ code: 'custom', path: ['constraints', 'minTier'], message: `minTier is an alias of minTrustTier, and they differ (${c.minTier} vs ${c.minTrustTier}) — give one of them` });
    }
    // The node fetches URL inputs itself, over the job's own network (a node without network refuses it).
    spec.inputs.forEach((f, i) => {
      if ('url' in f && spec.network !== true) {
        ctx.addIssue({ code: 'custom', path: ['inputs', i, 'url'], message: 'a URL input is fetched by the node over the job\'s network: set network: true, or upload the file as a blob (gpux blob put, or {path, file})' });
      }
    });
    // Encrypted jobs (issue 13): the coordinator sees ciphertext blobs only; inline and URL inputs would be plaintext to it.
    spec.inputs.forEach((f, i) => {
      const encryptedBlob = 'blob' in f && f.encrypted !== undefined;
      if (spec.encryption && !encryptedBlob) {
        ctx.addIssue({
          code: 'custom',
          path: ['inputs', i],
          message: `an encrypted job's inputs must be encrypted blobs ({path, blob, size, encrypted}), and ${f.path} is ${'content' in f ? 'inline' : 'url' in f ? 'a URL input' : 'a blob without `encrypted`'}: give it as {path, file} to \`gpux job submit --encrypt\`, which encrypts and uploads it`,
        });
      }
      if (!spec.encryption && encryptedBlob) {
        ctx.addIssue({ code: 'custom', path: ['inputs', i, 'encrypted'], message: `${f.path} says it is encrypted but the job has no encryption: submit with \`gpux job submit --encrypt\`` });
      }
    });
    const n = specBytesWithoutInputs(spec);
    if (n > MAX_SPEC_BYTES) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: `the spec is ${n} bytes of JSON without its inline inputs; the most is ${MAX_SPEC_BYTES} — shorten command, args, env or labels, or pass large data as inputs`,
      });
    }
  });

/** What the buyer writes (defaults optional). */
export type JobSpecInput = z.input<typeof JobSpec>;
/** What the system stores (defaults applied). */
export type JobSpec = z.output<typeof JobSpec>;
