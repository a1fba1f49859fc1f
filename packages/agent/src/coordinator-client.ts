/** The node's signed HTTP client for the /v1/agent API: signs every request, validates every answer with the protocol schemas. */
import { GpuxError } from '@gpux/core';
import {
  AgentUploadResponse,
  assertSafeTransport,
  AttemptKeyResponse,
  BlobUploadResponse,
  type AttemptEventBatch,
  AttemptEventBatchResponse,
  type ChallengeDigestsRequest,
  ChallengeDigestsResponse,
  type ChallengeRevealRequest,
  type CreateCheckpointUploadRequest,
  type CreateOutputUploadRequest,
  ChallengeVerdict,
  CoordinatorIdentityResponse,
  ErrorBody,
  type ErrorCode,
  InsecureTransportError,
  HeartbeatResponse,
  type LogEntry,
  LogBatchResponse,
  type NodeAdvertisementInput,
  RefuseAttemptResponse,
  RegisterResponse,
  type ResultReport,
  ResultResponse,
  type ResultCommitment,
  ROUTES,
  signCommitment,
  signRequest,
  StartAttemptResponse,
  OUTPUT_UPLOAD_TOKEN_HEADER,
  OutputKeyResponse,
  signNodeEncryptionKey,
  UPLOAD_OFFSET_HEADER,
  WorkExchangeResponse,
  WorkResponse,
} from '@gpux/protocol';
import { streamedBody } from '@gpux/protocol/tls-fetch';
import type { z } from 'zod';
import type { NodeIdentity } from './identity.js';

/** The coordinator answered with an error body (or an error status). */
export class CoordinatorApiError extends GpuxError {
  readonly status: number;
  constructor(status: number, code: ErrorCode, message: string, problems?: { path: string; message: string }[]) {
    super(code, message, problems ? { problems } : {});
    this.name = 'CoordinatorApiError';
    this.status = status;
  }
}

/** The coordinator could not be reached (connection refused, timeout, 502/503/504 from a proxy). */
export class CoordinatorUnreachableError extends GpuxError {
  constructor(message: string, cause?: unknown) {
    super('UNAVAILABLE', message, { cause });
    this.name = 'CoordinatorUnreachableError';
  }
}

export const isUnreachable = (e: unknown): e is CoordinatorUnreachableError => e instanceof CoordinatorUnreachableError;

/** A 404 from a route whose path has no id: the coordinator (an older version) lacks the route; the caller falls back. */
export const isNoRoute = (e: unknown): boolean => e instanceof CoordinatorApiError && e.status === 404;

export interface CoordinatorClientOptions {
  /**
   * The coordinator's URL, or several (replicas sharing one key): a call that cannot reach one (connection failure,
   * timeout, 502/503/504) moves on to the next, signed again with a fresh nonce; the client stays on the one that answers.
   */
  baseUrl: string | readonly string[];
  identity: NodeIdentity;
  fetch?: typeof fetch;
  /** Per-request timeout for everything but the long-poll. Default 30 s. */
  timeoutMs?: number;
  /** Sent at registration: binds the node to the provider account (see AgentConfig.enrollmentToken). */
  enrollmentToken?: string;
  /** Send the enrollment token even over plain HTTP to a non-loopback coordinator (see AgentConfig.insecure). */
  insecure?: boolean;
}

export class CoordinatorClient {
  private readonly urls: readonly string[];
  /** Index in urls of the URL calls start from: the one that last answered. */
  private current = 0;
  private readonly nodeIdentity: NodeIdentity;
  private readonly doFetch: typeof fetch;
  private readonly timeoutMs: number;
  private readonly enrollmentToken: string | undefined;
  private readonly insecure: boolean;
  private warnedInsecure = false;

  constructor(opts: CoordinatorClientOptions) {
    const urls = (typeof opts.baseUrl === 'string' ? [opts.baseUrl] : opts.baseUrl).map((u) => u.replace(/\/+$/, ''));
    if (urls.length === 0) throw new GpuxError('REQUEST_INVALID', 'CoordinatorClient needs at least one coordinator URL');
    this.urls = urls;
    this.nodeIdentity = opts.identity;
    this.doFetch = opts.fetch ?? fetch;
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    this.enrollmentToken = opts.enrollmentToken;
    this.insecure = opts.insecure === true;
  }

