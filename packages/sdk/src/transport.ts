/** One HTTP call to a route of ROUTES: URL building, auth, timeout, error mapping and response validation. */
import { assertSafeTransport, ErrorBody, InsecureTransportError, Problem, problemsFromZod, ROUTES, type RouteName } from '@gpux/protocol';
import { codeForStatus, GpuxApiError, GpuxClientError, GpuxConnectionError, GpuxInsecureTransportError, GpuxResponseError, GpuxTlsError, isErrorCode } from './errors.js';
import { connectionRefused, describeTries, FAILOVER_STATUSES, moveOn, replayable, stickTo, type UrlRing } from './failover.js';

export { normalizeBaseUrl, parseCoordinatorUrls } from './failover.js';

/** The validated (zod output) body a route answers with. */
export type RouteResponse<K extends RouteName> = ReturnType<(typeof ROUTES)[K]['response']['parse']>;

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface TransportConfig extends UrlRing {
  /** The URL requests go to now: `urls[current]`, moved by failover (failover.ts). */
  baseUrl: string;
  /** Every coordinator URL the client may use, in order (one for a single coordinator). */
  urls: readonly string[];
  current: number;
  token: string | undefined;
  fetch: FetchLike;
  timeoutMs: number;
  /** Accept sending the token over plain HTTP to a non-loopback host (warned once). Default false: refused. */
  insecure?: boolean;
  /** Set once the base URL was judged safe (or the insecure warning was shown), so the check runs once per client. */
  transportChecked?: boolean;
}

export interface CallOptions {
  params?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Overrides the client's timeout (long polls add their wait to it). */
  timeoutMs?: number;
  /** Non-2xx statuses whose body is still validated and returned (readiness answers 503 with a body). */
  okStatuses?: number[];
}

export function buildPath(template: string, params: Record<string, string> = {}): string {
  return template.replace(/:([A-Za-z]+)/g, (_, key: string) => {
    const value = params[key];
    if (value === undefined || value === '') throw new GpuxClientError(`missing path parameter "${key}" for ${template}`);
    return encodeURIComponent(value);
  });
}

function queryString(query: CallOptions['query']): string {
  if (!query) return '';
  const search = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined) search.set(k, String(v));
  const s = search.toString();
  return s ? `?${s}` : '';
}

function describeCause(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return err instanceof Error ? err.message : String(err);
}

