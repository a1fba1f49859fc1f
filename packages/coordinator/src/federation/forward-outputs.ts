/**
 * A forwarded job's outputs come home (issue 15). Once the peer's job has ended, its signed status lists the outputs
 * (path, size, sha256; inline content, or `blob: true`). Inline content is checked against its entry; each blob's
 * bytes are streamed from the peer (GET …/blobs/:sha256, unsigned) into this region's blob store as an output upload
 * of the home attempt, owned by the job's buyer — the node uploads' own path and bounds (beginAgentUpload, the
 * backend's staging, completeUpload checking size and sha256, finishAgentUpload making the buyer's hold and the
 * job's reference) — and never past the listed size. Only when every listed blob is here is the attempt's end booked,
 * with the outputs; the buyer then reads them with the ordinary result and blob routes.
 *
 * Fetches run beside the polling pass (a large output must not hold up the other forwards' polls), a few at a time,
 * and while they run each answer from the peer still renews the lease. Outputs that cannot be brought home in
 * MAX_TRIES tries (bytes that differ from the listing, a peer that cannot serve them, a listing that contradicts
 * itself) stop the renewals: the lease runs out, the attempt ends as lost and is fenced, the job runs again (at
 * least once), and the peer's bill becomes the home's writeoff. The buyer never pays for a run whose outputs it did
 * not get, and nothing that failed its check is kept. A job the buyer cancelled does not wait for its blobs: they
 * are listed without bytes (its cancel must not wait on a transfer, nor outlive its grace).
 */
import { type BlobBackend, GpuxError, type JobRecord, newId, type PeerRecord } from '@gpux/core';
import { type ForwardedJobView, type OutputFile, outputRootDigest, sha256Hex } from '@gpux/protocol';
import { openBlobBackend } from '../blobs/open-backend.js';
import { MAX_OPEN_UPLOADS_PER_ATTEMPT } from '../services/agent-blobs.js';
import { callTimeoutMs, type ForwarderDeps, type ForwardRef, type PeerClient, regionOf } from './forward-send.js';
import { openForwardedBlob, PeerContactError } from './peer-client.js';

/** Tries to bring one attempt's outputs home before its lease is left to run out. */
export const MAX_TRIES = 5;
/** Attempts whose outputs are fetched at once (per coordinator). */
const FETCHES_AT_ONCE = 4;
/** A transfer slower than this (bytes per ms: 1 MiB/s), or silent for a call timeout, is cut and counts as a failed try. */
const MIN_BYTES_PER_MS = 1024 * 1024 / 1000;

interface OutputFetch {
  running: boolean;
  tries: number;
  /** Booked while its fetch ran: the entry goes when the fetch ends. */
  booked?: boolean;
}

/** Per-runtime fetch state (in memory: a restart, or a new leader, tries again from zero). */
const states = new WeakMap<object, { byAttempt: Map<string, OutputFetch>; running: number }>();
function stateOf(rt: ForwarderDeps) {
  let s = states.get(rt);
  if (!s) {
    s = { byAttempt: new Map(), running: 0 };
    states.set(rt, s);
  }
  return s;
}

function fetchOf(rt: ForwarderDeps, attemptId: string): OutputFetch {
  const s = stateOf(rt);
  let f = s.byAttempt.get(attemptId);
  if (!f) {
    // Entries go when their attempt is booked; a bound against forwards that never are.
    if (s.byAttempt.size >= 10_000) for (const [id, e] of s.byAttempt) if (!e.running) s.byAttempt.delete(id);
    f = { running: false, tries: 0 };
    s.byAttempt.set(attemptId, f);
  }
  return f;
}

/** Whether the attempt's outputs failed MAX_TRIES times: its lease is then no longer renewed. */
export function outputsGaveUp(rt: ForwarderDeps, attemptId: string): boolean {
  return (stateOf(rt).byAttempt.get(attemptId)?.tries ?? 0) >= MAX_TRIES;
}

/** The attempt is booked: its fetch state goes. */
export function forgetOutputs(rt: ForwarderDeps, attemptId: string): void {
  const s = stateOf(rt);
  const f = s.byAttempt.get(attemptId);
  if (f?.running) f.booked = true;
  else s.byAttempt.delete(attemptId);
}