  async register(advertisement: NodeAdvertisementInput): Promise<RegisterResponse> {
    if (this.enrollmentToken) this.guardEnrollmentToken();
    return this.call('POST', ROUTES.register.path, RegisterResponse, {
      publicKey: this.nodeIdentity.publicKey,
      advertisement,
      ...(this.enrollmentToken ? { enrollmentToken: this.enrollmentToken } : {}),
      // Issue 13: the X25519 key buyers wrap data keys to, signed by the identity key (so a coordinator cannot swap it).
      ...(this.nodeIdentity.encryption ? { encryptionKey: signNodeEncryptionKey(this.nodeIdentity.encryption.publicKey, this.nodeIdentity.privateKeyPem) } : {}),
    });
  }

  /** `rttMs`: the round trip of the previous heartbeat, for the coordinator's latency score. */
  heartbeat(activeAttemptIds: string[], rttMs?: number): Promise<HeartbeatResponse> {
    return this.call('POST', ROUTES.heartbeat.path, HeartbeatResponse, { activeAttemptIds, ...(rttMs === undefined ? {} : { rttMs }) });
  }

  /** Long-poll: answers when assignments exist or after waitMs. `signal` aborts it (agent shutdown). */
  work(waitMs: number, signal?: AbortSignal): Promise<WorkResponse> {
    return this.call('GET', `${ROUTES.work.path}?waitMs=${waitMs}`, WorkResponse, undefined, { signal, timeoutMs: waitMs + 15_000 });
  }

  /**
   * The long-poll carrying the starts of assignments this node takes up (an answer per start, at once when there
   * are any). A coordinator without it answers 404 NOT_FOUND "no route": see isNoRoute.
   */
  workExchange(waitMs: number, started: string[], signal?: AbortSignal): Promise<WorkExchangeResponse> {
    return this.call('POST', ROUTES.workExchange.path, WorkExchangeResponse, { waitMs, started }, { signal, timeoutMs: waitMs + 15_000 });
  }

  start(attemptId: string): Promise<StartAttemptResponse> {
    return this.call('POST', withId(ROUTES.startAttempt.path, attemptId), StartAttemptResponse);
  }

  logs(attemptId: string, entries: LogEntry[]): Promise<LogBatchResponse> {
    return this.call('POST', withId(ROUTES.attemptLogs.path, attemptId), LogBatchResponse, { entries });
  }

  /** Job events (image pulls) for the job's history. */
  events(attemptId: string, batch: AttemptEventBatch): Promise<AttemptEventBatchResponse> {
    return this.call('POST', withId(ROUTES.attemptEvents.path, attemptId), AttemptEventBatchResponse, batch);
  }

  /** The node refuses an assignment it could not verify (issue 19): the attempt ends and the job is queued again. */
  refuse(attemptId: string, reason: string): Promise<RefuseAttemptResponse> {
    return this.call('POST', withId(ROUTES.refuseAttempt.path, attemptId), RefuseAttemptResponse, { reason: reason.slice(0, 512) });
  }

  /** Encrypted jobs (issue 13): the attempt's data key wrapped to this node's encryption key; 404 NOT_FOUND until released. */
  attemptKey(attemptId: string, signal?: AbortSignal): Promise<AttemptKeyResponse> {
    return this.call('GET', withId(ROUTES.attemptKey.path, attemptId), AttemptKeyResponse, undefined, { signal });
  }

  /** Encrypted jobs: the attempt's output key wrapped to the buyer, announced before any log or output. */
  announceOutputKey(attemptId: string, wrappedKey: string): Promise<OutputKeyResponse> {
    return this.call('POST', withId(ROUTES.attemptOutputKey.path, attemptId), OutputKeyResponse, { wrappedKey });
  }

  /** The coordinator's signing key and endorsement chain (unauthenticated; the agent trusts only what its pinned keys endorse). */
  identity(): Promise<CoordinatorIdentityResponse> {
    return this.call('GET', ROUTES.coordinatorIdentity.path, CoordinatorIdentityResponse);
  }

