/** GpuxClient: one typed method per buyer/operator route of ROUTES, plus log following and job waiting (money routes: market.ts). */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { tlsFetch, tlsFetchFromFiles } from '@gpux/protocol/tls-fetch';
import {
  type CreateTokenRequest,
  HealthResponse,
  IDEMPOTENCY_HEADER,
  type JobLogEntry,
  type JobSpecInput,
  type JobState,
  type JobView,
  type NodeStatus,
  TERMINAL_JOB_STATES,
} from '@gpux/protocol';
import { GpuxApiError, GpuxClientError, GpuxConnectionError, GpuxTlsError } from './errors.js';
import { GpuxFederationRoutes } from './federation.js';
import { type VerifyJobReport, verifyJobResult } from './verify.js';
import { type CallOptions, callRoute, type FetchLike, parseCoordinatorUrls, type RouteResponse, request, type TransportConfig } from './transport.js';

export interface GpuxClientOptions {
  /**
   * Coordinator base URL, e.g. http://127.0.0.1:8080; or several (an array, or one string with commas) for
   * replicas: a request moves on to the next URL when the current one cannot be reached or answers 502/503/504,
   * if it is safe to send twice (reads, submitJob with its idempotency key) or was never sent (connection refused,
   * TLS failed); the client stays on the URL that last answered.
   */
  url: string | readonly string[];
  /** Bearer token of a buyer or operator account. */
  token?: string;
  /**
   * Send the token even over plain HTTP to a non-loopback host (a warning says what it exposes, once).
   * Default false: such a request is refused with GpuxInsecureTransportError before anything is sent.
   */
  insecure?: boolean;
  /** Your own fetch (tests, instrumentation, a proxy agent). Not together with `ca` / `caFile`. */
  fetch?: FetchLike;
  /**
   * PEM CA bundle to trust instead of the system's roots, for a coordinator whose certificate a private CA
   * signed (the CLI's GPUX_CA_FILE). `caFile` is its path, read once here; an unreadable file throws at once.
   */
  ca?: string | Buffer;
  caFile?: string;
  /** Per-request timeout; long polls add their wait to it. Default 30 s. */
  timeoutMs?: number;
  /** How often submitJob retries a connection error or 503 (with the same idempotency key). Default 4. */
  submitRetries?: number;
  /** First retry delay; doubles each time. Default 250 ms. */
  retryDelayMs?: number;
}

export type CreateTokenBody = ReturnType<typeof CreateTokenRequest.parse>;
export type HealthResponseBody = ReturnType<typeof HealthResponse.parse>;
export interface ListJobsParams {
  /** One state or a comma-separated list. */
  state?: JobState | string;
  limit?: number;
  cursor?: string;
}
export interface ListNodesParams {
  status?: NodeStatus;
  limit?: number;
  cursor?: string;
}
export interface RequestOptions {
  signal?: AbortSignal;
}
export interface SubmitJobOptions extends RequestOptions {
  idempotencyKey?: string;
}
export interface JobLogsOptions extends RequestOptions {
  after?: number;
  limit?: number;
  waitMs?: number;
}
export interface FollowLogsOptions extends RequestOptions {
  after?: number;
  /** Long-poll wait per request. Default 10 s. */
  waitMs?: number;
  /** Pause after an empty page, in case the server answers without waiting. Default 250 ms. */
  idleMs?: number;
}
export interface WaitForJobOptions extends RequestOptions {
  /** Called with the job on every poll. */
  onUpdate?: (job: JobView) => void;
  /** Default 1000 ms. */
  pollMs?: number;
}

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';
const DEFAULT_TIMEOUT_MS = 30_000;

/** The fetch the client uses: the caller's, one trusting a private CA, or the global one looked up per call. */
function fetchFor(opts: GpuxClientOptions): FetchLike {
  const custom = opts.ca !== undefined || opts.caFile !== undefined;
  if (opts.fetch && custom) throw new GpuxClientError('give GpuxClient either fetch or ca / caFile, not both: a custom fetch makes its own TLS choices');
  if (opts.fetch) return opts.fetch;
  if (opts.ca !== undefined && opts.caFile !== undefined) throw new GpuxClientError('give GpuxClient either ca (PEM text) or caFile (its path), not both');
  if (opts.caFile !== undefined) {
    try {
      return tlsFetchFromFiles({ caFile: opts.caFile, source: 'caFile' }) as FetchLike;
    } catch (err) {
      throw new GpuxClientError((err as Error).message, { cause: err });
    }
  }
  if (opts.ca !== undefined) return tlsFetch({ ca: opts.ca }) as FetchLike;
  // Look fetch up per call by default, so a replaced global (tests, instrumentation) is honoured.
  return (input, init) => globalThis.fetch(input, init);
}

