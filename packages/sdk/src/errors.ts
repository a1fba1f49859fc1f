/** The errors the SDK throws: API error bodies, unreachable coordinators, and responses that break the protocol. */
import { ERROR_CODES, type ErrorCode, type Problem } from '@gpux/protocol';

/** Base class, so callers can catch every SDK failure with one `instanceof`. */
export class GpuxClientError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts?.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GpuxClientError';
  }
}

/** The coordinator answered with a non-2xx status. */
export class GpuxApiError extends GpuxClientError {
  readonly status: number;
  readonly code: ErrorCode;
  readonly problems: Problem[];

  constructor(status: number, code: ErrorCode, message: string, problems: Problem[] = []) {
    super(message);
    this.name = 'GpuxApiError';
    this.status = status;
    this.code = code;
    this.problems = problems;
  }
}

/** Refused before sending: the token would cross the network in clear (plain HTTP to a non-loopback host). */
export class GpuxInsecureTransportError extends GpuxClientError {
  readonly code = 'REQUEST_INVALID' as const;
  readonly url: string;

  constructor(url: string, message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'GpuxInsecureTransportError';
    this.url = url;
  }
}

/** The request never got an HTTP answer: refused, reset, DNS failure, or timed out. */
export class GpuxConnectionError extends GpuxClientError {
  /** The last URL tried. */
  readonly url: string;
  /** What failed, in short (ECONNREFUSED, "timed out after 30000 ms", a TLS code…). */
  readonly reason: string;
  /** True when nothing reached the server (connection refused, TLS handshake failed): safe to send again anywhere. */
  readonly nothingSent: boolean;
  /** Every URL tried, in order, when the client has several. */
  readonly tried: readonly string[];

  constructor(url: string, message: string, opts?: { cause?: unknown; reason?: string; nothingSent?: boolean; tried?: readonly string[] }) {
    super(message, opts);
    this.name = 'GpuxConnectionError';
    this.url = url;
    this.reason = opts?.reason ?? message;
    this.nothingSent = opts?.nothingSent === true;
    this.tried = opts?.tried ?? [url];
  }
}

/**
 * The TLS handshake failed: the coordinator's certificate is not trusted (a private CA the client was not
 * given), expired, for another name, or matches none of the pins. `reason` is the TLS error code or message.
 * Not retried: it fails the same way until the client's trust (ca / caFile) or the certificate changes.
 */
export class GpuxTlsError extends GpuxConnectionError {
  /** True when the chain does not lead to a trusted CA: giving the client the right CA bundle fixes it. */
  readonly untrusted: boolean;

  constructor(url: string, message: string, opts: { reason: string; untrusted: boolean; cause?: unknown; tried?: readonly string[] }) {
    // The handshake failed before any request byte was sent: another URL may be tried.
    super(url, message, { cause: opts.cause, reason: opts.reason, nothingSent: true, ...(opts.tried ? { tried: opts.tried } : {}) });
    this.name = 'GpuxTlsError';
    this.untrusted = opts.untrusted;
  }
}

/** The coordinator answered, but the body does not match the protocol schema (version skew, proxy page…). */
export class GpuxResponseError extends GpuxClientError {
  readonly status: number;
  readonly route: string;
  readonly problems: Problem[];

  constructor(route: string, status: number, message: string, problems: Problem[] = []) {
    super(message);
    this.name = 'GpuxResponseError';
    this.route = route;
    this.status = status;
    this.problems = problems;
  }
}

export const isErrorCode = (s: unknown): s is ErrorCode => typeof s === 'string' && (ERROR_CODES as readonly string[]).includes(s);

/** The code to report when an error body is missing or malformed. */
export function codeForStatus(status: number): ErrorCode {
  if (status === 400) return 'REQUEST_INVALID';
  if (status === 401) return 'UNAUTHORIZED';
  if (status === 403) return 'FORBIDDEN';
  if (status === 404) return 'NOT_FOUND';
  if (status === 409) return 'CONFLICT';
  if (status === 413) return 'BODY_TOO_LARGE';
  if (status === 503) return 'UNAVAILABLE';
  return 'INTERNAL';
}