/** OpenSSL's verdicts for a chain that leads to no trusted CA: the client lacks the CA bundle that signed it. */
const UNTRUSTED_CODES = new Set([
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_UNTRUSTED',
  'CERT_SIGNATURE_FAILURE',
]);
const OTHER_TLS_CODES = new Set(['CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'HOSTNAME_MISMATCH', 'INVALID_CA', 'INVALID_PURPOSE', 'CERT_CHAIN_TOO_LONG']);

/** The TLS failure under a fetch error (undici nests the socket's error as `cause`), or null for any other failure. */
export function tlsFailure(err: unknown): { reason: string; untrusted: boolean } | null {
  let e = err as { cause?: unknown; code?: unknown; message?: unknown } | undefined;
  for (let depth = 0; e && depth < 4; depth++, e = e.cause as typeof e) {
    const code = typeof e.code === 'string' ? e.code : '';
    const message = typeof e.message === 'string' ? e.message : '';
    if (UNTRUSTED_CODES.has(code)) return { reason: `${code}: ${message}`, untrusted: true };
    if (OTHER_TLS_CODES.has(code) || /^ERR_(TLS|SSL)_/.test(code) || message.includes('pinned fingerprints')) return { reason: code ? `${code}: ${message}` : message, untrusted: false };
  }
  return null;
}

function tlsMessage(baseUrl: string, tls: { reason: string; untrusted: boolean }): string {
  if (tls.untrusted) return `the certificate of the coordinator at ${baseUrl} is not trusted (${tls.reason}): give the client the CA bundle that signed it (caFile or ca)`;
  return `TLS with the coordinator at ${baseUrl} failed (${tls.reason})`;
}

export async function callRoute<K extends RouteName>(cfg: TransportConfig, name: K, opts: CallOptions = {}): Promise<RouteResponse<K>> {
  const route = ROUTES[name];
  const path = buildPath(route.path, opts.params);
  return (await request(cfg, route.method, path, route.response, `${name} (${route.method} ${route.path})`, opts)) as RouteResponse<K>;
}

/**
 * The raw call; also used for routes outside ROUTES (health). With several URLs, a connection failure or a
 * 502/503/504 moves on to the next URL when the request may be sent twice (replayable) or was never sent
 * (connection refused, TLS failed); the URL that answers is kept for later requests.
 */
export async function request(
  cfg: TransportConfig,
  method: 'GET' | 'POST' | 'PUT',
  path: string,
  schema: { safeParse(data: unknown): { success: true; data: unknown } | { success: false; error: Parameters<typeof problemsFromZod>[0] } },
  label: string,
  opts: CallOptions,
): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  if (cfg.token) {
    guardToken(cfg);
    headers.authorization = `Bearer ${cfg.token}`;
  }
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  const canReplay = replayable(method, opts.headers);
  const tries: { url: string; what: string }[] = [];
  const first = cfg.current;
  for (let n = 0; ; n++) {
    const index = (first + n) % cfg.urls.length;
    const base = cfg.urls[index] as string;
    const last = n + 1 >= cfg.urls.length;
    let answer: { status: number; text: string };
    try {
      answer = await sendOnce(cfg, base, method, path + queryString(opts.query), headers, label, opts);
    } catch (err) {
      if (!(err instanceof GpuxConnectionError)) throw err; // the caller's abort
      moveOn(cfg, base);
      tries.push({ url: base, what: err.reason });
      // A refused connection or a failed TLS handshake sent nothing; anything else may have reached the server.
      if (!last && (canReplay || err.nothingSent)) continue;
      throw cfg.urls.length > 1 ? overAll(err, tries, label, !last) : err;
    }
    if (FAILOVER_STATUSES.includes(answer.status) && !opts.okStatuses?.includes(answer.status)) {
      tries.push({ url: base, what: `HTTP ${answer.status}` });
      if (!last && canReplay) {
        moveOn(cfg, base);
        continue;
      }
    } else stickTo(cfg, index);
    return answerOf(answer, schema, label, opts, tries);
  }
}

/** One try against one URL: the status and body, or a GpuxConnectionError / GpuxTlsError saying what failed. */
async function sendOnce(
  cfg: TransportConfig,
  base: string,
  method: string,
  pathAndQuery: string,
  headers: Record<string, string>,
  label: string,
  opts: CallOptions,
): Promise<{ status: number; text: string }> {
  const timeoutMs = opts.timeoutMs ?? cfg.timeoutMs;
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, timeoutMs);
  const onAbort = () => controller.abort(opts.signal?.reason);
  opts.signal?.throwIfAborted();
  opts.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    const init: RequestInit = { method, headers, signal: controller.signal };
    if (opts.body !== undefined) init.body = JSON.stringify(opts.body);
    const res = await cfg.fetch(base + pathAndQuery, init);
    return { status: res.status, text: await res.text() };
  } catch (err) {
    if (opts.signal?.aborted) throw opts.signal.reason;
    if (timedOut) {
      throw new GpuxConnectionError(base, `timed out after ${timeoutMs} ms waiting for the coordinator at ${base} (${label})`, { cause: err, reason: `timed out after ${timeoutMs} ms` });
    }
    const tls = tlsFailure(err);
    if (tls) throw new GpuxTlsError(base, tlsMessage(base, tls), { ...tls, cause: err });
    const cause = describeCause(err);
    throw new GpuxConnectionError(base, `cannot reach the coordinator at ${base}: is it running? (${cause})`, { cause: err, reason: cause, nothingSent: connectionRefused(err) });
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', onAbort);
  }
}

