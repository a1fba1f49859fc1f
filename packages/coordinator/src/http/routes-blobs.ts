/**
 * Blob routes (issue 13), buyer-authenticated, in their own Fastify scope: there application/octet-stream
 * bodies reach the handler as the raw request stream (never buffered), and only upload chunks take them. The
 * blob service and its garbage collector start with the app and stop with it (its backend is closed then).
 */
import { Readable } from 'node:stream';
import { GpuxError } from '@gpux/core';
import { UPLOAD_OFFSET_HEADER } from '@gpux/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { blobGcTask } from '../loops/blob-gc.js';
import type { Needs } from '../runtime.js';
import { RegisterRateLimited } from '../services/register.js';
import { type BlobDownload, BlobService } from '../services/blobs.js';
import { errorBody } from './errors.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesBlobsDeps = Needs<'clock' | 'config' | 'leads' | 'logger' | 'nodeKeys' | 'nonces' | 'random' | 'startedAt' | 'store'>;

export const OCTETS = 'application/octet-stream';

export async function* noBytes(): AsyncIterable<Uint8Array> {}

export function offsetHeader(req: FastifyRequest): number {
  const raw = req.headers[UPLOAD_OFFSET_HEADER];
  if (typeof raw !== 'string' || !/^\d{1,16}$/.test(raw.trim())) {
    throw new GpuxError('REQUEST_INVALID', `send the chunk's offset as the ${UPLOAD_OFFSET_HEADER} header (a non-negative integer; GET the upload to learn it)`);
  }
  return Number(raw.trim());
}

export function declaredLength(req: FastifyRequest): number | undefined {
  const raw = req.headers['content-length'];
  return typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : undefined;
}

/** Retry-After on a rate-limited begin, like node registration. */
async function withRetryAfter<T>(reply: { header(k: string, v: string): unknown }, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof RegisterRateLimited) reply.header('retry-after', String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))));
    throw err;
  }
}

/** The bytes (200, or 206 for a Range), or 416 with the size. */
export function sendBlob(reply: FastifyReply, d: BlobDownload | { unsatisfiable: true; size: number }, sha256: string, range: string | undefined) {
  reply.header('accept-ranges', 'bytes');
  if ('unsatisfiable' in d) {
    reply.code(416).header('content-range', `bytes */${d.size}`);
    return errorBody(new GpuxError('REQUEST_INVALID', `the range ${range} is outside the blob's ${d.size} bytes`));
  }
  reply.raw.once('close', d.done);
  const length = d.range ? d.range.end - d.range.start : d.size;
  reply.code(d.status).type(OCTETS).header('content-length', String(length)).header('etag', `"${sha256}"`).header('cache-control', 'private, no-store');
  if (d.range) reply.header('content-range', `bytes ${d.range.start}-${d.range.end - 1}/${d.size}`);
  return d.stream instanceof Readable ? d.stream : Readable.from(d.stream);
}

export function mountBlobRoutes(app: FastifyInstance, rt: RoutesBlobsDeps, service = new BlobService(rt)): BlobService {
  const gc = blobGcTask(rt, service);
  app.addHook('onReady', async () => gc.start());
  app.addHook('onClose', async () => {
    await gc.stop();
    await service.close();
  });
  app.register(async (scope) => {
    scope.removeContentTypeParser('*');
    scope.addContentTypeParser(OCTETS, (_req, payload, done) => done(null, payload));
    scope.addContentTypeParser('*', (_req, _payload, done) => done(new GpuxError('REQUEST_INVALID', `send upload chunks as ${OCTETS} and everything else as application/json`), undefined));

    mountRoute(scope, rt, 'createBlobUpload', ({ principal, body, reply }) => withRetryAfter(reply, () => service.begin(principal, body)));
    mountRoute(scope, rt, 'getBlobUpload', ({ principal, id }) => service.status(principal, id));
    mountRoute(scope, rt, 'abortBlobUpload', ({ principal, id }) => service.abort(principal, id));
    mountRoute(scope, rt, 'appendBlobUpload', async ({ principal, id, req, reply }) => {
      const offset = offsetHeader(req);
      const raw = req.body as { [Symbol.asyncIterator]?: unknown } | undefined | null;
      if (raw != null && typeof raw[Symbol.asyncIterator] !== 'function') throw new GpuxError('REQUEST_INVALID', `send upload chunks as ${OCTETS}`);
      const body = raw == null ? noBytes() : (raw as AsyncIterable<Uint8Array>);
      try {
        return await service.append(principal, id, offset, body, declaredLength(req), (server) => reply.header(UPLOAD_OFFSET_HEADER, String(server)));
      } catch (err) {
        // The rest of a refused or cut body is never read: close the connection after the answer instead of reusing it.
        if (!req.raw.readableEnded) reply.header('connection', 'close');
        throw err;
      }
    });
    mountRoute(scope, rt, 'listBlobs', ({ principal, query }) => service.list(principal, query));
    mountRoute(scope, rt, 'getBlobInfo', ({ principal, id }) => service.info(principal, id));
    mountRoute(scope, rt, 'deleteBlob', ({ principal, id }) => service.remove(principal, id));
    mountRoute(scope, rt, 'downloadBlob', async ({ principal, id, req, reply }) => {
      const range = typeof req.headers.range === 'string' ? req.headers.range : undefined;
      const d = await service.download(principal, id, range);
      return sendBlob(reply, d, id, range);
    });
  });
  return service;
}
