/**
 * Jobs a peer region forwarded here (issue 15), the peer's side. The job runs under the buyer `region:<peer id>`
 * with the checks and the hold of a buyer's submit (services/jobs.ts newJobOf), its hold drawn on the peer's credit
 * line (store acceptForwardedJob), idempotent by the home attempt id, with no retries here (the home retries). The peer sees only its own jobs: another
 * buyer's, or another peer's, is NOT_FOUND. Once a job has ended, what its buyer wallet holds goes back to the
 * clearing account (returnPeerCredit), so that account reads −(the bills of the peer's jobs). Once ended, its status
 * lists the outputs (what its last attempt's node reported), and the peer may read the bytes of those it lists as
 * blobs (forwardedOutput).
 */
import { ACCOUNTS, type BlobBackend, type ByteRange, type ByteSource, GpuxError, isGpuxError, isSha256Hex, type JobRecord, type PeerRecord, peerBuyerId } from '@gpux/core';
import {
  type ForwardedJobResponse,
  type ForwardedJobView,
  type ForwardJobRequest,
  type ForwardJobResponse,
  isBlobInput,
  isUrlInput,
  type JobSpec,
  LOG_ENTRY_MAX_BYTES,
  LOG_SEQ_MAX,
  MAX_FORWARD_INLINE_OUTPUT_CHARS,
  MAX_FORWARD_LOG_ENTRIES,
  MAX_FORWARD_OUTPUTS,
  type OutputFile,
  TERMINAL_JOB_STATES,
} from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { cancelJob, newJobOf, sameSpec } from '../services/jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
export type RemoteJobsDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

/** Log bytes one answer carries at most: JSON may escape each byte to 6, and the answer is bounded (MAX_FORWARD_ANSWER_BYTES). */
const LOG_BYTES_PER_ANSWER = 512 * 1024;
const ERROR_MAX = 4096;

/** The peer as a buyer here: its own jobs only, never an operator. */
const principalOf = (peer: PeerRecord): Principal => ({ tokenId: `peer:${peer.id}`, accountId: peerBuyerId(peer.id), role: 'buyer' });

/** Why this region cannot run `spec` for a peer; undefined when it can. */
export function notForwardable(spec: JobSpec): string | undefined {
  if (spec.encryption) return 'it is end-to-end encrypted: its data key and ciphertext blobs live at its home region';
  const blob = spec.inputs.find(isBlobInput);
  if (blob) return `input ${blob.path} is a blob in its home region's blob store`;
  const url = spec.inputs.find(isUrlInput);
  if (url) return `input ${url.path} is a URL input, fetched under its home region's rules`;
  return undefined;
}

function refuse(message: string, path?: string): never {
  throw new GpuxError('REQUEST_INVALID', message, path ? { problems: [{ path, message }] } : undefined);
}

/** The spec as it runs here: the home's cap and asset are its own; its region, when it names this one, is where it is. */
function specHere(rt: RemoteJobsDeps, req: ForwardJobRequest): JobSpec {
  const { spec } = req;
  const why = notForwardable(spec);
  if (why) refuse(`this region cannot run the job: ${why} (it runs at home)`, 'spec.inputs');
  const constraints = { ...spec.constraints };
  // The home routed it here by its region name; this region's nodes may not carry that label.
  if (constraints.region === rt.config.region) delete constraints.region;
  // One run per forward: the home retries (here or elsewhere) under its buyer's maxRetries, and a retry here would
  // need a top-up its credit line never drew.
  const once = { ...spec, constraints, maxRetries: 0 };
  if (!req.payment) return once;
  return { ...once, asset: req.payment.asset, maxPricePerGpuHour: req.payment.capPerUnitHour };
}