/** The error after every URL was tried (or the request could not move on): the last one's kind, naming every try. */
function overAll(err: GpuxConnectionError, tries: { url: string; what: string }[], label: string, stoppedEarly: boolean): GpuxConnectionError {
  const why = stoppedEarly ? '; not sent to the other URLs: it may have reached the last one tried, and is not safe to send twice' : '';
  const message = `cannot reach the coordinator for ${label}: tried ${describeTries(tries)}${why}`;
  if (err instanceof GpuxTlsError) return new GpuxTlsError(err.url, `${message}. Last: ${err.message}`, { reason: err.reason, untrusted: err.untrusted, cause: err, tried: tries.map((t) => t.url) });
  return new GpuxConnectionError(err.url, message, { cause: err, reason: err.reason, nothingSent: err.nothingSent, tried: tries.map((t) => t.url) });
}

function answerOf(
  answer: { status: number; text: string },
  schema: Parameters<typeof request>[3],
  label: string,
  opts: CallOptions,
  tries: { url: string; what: string }[],
): unknown {
  const { status, text } = answer;
  let json: unknown;
  let isJson = true;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    isJson = false;
  }
  if ((status < 200 || status > 299) && !opts.okStatuses?.includes(status)) {
    const err = apiError(status, isJson ? json : undefined, text, label);
    // Every URL answered like a proxy in front of nothing: say so, naming each.
    if (tries.length > 1) throw new GpuxApiError(err.status, err.code, `${err.message} (tried ${describeTries(tries)})`, err.problems);
    throw err;
  }
  if (!isJson) throw new GpuxResponseError(label, status, `${label}: the coordinator answered ${status} with a body that is not JSON: ${snippet(text)}`);
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const problems = problemsFromZod(parsed.error);
    throw new GpuxResponseError(label, status, `${label}: the coordinator's response does not match the protocol (is it a different gpux version?)`, problems);
  }
  return parsed.data;
}

/** No secrets in clear: a bearer token goes only over https or to loopback, unless the client was built with insecure. */
export function guardToken(cfg: TransportConfig): void {
  if (cfg.transportChecked) return;
  const warnings: string[] = [];
  for (const url of cfg.urls) {
    try {
      const warning = assertSafeTransport(url, { secret: 'a bearer token', insecure: cfg.insecure === true });
      if (warning) warnings.push(warning);
    } catch (err) {
      if (err instanceof InsecureTransportError) throw new GpuxInsecureTransportError(err.url, err.message, { cause: err });
      throw err;
    }
  }
  cfg.transportChecked = true;
  for (const warning of warnings) process.emitWarning(warning, { code: 'GPUX_INSECURE_TRANSPORT' });
}

function snippet(text: string): string {
  const oneLine = text.replace(/\s+/g, ' ').trim();
  return oneLine.length > 200 ? `${oneLine.slice(0, 200)}…` : oneLine || '(empty)';
}

export function apiError(status: number, json: unknown, text: string, label: string): GpuxApiError {
  const strict = ErrorBody.safeParse(json);
  if (strict.success) return new GpuxApiError(status, strict.data.error.code, strict.data.error.message, strict.data.error.problems ?? []);
  // Be lenient with error bodies: a useful message beats a validation failure on top of a failure.
  const loose = (json as { error?: { code?: unknown; message?: unknown; problems?: unknown } } | undefined)?.error;
  const code = isErrorCode(loose?.code) ? loose.code : codeForStatus(status);
  const message = typeof loose?.message === 'string' ? loose.message : `${label} failed with HTTP ${status}: ${snippet(text)}`;
  const problems = Problem.array().safeParse(loose?.problems);
  return new GpuxApiError(status, code, message, problems.success ? problems.data : []);
}