export class GpuxClient extends GpuxFederationRoutes {
  /** Every coordinator URL of this client, normalized, in the order given. */
  readonly urls: readonly string[];
  private readonly submitRetries: number;
  private readonly retryDelayMs: number;

  constructor(opts: GpuxClientOptions) {
    const urls = parseCoordinatorUrls(opts.url);
    const fetchImpl = fetchFor(opts);
    const cfg: TransportConfig = {
      baseUrl: urls[0] as string,
      urls,
      current: 0,
      token: opts.token,
      fetch: fetchImpl,
      timeoutMs: opts.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      insecure: opts.insecure === true,
    };
    super(cfg);
    this.urls = urls;
    this.submitRetries = opts.submitRetries ?? 4;
    this.retryDelayMs = opts.retryDelayMs ?? 250;
  }

  /** The coordinator URL requests go to now (the one that last answered, with several URLs). */
  get url(): string {
    return this.cfg.baseUrl;
  }

  // ---- buyers ----

  /** Submit a job. Retries connection errors and 503s with one idempotency key, so a retry never creates a second job. */
  async submitJob(spec: JobSpecInput, opts: SubmitJobOptions = {}): Promise<RouteResponse<'submitJob'>> {
    const key = opts.idempotencyKey ?? randomUUID();
    const call: CallOptions = { body: { spec }, headers: { [IDEMPOTENCY_HEADER]: key } };
    if (opts.signal) call.signal = opts.signal;
    for (let attempt = 0; ; attempt++) {
      try {
        return await callRoute(this.cfg, 'submitJob', call);
      } catch (err) {
        // A TLS failure repeats until the trust or the certificate changes: not retried.
        const retryable = (err instanceof GpuxConnectionError && !(err instanceof GpuxTlsError)) || (err instanceof GpuxApiError && err.status === 503);
        if (!retryable || attempt >= this.submitRetries) throw err;
        await sleep(this.retryDelayMs * 2 ** attempt, undefined, opts.signal ? { signal: opts.signal } : undefined);
      }
    }
  }

  /**
   * Dry run of a submit: the coordinator checks the spec as submit does and answers the hold, the price range over the
   * nodes that fit, how many fit now and the expected wait. Writes nothing (no job, no hold), so it is safe to repeat.
   */
  quoteJob(spec: JobSpecInput, opts: RequestOptions = {}): Promise<RouteResponse<'quoteJob'>> {
    return callRoute(this.cfg, 'quoteJob', { body: { spec }, ...sig(opts) });
  }

  listJobs(query: ListJobsParams = {}, opts: RequestOptions = {}): Promise<RouteResponse<'listJobs'>> {
    return callRoute(this.cfg, 'listJobs', { query: { state: query.state, limit: query.limit, cursor: query.cursor }, ...sig(opts) });
  }

  /** The job with its newest events; pass `eventsBefore` (a page's moreEventsBefore) to read older ones. */
  getJob(id: string, opts: RequestOptions & { eventsBefore?: number; eventsLimit?: number } = {}): Promise<RouteResponse<'getJob'>> {
    return callRoute(this.cfg, 'getJob', { params: { id }, query: { eventsBefore: opts.eventsBefore, eventsLimit: opts.eventsLimit }, ...sig(opts) });
  }

