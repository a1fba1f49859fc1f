/**
 * Signed calls to a peer region (issue 15): one request signed by this coordinator's key (method, path with its
 * query, body digest, timestamp, nonce); the answer must be signed, for this request's nonce, by the key pinned for
 * the peer, and fit `maxBytes`. The summary exchange and the forwarded-job calls are all one `peerRequest`; an
 * output's bytes (openForwardedBlob) are the one answer not signed: the caller checks them against the signed
 * listing. Every failure is a PeerContactError saying whether the peer could not be reached (or answered nonsense)
 * or refused us / answered with another key; a signed error answer (the peer read the request and said no) carries
 * its refusal.
 */
import type { Clock, Random } from '@gpux/core';
import {
  ErrorBody,
  type ErrorCode,
  FEDERATION_HEADERS,
  type ForwardedJobResponse as ForwardedJobResponseT,
  ForwardedJobResponse,
  type ForwardJobRequest,
  type ForwardJobResponse as ForwardJobResponseT,
  ForwardJobResponse,
  keyFingerprint,
  MAX_FORWARD_ANSWER_BYTES,
  MAX_SUMMARY_BODY_BYTES,
  peerCanonicalAnswer,
  peerCanonicalRequest,
  publicKeyFromRaw,
  ROUTES,
  type RegionSummary,
  SummaryExchange,
  verifyEd25519,
} from '@gpux/protocol';
import type { z } from 'zod';
import type { Signer } from '../identity/signer.js';

/** What a peer said when it read a request and refused it (a signed error answer). */
export interface PeerRefusal {
  httpStatus: number;
  code: ErrorCode;
  message: string;
}

export class PeerContactError extends Error {
  constructor(
    readonly status: 'unreachable' | 'unauthorized',
    message: string,
    /** Set when the peer answered a signed error: it got the request and said no (nothing was done there). */
    readonly refusal?: PeerRefusal,
  ) {
    super(message);
    this.name = 'PeerContactError';
  }
}

export interface ExchangeDeps {
  clock: Clock;
  random: Random;
  signer: Signer;
  /** Default: the global fetch. */
  fetch?: typeof fetch;
}

export interface PeerCall<S extends z.ZodType> {
  method: 'GET' | 'POST';
  /** The path with its query: both are signed. */
  path: string;
  /** JSON-serializable; absent: no body. */
  body?: unknown;
  /** The answer's schema (a 200 that does not match it is nonsense). */
  schema: S;
  /** The most answer bytes read. */
  maxBytes: number;
  timeoutMs: number;
}

