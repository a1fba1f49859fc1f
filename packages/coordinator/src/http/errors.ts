/** Error responses: one table from error code to HTTP status, and the Fastify error and 404 handlers. */
import { GpuxError, isGpuxError } from '@gpux/core';
import type { ErrorBody, ErrorCode } from '@gpux/protocol';
import type { FastifyError, FastifyInstance } from 'fastify';

export const STATUS_OF: Record<ErrorCode, number> = {
  SPEC_INVALID: 400,
  REQUEST_INVALID: 400,
  BODY_TOO_LARGE: 413,
  UNAUTHORIZED: 401,
  SIGNATURE_INVALID: 401,
  FORBIDDEN: 403,
  JOB_NOT_FOUND: 404,
  ATTEMPT_NOT_FOUND: 404,
  NODE_NOT_FOUND: 404,
  NOT_FOUND: 404,
  CONFLICT: 409,
  JOB_FINISHED: 409,
  RESULT_NOT_READY: 409,
  /** An encrypted attempt's data key is not released yet: ask again with backoff (404 as before this code, so older nodes still wait). */
  KEY_NOT_RELEASED: 404,
  IDEMPOTENCY_KEY_REUSED: 409,
  INSUFFICIENT_FUNDS: 402,
  /** Too many requests of one kind from one caller (Retry-After says when to try again). */
  RATE_LIMITED: 429,
  /** A standing quota is full (queued jobs per buyer, concurrent long-polls, nodes per enrollment). */
  LIMIT_EXCEEDED: 429,
  /** The thing exists but is over: a write to an attempt that has ended. */
  GONE: 410,
  UNAVAILABLE: 503,
  INTERNAL: 500,
};

export function errorBody(e: GpuxError): ErrorBody {
  return { error: { code: e.code, message: e.message, ...(e.problems ? { problems: e.problems } : {}) } };
}

/** Fastify's own errors (body parsing, limits) as GpuxErrors with the status they deserve. */
function fromFastify(err: FastifyError): { status: number; error: GpuxError } | undefined {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, error: new GpuxError('BODY_TOO_LARGE', 'the request body is larger than this route accepts') };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, error: new GpuxError('REQUEST_INVALID', 'send the body as application/json') };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, error: new GpuxError('REQUEST_INVALID', err.message) };
  }
  const status = err.statusCode;
  if (status !== undefined && status >= 400 && status < 500) return { status, error: new GpuxError('REQUEST_INVALID', err.message) };
  return undefined;
}

/** Network errors of a connection, and PostgreSQL's connection-exception (08) and shutdown (57P0x) classes. */
const DB_UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', '57P01', '57P02', '57P03']);
const DB_UNREACHABLE_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|connection error|Client was closed|driver has already been destroyed/i;

/**
 * This process cannot reach its database (a replica cut off from PostgreSQL, a restart of the server): 503, so a
 * client with several coordinator URLs moves on to another replica instead of reading it as a bug.
 */
export function isDatabaseUnreachable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && (DB_UNREACHABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return DB_UNREACHABLE_MESSAGE.test(err.message);
}

/** PostgreSQL chose this transaction as a deadlock victim (40P01) or could not serialize it (40001): nothing was written, and a retry succeeds. */
export function isTransientConflict(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

export function installErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isGpuxError(err)) {
      const status = STATUS_OF[err.code];
      if (status >= 500) req.log.error({ err }, 'request failed');
      return reply.code(status).send(errorBody(err));
    }
    const mapped = fromFastify(err);
    if (mapped) return reply.code(mapped.status).send(errorBody(mapped.error));
    if (isTransientConflict(err)) {
      req.log.warn({ err }, 'a concurrent write conflicted; the client retries');
      return reply.code(503).header('retry-after', '1').send(errorBody(new GpuxError('UNAVAILABLE', `a concurrent write conflicted with this request and nothing was written (request ${req.id}): retry it`)));
    }
    if (isDatabaseUnreachable(err)) {
      req.log.error({ err }, 'the database is unreachable');
      return reply.code(503).send(errorBody(new GpuxError('UNAVAILABLE', `this coordinator cannot reach its database (request ${req.id}): try again, or another replica`)));
    }
    // Unexpected: log everything, tell the client nothing about the internals.
    req.log.error({ err }, 'unexpected error');
    return reply.code(500).send(errorBody(new GpuxError('INTERNAL', `internal error (request ${req.id})`)));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody(new GpuxError('NOT_FOUND', `no route ${req.method} ${req.url.split('?')[0]}`)));
  });
}