  /** The coordinator URL calls go to now (the one that last answered). */
  get baseUrl(): string {
    return this.urls[this.current] as string;
  }

  /** This node's id and public key, and its signature over a result commitment (sent with the result report). */
  get nodeId(): string {
    return this.nodeIdentity.nodeId;
  }
  get publicKey(): string {
    return this.nodeIdentity.publicKey;
  }
  /** The node's X25519 key pair (end-to-end encrypted jobs), if it has one. */
  get encryption(): NodeIdentity['encryption'] {
    return this.nodeIdentity.encryption;
  }
  signCommitment(c: ResultCommitment): string {
    return signCommitment(c, this.nodeIdentity.privateKeyPem);
  }

  result(attemptId: string, report: ResultReport): Promise<ResultResponse> {
    return this.call('POST', withId(ROUTES.attemptResult.path, attemptId), ResultResponse, report);
  }

  /** Proof of hardware: the digests and timings; the answer names the row blocks to reveal. */
  challengeDigests(challengeId: string, body: ChallengeDigestsRequest): Promise<ChallengeDigestsResponse> {
    return this.call('POST', withId(ROUTES.challengeDigests.path, challengeId), ChallengeDigestsResponse, body);
  }

  /** Proof of hardware: the asked blocks in full; the answer is the verdict (the coordinator checks them first: allow time). */
  challengeReveal(challengeId: string, body: ChallengeRevealRequest): Promise<ChallengeVerdict> {
    return this.call('POST', withId(ROUTES.challengeReveal.path, challengeId), ChallengeVerdict, body, { timeoutMs: Math.max(this.timeoutMs, 120_000) });
  }

  /**
   * Data plane (issue 13): the bytes of a blob input of the attempt from `offset` (a Range request past 0), as the
   * raw Response (200 or 206) for the caller to stream. Signed like every agent request (a GET has no body).
   */
  async openInput(attemptId: string, sha256: string, offset: number, signal?: AbortSignal): Promise<Response> {
    const path = withId(ROUTES.attemptInput.path, attemptId).replace(':sha256', sha256);
    const headers = signRequest({ method: 'GET', path, body: '', nodeId: this.nodeIdentity.nodeId }, this.nodeIdentity.privateKeyPem);
    return this.rawFetch('GET', path, { headers: offset > 0 ? { ...headers, range: `bytes=${offset}-` } : headers, signal, timeoutMs: null });
  }

  /** Opens the upload of an output file into the blob store; `uploadToken` null: the blob is already stored. */
  createOutputUpload(attemptId: string, body: CreateOutputUploadRequest, signal?: AbortSignal): Promise<AgentUploadResponse> {
    return this.call('POST', withId(ROUTES.createOutputUpload.path, attemptId), AgentUploadResponse, body, { signal });
  }

  /** Opens the upload of a checkpoint archive (issue 13); once complete it is the job's latest checkpoint. */
  createCheckpointUpload(attemptId: string, body: CreateCheckpointUploadRequest, signal?: AbortSignal): Promise<AgentUploadResponse> {
    return this.call('POST', withId(ROUTES.createCheckpointUpload.path, attemptId), AgentUploadResponse, body, { signal });
  }

  /** The bytes of the checkpoint the attempt starts from (its assignment names it), from `offset`, like openInput. */
  async openCheckpoint(attemptId: string, offset: number, signal?: AbortSignal): Promise<Response> {
    const path = withId(ROUTES.attemptCheckpoint.path, attemptId);
    const headers = signRequest({ method: 'GET', path, body: '', nodeId: this.nodeIdentity.nodeId }, this.nodeIdentity.privateKeyPem);
    return this.rawFetch('GET', path, { headers: offset > 0 ? { ...headers, range: `bytes=${offset}-` } : headers, signal, timeoutMs: null });
  }

  /** Where an output or checkpoint upload stands (resume from its offset). Authorized by the upload's token. */
  async uploadStatus(uploadId: string, token: string, signal?: AbortSignal): Promise<BlobUploadResponse> {
    const path = withId(ROUTES.getAgentUpload.path, uploadId);
    const res = await this.rawFetch('GET', path, { headers: { [OUTPUT_UPLOAD_TOKEN_HEADER]: token }, signal });
    return parseJson(res, BlobUploadResponse, `GET ${path}`);
  }