/** The body, at most `max` bytes (a hostile peer may stream without end). */
async function readBounded(res: Response, max: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > max) throw new PeerContactError('unreachable', `answered ${declared} bytes, more than the ${max} this call takes`);
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => {});
      throw new PeerContactError('unreachable', `answered more than the ${max} bytes this call takes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function errorOf(text: string): ErrorBody | undefined {
  try {
    const parsed = ErrorBody.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

function errorMessage(text: string): string {
  const e = errorOf(text);
  return e ? `${e.error.code}: ${e.error.message}` : text.slice(0, 200);
}

/** Whether the answer is signed over `nonce` by the pinned key: no usable key header, a bad signature, or good. Another key: unauthorized. */
function answerSignature(res: Response, text: string, nonce: string, peer: { url: string; keyFingerprint: string }): 'no key' | 'bad' | 'ok' {
  const answerKey = res.headers.get(FEDERATION_HEADERS.key) ?? '';
  let answerKeyId: string;
  let key: ReturnType<typeof publicKeyFromRaw>;
  try {
    answerKeyId = keyFingerprint(answerKey);
    key = publicKeyFromRaw(answerKey);
  } catch {
    return 'no key';
  }
  if (answerKeyId !== peer.keyFingerprint) {
    throw new PeerContactError('unauthorized', `${peer.url} answered with key ${answerKeyId}, not the pinned ${peer.keyFingerprint}: check the URL and the key (gpux coordinator key show on the peer)`);
  }
  return verifyEd25519(peerCanonicalAnswer(nonce, text, answerKeyId), res.headers.get(FEDERATION_HEADERS.signature) ?? '', key) ? 'ok' : 'bad';
}

/** The signature headers of one request (method, path with its query, body) by this coordinator's key, and its nonce. */
function signedHeaders(deps: ExchangeDeps, method: string, path: string, body: string): { nonce: string; headers: Record<string, string> } {
  const timestamp = deps.clock.now();
  const nonce = Buffer.from(deps.random.bytes(16)).toString('hex');
  const signed = deps.signer.signBytes((keyId) => peerCanonicalRequest({ method, path, body, timestamp, nonce, keyId }));
  return {
    nonce,
    headers: {
      [FEDERATION_HEADERS.key]: signed.key.publicKey,
      [FEDERATION_HEADERS.timestamp]: String(timestamp),
      [FEDERATION_HEADERS.nonce]: nonce,
      [FEDERATION_HEADERS.signature]: signed.signature,
    },
  };
}

/** A fetch failure as the contact error it is (timeouts say so). */
function unreachable(err: unknown, peer: { url: string }, timeoutMs: number): PeerContactError {
  if (err instanceof PeerContactError) return err;
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const cause = e.cause?.code && e.cause.message ? `${e.cause.code} (${e.cause.message})` : (e.cause?.code ?? e.cause?.message ?? e.message);
  const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : cause;
  return new PeerContactError('unreachable', `cannot reach ${peer.url}: ${why}`);
}

/** One signed call to a peer: its answer, checked (key, signature over this nonce, size, schema), and the round trip. */
export async function peerRequest<S extends z.ZodType>(deps: ExchangeDeps, peer: { url: string; keyFingerprint: string }, call: PeerCall<S>): Promise<{ data: z.output<S>; rttMs: number }> {
  const { method, path, timeoutMs } = call;
  const body = call.body === undefined ? '' : JSON.stringify(call.body);
  const { nonce, headers } = signedHeaders(deps, method, path, body);
  const started = deps.clock.now();
  let res: Response;
  let text: string;
  try {
    res = await (deps.fetch ?? fetch)(`${peer.url}${path}`, {
      method,
      headers: { ...(call.body === undefined ? {} : { 'content-type': 'application/json' }), accept: 'application/json', ...headers },
      ...(call.body === undefined ? {} : { body }),
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    text = await readBounded(res, call.maxBytes);
  } catch (err) {
    throw unreachable(err, peer, timeoutMs);
  }
  const rttMs = Math.max(0, deps.clock.now() - started);
  if (res.status === 401 || res.status === 403) throw new PeerContactError('unauthorized', `${peer.url} refused this region (HTTP ${res.status} ${errorMessage(text)})`);
  if (res.status !== 200) {
    // Only a signed error is the peer's word (anyone on the path could forge an unsigned one).
    const refusal = res.status >= 400 && res.status < 500 ? errorOf(text) : undefined;
    if (refusal && answerSignature(res, text, nonce, peer) === 'ok') {
      throw new PeerContactError('unreachable', `${peer.url} refused: HTTP ${res.status} ${refusal.error.code}: ${refusal.error.message}`, {
        httpStatus: res.status,
        code: refusal.error.code,
        message: refusal.error.message,
      });
    }
    throw new PeerContactError('unreachable', `${peer.url} answered HTTP ${res.status} ${errorMessage(text)}`);
  }
  const signature = answerSignature(res, text, nonce, peer);
  if (signature === 'no key') throw new PeerContactError('unauthorized', `${peer.url} answered without a valid ${FEDERATION_HEADERS.key} header: it is not a gpux region, or not this version`);
  if (signature === 'bad') throw new PeerContactError('unauthorized', `${peer.url} answered with a bad signature for this request`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new PeerContactError('unreachable', `${peer.url} answered a body that is not JSON`);
  }
  const parsed = call.schema.safeParse(json);
  if (!parsed.success) {
    throw new PeerContactError('unreachable', `${peer.url} answered an invalid ${path.split('?')[0]} answer: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ').slice(0, 300)}`);
  }
  return { data: parsed.data as z.output<S>, rttMs };
}