  /** Why a pending job waits: nodes rejected per filter, queue position, the price, what to change (the coordinator's sentences). */
  explainJob(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'explainJob'>> {
    return callRoute(this.cfg, 'explainJob', { params: { id }, ...sig(opts) });
  }

  cancelJob(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'cancelJob'>> {
    return callRoute(this.cfg, 'cancelJob', { params: { id }, ...sig(opts) });
  }

  jobLogs(id: string, opts: JobLogsOptions = {}): Promise<RouteResponse<'jobLogs'>> {
    const waitMs = opts.waitMs ?? 0;
    return callRoute(this.cfg, 'jobLogs', {
      params: { id },
      query: { after: opts.after, limit: opts.limit, waitMs: opts.waitMs },
      timeoutMs: this.cfg.timeoutMs + waitMs,
      ...sig(opts),
    });
  }

  /** Every log entry of the job from `after` on, long-polling until the job is finished and fully read. */
  async *followLogs(id: string, opts: FollowLogsOptions = {}): AsyncIterable<JobLogEntry> {
    let after = opts.after ?? -1;
    const waitMs = opts.waitMs ?? 10_000;
    const idleMs = opts.idleMs ?? 250;
    for (;;) {
      const page = await this.jobLogs(id, { after, waitMs, ...sig(opts) });
      for (const entry of page.entries) yield entry;
      after = page.next;
      if (page.done) return;
      if (page.entries.length === 0) await sleep(idleMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
    }
  }

  /**
   * Dispute an ended job's result within its dispute window (`job.verification.windowClosesAt`): a bond is
   * taken from your wallet and referee runs on independent operators decide (2 must agree). The bond returns if the
   * result was wrong and goes to the node if it was not.
   */
  disputeJob(id: string, reason: string, opts: RequestOptions = {}): Promise<RouteResponse<'disputeJob'>> {
    return callRoute(this.cfg, 'disputeJob', { params: { id }, body: { reason }, ...sig(opts) });
  }

  jobResult(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'jobResult'>> {
    return callRoute(this.cfg, 'jobResult', { params: { id }, ...sig(opts) });
  }

  /**
   * Fetch the result and check it against the node's signed commitment (signature, output root digest
   * recomputed from the bytes: `files` by path, else the inline contents). Never says the result is correct.
   */
  async verifyJob(id: string, opts: RequestOptions & { files?: ReadonlyMap<string, Uint8Array> } = {}): Promise<VerifyJobReport> {
    return verifyJobResult(await this.jobResult(id, sig(opts)), opts.files);
  }

  /** Poll the job until it reaches a terminal state; returns the final job. */
  async waitForJob(id: string, opts: WaitForJobOptions = {}): Promise<JobView> {
    const pollMs = opts.pollMs ?? 1000;
    for (;;) {
      const { job } = await this.getJob(id, sig(opts));
      opts.onUpdate?.(job);
      if (TERMINAL_JOB_STATES.includes(job.state)) return job;
      await sleep(pollMs, undefined, opts.signal ? { signal: opts.signal } : undefined);
    }
  }

  whoami(opts: RequestOptions = {}): Promise<RouteResponse<'whoami'>> {
    return callRoute(this.cfg, 'whoami', sig(opts));
  }

  // ---- operators ----

  listNodes(query: ListNodesParams = {}, opts: RequestOptions = {}): Promise<RouteResponse<'listNodes'>> {
    return callRoute(this.cfg, 'listNodes', { query: { status: query.status, limit: query.limit, cursor: query.cursor }, ...sig(opts) });
  }

  getNode(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'getNode'>> {
    return callRoute(this.cfg, 'getNode', { params: { id }, ...sig(opts) });
  }

  cordonNode(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'cordonNode'>> {
    return callRoute(this.cfg, 'cordonNode', { params: { id }, ...sig(opts) });
  }

  uncordonNode(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'uncordonNode'>> {
    return callRoute(this.cfg, 'uncordonNode', { params: { id }, ...sig(opts) });
  }

  drainNode(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'drainNode'>> {
    return callRoute(this.cfg, 'drainNode', { params: { id }, ...sig(opts) });
  }

  /** Vouch for a node (curated) or take it back (open); attested is refused (only verified evidence attests). */
  setNodeTier(id: string, tier: 'open' | 'attested' | 'curated', opts: RequestOptions = {}): Promise<RouteResponse<'setNodeTier'>> {
    return callRoute(this.cfg, 'setNodeTier', { params: { id }, body: { tier }, ...sig(opts) });
  }

  /** A node's penalties with their evidence (its provider or an operator). */
  nodePenalties(id: string, opts: RequestOptions = {}): Promise<RouteResponse<'nodePenalties'>> {
    return callRoute(this.cfg, 'nodePenalties', { params: { id }, ...sig(opts) });
  }

  createToken(body: CreateTokenBody, opts: RequestOptions = {}): Promise<RouteResponse<'createToken'>> {
    return callRoute(this.cfg, 'createToken', { body, ...sig(opts) });
  }

  /** Liveness: the process is up (no token needed). */
  async health(opts: RequestOptions = {}): Promise<HealthResponseBody> {
    return (await request(this.cfg, 'GET', HEALTH_PATH, HealthResponse, `health (GET ${HEALTH_PATH})`, sig(opts))) as HealthResponseBody;
  }

  /** Readiness: the coordinator can reach its store. A 503 is an answer here, not an error. */
  async ready(opts: RequestOptions = {}): Promise<HealthResponseBody> {
    return (await request(this.cfg, 'GET', READY_PATH, HealthResponse, `ready (GET ${READY_PATH})`, { ...sig(opts), okStatuses: [503] })) as HealthResponseBody;
  }
}

function sig(opts: RequestOptions): { signal?: AbortSignal } {
  return opts.signal ? { signal: opts.signal } : {};
}