/** POST /v1/federation/jobs: run this job for the peer (its buyer), held on its credit line. */
export async function acceptForwarded(rt: RemoteJobsDeps, peer: PeerRecord, req: ForwardJobRequest): Promise<ForwardJobResponse> {
  if (rt.config.market && req.payment === null) {
    refuse(`region ${rt.config.region} runs a market: a forwarded job must carry its buyer's cap (payment), and the home sent none (it runs without a market; so must its peers)`, 'payment');
  }
  if (!rt.config.market && req.payment !== null) {
    refuse(`region ${rt.config.region} runs without a market: it cannot hold or bill a forwarded job's payment (the home runs a market; so must its peers)`, 'payment');
  }
  const spec = specHere(rt, req);
  const newJob = newJobOf(rt, principalOf(peer), spec, req.homeAttemptId);
  const { job, created } = await rt.store.acceptForwardedJob(newJob, { peerId: peer.id, creditLimit: rt.config.peerCredit });
  if (!created && !sameSpec(job.spec, spec)) {
    throw new GpuxError('IDEMPOTENCY_KEY_REUSED', `home attempt ${req.homeAttemptId} was forwarded here already, as job ${job.id} with a different spec`);
  }
  if (created) {
    rt.logger.info({ jobId: job.id, peerId: peer.id, homeJobId: req.homeJobId, homeAttemptId: req.homeAttemptId }, 'job forwarded here by a peer region');
    rt.signals.kick();
  }
  return { job: await viewOf(rt, job, 0), created };
}

/** The peer's own job, or NOT_FOUND (never another buyer's). */
async function peerJob(rt: RemoteJobsDeps, peer: PeerRecord, id: string): Promise<JobRecord> {
  const job = await rt.store.getJob(id);
  if (!job || job.buyerId !== peerBuyerId(peer.id)) throw new GpuxError('NOT_FOUND', `no job ${id} forwarded here by this region`);
  return job;
}

/** What the job's hold has paid out so far: its settlements from escrow (providers and fee, held pay included). */
async function chargedOf(rt: RemoteJobsDeps, job: JobRecord): Promise<number> {
  if (!job.payment) return 0;
  const escrow = ACCOUNTS.escrow(job.id);
  let charged = 0;
  for (const t of await rt.store.jobTransfers(job.id)) {
    if (t.kind !== 'settlement') continue;
    for (const p of t.postings) if (p.account === escrow && p.asset === job.payment.asset) charged -= p.amount;
  }
  return charged;
}

const isTerminal = (job: JobRecord) => TERMINAL_JOB_STATES.includes(job.state);

/** The ended job's result attempt (as the buyer's result route picks it) with its outputs; undefined before the end. */
async function resultOf(rt: RemoteJobsDeps, job: JobRecord): Promise<{ outputDigest: string | null; outputs: OutputFile[] } | undefined> {
  if (!isTerminal(job)) return undefined;
  const attempts = await rt.store.listAttempts(job.id);
  const last = (job.currentAttemptId ? attempts.find((a) => a.id === job.currentAttemptId) : undefined) ?? attempts.at(-1);
  if (!last) return { outputDigest: null, outputs: [] };
  const digest = last.outputDigest !== null && /^[0-9a-f]{64}$/.test(last.outputDigest) ? last.outputDigest : null;
  return { outputDigest: digest, outputs: await rt.store.getOutputs(last.id) };
}

/**
 * The outputs as a status answer lists them: inline content while it fits MAX_FORWARD_INLINE_OUTPUT_CHARS, past
 * that `blob: true` (forwardedOutput serves inline bytes too); a blob output stays one. Encrypted jobs are never
 * forwarded, so there is no `encrypted` part to carry.
 */
function listedOutputs(outputs: readonly OutputFile[]): OutputFile[] {
  let inline = 0;
  return outputs.slice(0, MAX_FORWARD_OUTPUTS).map((f) => {
    const base = { path: f.path, size: f.size, sha256: f.sha256 };
    if (f.content !== undefined && inline + f.content.length <= MAX_FORWARD_INLINE_OUTPUT_CHARS) {
      inline += f.content.length;
      return { ...base, content: f.content };
    }
    return f.content !== undefined || f.blob ? { ...base, blob: true } : base;
  });
}

/**
 * The view, with log entries after `logsAfter` (none when null). An entry's seq is its job-wide cursor here, so a
 * retry's entries (whose own seqs start again at 0) are never taken for repeats at home.
 */