  /** Sends `length` bytes from `body` at `offset` of an upload (one chunk, at most the upload's chunkBytes). */
  async appendUpload(uploadId: string, token: string, offset: number, length: number, body: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<BlobUploadResponse> {
    const path = withId(ROUTES.appendAgentUpload.path, uploadId);
    const headers = {
      [OUTPUT_UPLOAD_TOKEN_HEADER]: token,
      [UPLOAD_OFFSET_HEADER]: String(offset),
      'content-type': 'application/octet-stream',
      'content-length': String(length),
    };
    const res = await this.rawFetch('PUT', path, { headers, body, signal, timeoutMs: null });
    return parseJson(res, BlobUploadResponse, `PUT ${path}`);
  }

  /**
   * One request whose body or answer is bytes: errors as CoordinatorApiError / CoordinatorUnreachableError like
   * `call`. `timeoutMs` null: no overall timeout (a transfer of gigabytes takes long; the caller's signal ends it).
   */
  private async rawFetch(
    method: 'GET' | 'PUT',
    path: string,
    o: { headers: Record<string, string>; body?: AsyncIterable<Uint8Array>; signal?: AbortSignal | undefined; timeoutMs?: number | null },
  ): Promise<Response> {
    // A streamed body cannot be sent twice: a PUT fails here and the transfer's own retry (which resumes from the
    // server's offset) starts at the next URL. A GET moves on at once.
    return this.failover(`${method} ${path}`, o.body === undefined, async (base) => {
      const timeout = o.timeoutMs === null ? undefined : AbortSignal.timeout(o.timeoutMs ?? this.timeoutMs);
      const signals = [o.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
      const init: RequestInit & { duplex?: 'half' } = {
        method,
        headers: o.headers,
        ...(signals.length ? { signal: AbortSignal.any(signals) } : {}),
        ...(o.body ? streamedBody(o.body) : {}),
      };
      let res: Response;
      try {
        res = await this.doFetch(`${base}${path}`, init);
      } catch (e) {
        if (o.signal?.aborted) throw e;
        throw new CoordinatorUnreachableError(`coordinator ${base} unreachable: ${describe(e)}`, e);
      }
      if (res.ok) return res;
      let raw = '';
      try {
        raw = await res.text();
      } catch {
        // the error body was cut: the status says enough
      }
      throw errorFrom(res.status, raw, `${method} ${path}`);
    });
  }

  /**
   * Runs `once` against the current URL; when it finds the coordinator unreachable there, against the next ones in
   * turn (when `canMove`), each try signed anew by `once`. The URL that answers (even with an error) is kept.
   */
  private async failover<T>(what: string, canMove: boolean, once: (base: string) => Promise<T>): Promise<T> {
    const first = this.current;
    const tries: string[] = [];
    for (let n = 0; ; n++) {
      const index = (first + n) % this.urls.length;
      const base = this.urls[index] as string;
      try {
        const out = await once(base);
        this.current = index;
        return out;
      } catch (e) {
        if (!isUnreachable(e)) {
          if (e instanceof GpuxError) this.current = index; // an answer, not an outage (a caller's abort is neither)
          throw e;
        }
        if (this.current === index) this.current = (index + 1) % this.urls.length; // later calls start elsewhere
        if (this.urls.length === 1) throw e;
        tries.push(e.message.includes(base) ? e.message : `${base}: ${e.message}`);
        if (!canMove || n + 1 >= this.urls.length) {
          const why = canMove ? '' : ' (a streamed upload is not resent here: its retry resumes at the next URL)';
          throw new CoordinatorUnreachableError(`no coordinator answered ${what}: ${tries.join('; ')}${why}`, e);
        }
      }
    }
  }

  /**
   * No secrets in clear (issue 19): the enrollment token goes only over https or to loopback unless insecure.
   * The signed requests after registration carry no secret and stay allowed over plain HTTP: the agent acts only
   * on orders sealed by the coordinator key it pinned (coordinator-trust.ts), whoever answers at the URL.
   */
  private guardEnrollmentToken(): void {
    const warnings: string[] = [];
    for (const url of this.urls) {
      try {
        const warning = assertSafeTransport(url, { secret: 'an enrollment token', insecure: this.insecure, source: '--coordinator / GPUX_COORDINATOR_URL' });
        if (warning) warnings.push(warning);
      } catch (e) {
        if (e instanceof InsecureTransportError) throw new GpuxError('REQUEST_INVALID', e.message, { cause: e });
        throw e;
      }
    }
    if (warnings.length > 0 && !this.warnedInsecure) {
      this.warnedInsecure = true;
      for (const warning of warnings) process.emitWarning(warning, { code: 'GPUX_INSECURE_TRANSPORT' });
    }
  }

  private async call<S extends z.ZodType>(
    method: 'GET' | 'POST',
    path: string,
    schema: S,
    body?: unknown,
    opts: { signal?: AbortSignal | undefined; timeoutMs?: number } = {},
  ): Promise<z.output<S>> {
    const text = body === undefined ? '' : JSON.stringify(body);
    // Every agent call may be sent again: each try is signed anew (fresh nonce, so no replica takes it for a replay).
    return this.failover(`${method} ${path}`, true, async (base) => {
      const url = `${base}${path}`;
      const parsedUrl = new URL(url);
      const signedPath = parsedUrl.pathname + parsedUrl.search; // exactly what the server sees as the request path
      const headers: Record<string, string> = signRequest({ method, path: signedPath, body: text, nodeId: this.nodeIdentity.nodeId }, this.nodeIdentity.privateKeyPem);
      if (body !== undefined) headers['content-type'] = 'application/json';
      const timeout = AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs);
      const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;

      let res: Response;
      let raw: string;
      try {
        res = await this.doFetch(url, { method, headers, body: body === undefined ? undefined : text, signal });
        raw = await res.text();
      } catch (e) {
        if (opts.signal?.aborted) throw e; // the caller aborted: not an outage
        throw new CoordinatorUnreachableError(`coordinator ${base} unreachable: ${describe(e)}`, e);
      }
      if (!res.ok) throw errorFrom(res.status, raw, `${method} ${path}`);
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        throw new GpuxError('INTERNAL', `${method} ${path}: the coordinator answered with something that is not JSON`);
      }
      const parsed = schema.safeParse(json);
      if (!parsed.success) throw new GpuxError('INTERNAL', `${method} ${path}: unexpected answer from the coordinator: ${parsed.error.message}`);
      return parsed.data;
    });
  }
}