const isBlob = (o: OutputFile) => o.content === undefined && o.blob === true;
const keyOf = (o: { sha256: string; size: number }) => `${o.sha256}/${o.size}`;

/** What is wrong with the listing itself (signed, so the peer's word: nothing to fetch can fix it); undefined: nothing. */
function listingProblem(view: ForwardedJobView): string | undefined {
  if (view.outputDigest !== null && outputRootDigest(view.outputs) !== view.outputDigest) return `the outputs it lists do not make its output digest ${view.outputDigest}`;
  const paths = new Set(view.outputs.map((o) => o.path));
  if (paths.size < view.outputs.length) return 'it lists one output path twice';
  for (const o of view.outputs) {
    if (o.content === undefined) continue;
    const bytes = Buffer.from(o.content, 'base64');
    if (bytes.length !== o.size || sha256Hex(bytes) !== o.sha256) return `output ${o.path}: its inline content is not the ${o.size} bytes with sha256 ${o.sha256} its entry names`;
  }
  return undefined;
}

/** The outputs as the home attempt keeps them: inline with content, blob only where the bytes are here, else listed. */
function homeOutputs(view: ForwardedJobView, here: ReadonlySet<string>): OutputFile[] {
  return view.outputs.map((o) => {
    const base = { path: o.path, size: o.size, sha256: o.sha256 };
    if (o.content !== undefined) return { ...base, content: o.content };
    return isBlob(o) && here.has(keyOf(o)) ? { ...base, blob: true } : base;
  });
}

async function failed(rt: ForwarderDeps, f: ForwardRef, peer: PeerRecord, fetch: OutputFetch, why: string): Promise<void> {
  fetch.tries++;
  const error = `outputs from ${regionOf(peer)}, try ${fetch.tries} of ${MAX_TRIES}: ${why}`.slice(0, 1024);
  rt.logger.warn({ attemptId: f.attemptId, jobId: f.jobId, peerId: f.peerId, tries: fetch.tries, err: why }, 'forwarded job: its outputs could not be brought home');
  await rt.store.recordForwardProgress({ attemptId: f.attemptId, now: rt.clock.now(), error });
}

/**
 * The ended peer job's outputs as the home attempt keeps them once they are all here; undefined while they are not
 * (a fetch is started, or running, or the tries are spent): the caller books the end on a later answer.
 */
export async function outputsHome(rt: ForwarderDeps, client: PeerClient, f: ForwardRef, peer: PeerRecord, view: ForwardedJobView, job: JobRecord): Promise<{ outputs: OutputFile[]; outputDigest: string | null } | undefined> {
  const fetch = fetchOf(rt, f.attemptId);
  // A cancelled job does not wait for a fetch under way (what it brings stays the buyer's, unlisted).
  if (fetch.tries >= MAX_TRIES || (fetch.running && !job.cancelRequested)) return undefined;
  const problem = listingProblem(view);
  if (problem) {
    await failed(rt, f, peer, fetch, problem);
    return undefined;
  }
  const here = new Set((await rt.store.completedOutputUploads(f.attemptId)).map(keyOf));
  const missing = new Map(view.outputs.filter((o) => isBlob(o) && !here.has(keyOf(o))).map((o) => [keyOf(o), o]));
  if (missing.size === 0 || job.cancelRequested) return { outputs: homeOutputs(view, here), outputDigest: view.outputDigest };
  const s = stateOf(rt);
  if (s.running >= FETCHES_AT_ONCE) return undefined;
  fetch.running = true;
  s.running++;
  void fetchAll(rt, client, f, peer, view.remoteJobId, job, [...missing.values()])
    .catch((err: unknown) => failed(rt, f, peer, fetch, (err as Error).message))
    .catch((err: unknown) => rt.logger.error({ err, attemptId: f.attemptId }, 'forwarded job: recording an output failure failed'))
    .finally(() => {
      fetch.running = false;
      s.running--;
      if (fetch.booked) s.byAttempt.delete(f.attemptId);
    });
  return undefined;
}