async function viewOf(rt: RemoteJobsDeps, job: JobRecord, logsAfter: number | null): Promise<ForwardedJobView> {
  const stored = logsAfter === null ? [] : await rt.store.readLogs(job.id, logsAfter, MAX_FORWARD_LOG_ENTRIES + 1, LOG_BYTES_PER_ANSWER);
  const page = stored.slice(0, MAX_FORWARD_LOG_ENTRIES);
  const bytes = page.reduce((n, e) => n + Buffer.byteLength(e.data), 0);
  // Outputs ride only on an answer without log entries (one with entries says moreLogs), so the two never share
  // one answer's byte budget; the home reads every log line before it books the end anyway.
  const result = page.length === 0 ? await resultOf(rt, job) : undefined;
  const logs = page
    .filter((e) => e.cursor <= LOG_SEQ_MAX && Buffer.byteLength(e.data) <= LOG_ENTRY_MAX_BYTES)
    .map((e) => ({ seq: e.cursor, stream: e.stream, data: e.data, at: e.at }));
  return {
    remoteJobId: job.id,
    homeAttemptId: job.idempotencyKey ?? '',
    state: job.state,
    createdAt: job.createdAt,
    startedAt: job.startedAt,
    endedAt: job.finishedAt,
    exitCode: job.exitCode,
    error: job.error === null ? null : job.error.slice(0, ERROR_MAX),
    asset: job.payment?.asset ?? null,
    charged: await chargedOf(rt, job),
    logs,
    nextLogCursor: page.at(-1)?.cursor ?? logsAfter ?? 0,
    // A page cut by count, or by bytes with another entry perhaps behind it: ask again at once. An ended job's
    // page with entries: its outputs come on the next.
    moreLogs: stored.length > MAX_FORWARD_LOG_ENTRIES || bytes > LOG_BYTES_PER_ANSWER - LOG_ENTRY_MAX_BYTES || (isTerminal(job) && page.length > 0),
    outputDigest: result?.outputDigest ?? null,
    outputs: result ? listedOutputs(result.outputs) : [],
  };
}

/** GET /v1/federation/jobs/:id: where the peer's job stands; once it has ended, what it did not spend goes back to the credit line. */
export async function forwardedStatus(rt: RemoteJobsDeps, peer: PeerRecord, id: string, logsAfter: number): Promise<ForwardedJobResponse> {
  const job = await peerJob(rt, peer, id);
  if (isTerminal(job) && job.payment) await rt.store.returnPeerCredit(peer.id, job.payment.asset, rt.clock.now());
  return { job: await viewOf(rt, job, logsAfter) };
}

/** POST /v1/federation/jobs/:id/cancel: the buyer's cancel, for the peer's own job; an ended job is answered as it stands. */
export async function cancelForwarded(rt: RemoteJobsDeps, peer: PeerRecord, id: string): Promise<ForwardedJobResponse> {
  const job = await peerJob(rt, peer, id);
  try {
    return { job: await viewOf(rt, await cancelJob(rt, principalOf(peer), job.id), null) };
  } catch (err) {
    if (!(isGpuxError(err) && err.code === 'JOB_FINISHED')) throw err;
    return { job: await viewOf(rt, (await rt.store.getJob(id)) ?? job, null) };
  }
}

/** One output's bytes for the peer: where they are and how many. */
export interface ForwardedOutput {
  size: number;
  /** The bytes, or `range` of them. */
  open(range?: ByteRange): Promise<ByteSource>;
}

async function* bytesOf(buf: Buffer): AsyncIterable<Uint8Array> {
  yield buf;
}

/**
 * GET /v1/federation/jobs/:id/blobs/:sha256: an output of the peer's own ended job that its status lists (inline
 * content, or a blob its buyer region:<peer> holds here). Anything else, another peer's or a buyer's blob included,
 * is NOT_FOUND.
 */
export async function forwardedOutput(rt: RemoteJobsDeps, peer: PeerRecord, id: string, sha256: string, backend: () => Promise<BlobBackend>): Promise<ForwardedOutput> {
  const missing = () => new GpuxError('NOT_FOUND', `job ${id} forwarded here by this region has no output ${sha256.slice(0, 64)}`);
  if (!isSha256Hex(sha256)) throw missing();
  const job = await peerJob(rt, peer, id);
  const outputs = (await resultOf(rt, job))?.outputs ?? [];
  const inline = outputs.find((f) => f.sha256 === sha256 && f.content !== undefined);
  if (inline?.content !== undefined) {
    const buf = Buffer.from(inline.content, 'base64');
    return { size: buf.length, open: async (range) => bytesOf(range ? buf.subarray(range.start, range.end) : buf) };
  }
  const listed = outputs.find((f) => f.sha256 === sha256 && f.blob);
  const held = listed && (await rt.store.getBlob(job.buyerId, sha256));
  if (!listed || !held || held.size !== listed.size) throw missing();
  return {
    size: held.size,
    open: async (range) => {
      const stream = await (await backend()).open(sha256, range);
      await rt.store.touchBlob(job.buyerId, sha256, rt.clock.now());
      return stream;
    },
  };
}