async function parseJson<S extends z.ZodType>(res: Response, schema: S, what: string): Promise<z.output<S>> {
  let json: unknown;
  try {
    json = await res.json();
  } catch (e) {
    throw new CoordinatorUnreachableError(`${what}: the answer was cut or is not JSON (${describe(e)})`, e);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new GpuxError('INTERNAL', `${what}: unexpected answer from the coordinator: ${parsed.error.message}`);
  return parsed.data;
}

function withId(path: string, id: string): string {
  return path.replace(':id', encodeURIComponent(id));
}

function errorFrom(status: number, raw: string, what: string): GpuxError {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    body = undefined;
  }
  const parsed = ErrorBody.safeParse(body);
  if (parsed.success) {
    const { code, message, problems } = parsed.data.error;
    if (code === 'UNAVAILABLE') return new CoordinatorUnreachableError(`${what}: ${message}`);
    return new CoordinatorApiError(status, code, `${what}: ${message}`, problems);
  }
  if (status === 502 || status === 503 || status === 504) return new CoordinatorUnreachableError(`${what}: HTTP ${status}`);
  return new CoordinatorApiError(status, codeForStatus(status), `${what}: HTTP ${status}`);
}

function codeForStatus(status: number): ErrorCode {
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 410) return 'GONE';
  if (status === 413) return 'BODY_TOO_LARGE';
  if (status === 429) return 'LIMIT_EXCEEDED';
  if (status >= 500) return 'INTERNAL';
  return 'REQUEST_INVALID';
}

function describe(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError') return 'request timed out';
  return err.cause?.code ?? err.cause?.message ?? err.message;
}