async function fetchAll(rt: ForwarderDeps, client: PeerClient, f: ForwardRef, peer: PeerRecord, remoteJobId: string, job: JobRecord, outputs: OutputFile[]): Promise<void> {
  const backend = await openBlobBackend(rt.config.blobs);
  try {
    for (const o of outputs) await fetchOne(rt, client, backend, { f, peer, remoteJobId, job, output: o });
  } finally {
    await backend.close();
  }
}

/** The body's bytes, refused past `size` or short of it; `progress` is told of each chunk. */
async function* listedBytes(body: ReadableStream<Uint8Array>, size: number, what: string, progress: () => void): AsyncIterable<Uint8Array> {
  const reader = body.getReader();
  let got = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      got += value.byteLength;
      if (got > size) throw new PeerContactError('unreachable', `${what}: more than the ${size} bytes its signed listing names`);
      progress();
      yield value;
    }
    if (got < size) throw new PeerContactError('unreachable', `${what}: the bytes ended after ${got} of the ${size} its signed listing names`);
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** One blob output into the buyer's store, checked; on any failure nothing of it is kept (staging dropped, upload row deleted). */
async function fetchOne(
  rt: ForwarderDeps,
  client: PeerClient,
  backend: BlobBackend,
  q: { f: ForwardRef; peer: PeerRecord; remoteJobId: string; job: JobRecord; output: OutputFile },
): Promise<void> {
  const { f, output: o } = q;
  const cfg = rt.config.blobs;
  const now = rt.clock.now();
  const upload = { id: newId('upl', now, rt.random), ownerId: q.job.buyerId, sha256: o.sha256, size: o.size, received: 0, createdAt: now, expiresAt: now + cfg.uploadTtlMs };
  // The token is never handed out: nobody else can append to this upload.
  const tokenHash = sha256Hex(Buffer.from(rt.random.bytes(32)).toString('base64url'));
  const begun = await rt.store.beginAgentUpload({
    upload,
    attemptId: f.attemptId,
    jobId: f.jobId,
    kind: 'output',
    path: o.path,
    tokenHash,
    maxOutputBytes: cfg.maxOutputBytes,
    maxUploads: cfg.maxUploadsPerAttempt,
    maxOpenUploads: MAX_OPEN_UPLOADS_PER_ATTEMPT,
  });
  // The buyer holds these bytes already: recorded as this attempt's output, nothing to fetch.
  if ('blob' in begun) return;
  const what = `output ${o.path} (${o.sha256})`;
  const idleMs = callTimeoutMs(rt);
  const ctl = new AbortController();
  let why = '';
  const cut = (reason: string) => {
    why = reason;
    ctl.abort();
  };
  const totalMs = Math.min(2 ** 31 - 1, idleMs + Math.ceil(o.size / MIN_BYTES_PER_MS));
  const total = setTimeout(() => cut(`${what}: its ${o.size} bytes took longer than ${Math.round(MIN_BYTES_PER_MS * 1000)} bytes per second allows`), totalMs);
  let idle = setTimeout(() => cut(`${what}: no bytes for ${idleMs} ms`), idleMs);
  const progress = () => {
    clearTimeout(idle);
    idle = setTimeout(() => cut(`${what}: no bytes for ${idleMs} ms`), idleMs);
  };
  try {
    await backend.beginUpload(upload.id);
    const body = await openForwardedBlob(client, q.peer, { remoteJobId: q.remoteJobId, sha256: o.sha256, size: o.size, signal: ctl.signal, timeoutMs: idleMs });
    await backend.appendUpload(upload.id, 0, listedBytes(body, o.size, what, progress), { maxBytes: o.size });
    // Size, then sha256 of everything staged; a mismatch drops the staging (REQUEST_INVALID saying what came).
    await backend.completeUpload(upload.id, { sha256: o.sha256, size: o.size });
    if (!(await rt.store.finishAgentUpload(upload.id, rt.clock.now()))) throw new GpuxError('NOT_FOUND', `${what}: its upload was dropped while completing`);
  } catch (err) {
    await backend.abortUpload(upload.id).catch(() => {});
    await rt.store.deleteBlobUpload(upload.id).catch(() => {});
    if (why) throw new PeerContactError('unreachable', why);
    throw err instanceof PeerContactError ? err : new Error(`${what}: ${(err as Error).message}`);
  } finally {
    clearTimeout(total);
    clearTimeout(idle);
  }
}