export async function exchangeSummary(
  deps: ExchangeDeps,
  peer: { url: string; keyFingerprint: string },
  summary: RegionSummary,
  timeoutMs: number,
): Promise<{ summary: RegionSummary; rttMs: number }> {
  const got = await peerRequest(deps, peer, { method: 'POST', path: ROUTES.exchangeSummary.path, body: { summary }, schema: SummaryExchange, maxBytes: MAX_SUMMARY_BODY_BYTES, timeoutMs });
  return { summary: got.data.summary, rttMs: got.rttMs };
}

// ---- forwarded jobs (home → peer) ----

const jobPath = (path: string, id: string) => path.replace(':id', encodeURIComponent(id));

/** Ask the peer to run a job for this region (idempotent by homeAttemptId). */
export async function sendForwardedJob(deps: ExchangeDeps, peer: { url: string; keyFingerprint: string }, body: ForwardJobRequest, timeoutMs: number): Promise<ForwardJobResponseT> {
  return (await peerRequest(deps, peer, { method: 'POST', path: ROUTES.forwardJob.path, body, schema: ForwardJobResponse, maxBytes: MAX_FORWARD_ANSWER_BYTES, timeoutMs })).data;
}

/** Where a job forwarded to the peer stands, with its log entries after `logsAfter`. */
export async function fetchForwardedJob(deps: ExchangeDeps, peer: { url: string; keyFingerprint: string }, remoteJobId: string, logsAfter: number, timeoutMs: number): Promise<ForwardedJobResponseT> {
  const path = `${jobPath(ROUTES.forwardedJob.path, remoteJobId)}?logsAfter=${logsAfter}`;
  return (await peerRequest(deps, peer, { method: 'GET', path, schema: ForwardedJobResponse, maxBytes: MAX_FORWARD_ANSWER_BYTES, timeoutMs })).data;
}

/** Cancel a job forwarded to the peer (the buyer cancelled, or this region fenced the attempt). */
export async function cancelForwardedJob(deps: ExchangeDeps, peer: { url: string; keyFingerprint: string }, remoteJobId: string, timeoutMs: number): Promise<ForwardedJobResponseT> {
  const path = jobPath(ROUTES.cancelForwardedJob.path, remoteJobId);
  return (await peerRequest(deps, peer, { method: 'POST', path, schema: ForwardedJobResponse, maxBytes: MAX_FORWARD_ANSWER_BYTES, timeoutMs })).data;
}

/**
 * The bytes of an output the peer's signed status listed (GET …/:id/blobs/:sha256): the request is signed, the
 * answer is not (the caller checks the bytes against the listing). A 200 whose declared length is not `size` is
 * refused before a byte is read. `signal` aborts the call and the body (the caller's timeouts).
 */
export async function openForwardedBlob(
  deps: ExchangeDeps,
  peer: { url: string; keyFingerprint: string },
  q: { remoteJobId: string; sha256: string; size: number; signal: AbortSignal; timeoutMs: number },
): Promise<ReadableStream<Uint8Array>> {
  const path = ROUTES.forwardedJobBlob.path.replace(':id', encodeURIComponent(q.remoteJobId)).replace(':sha256', encodeURIComponent(q.sha256));
  const { headers } = signedHeaders(deps, 'GET', path, '');
  let res: Response;
  try {
    res = await (deps.fetch ?? fetch)(`${peer.url}${path}`, { method: 'GET', headers: { accept: 'application/octet-stream', ...headers }, redirect: 'error', signal: q.signal });
  } catch (err) {
    throw unreachable(err, peer, q.timeoutMs);
  }
  if (res.status !== 200) {
    const text = await readBounded(res, 64 * 1024).catch(() => '');
    throw new PeerContactError(res.status === 401 || res.status === 403 ? 'unauthorized' : 'unreachable', `${peer.url} answered HTTP ${res.status} ${errorMessage(text)} for output ${q.sha256}`);
  }
  const declared = res.headers.get('content-length');
  if (declared !== null && Number(declared) !== q.size) {
    await res.body?.cancel().catch(() => {});
    throw new PeerContactError('unreachable', `${peer.url} offered ${declared} bytes for output ${q.sha256}, which its signed listing says has ${q.size}`);
  }
  if (!res.body) throw new PeerContactError('unreachable', `${peer.url} answered no bytes for output ${q.sha256}`);
  return res.body;
}
