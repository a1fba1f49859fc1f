/** JSON bodies only, parsed by us so the raw bytes stay available for node signature checks. */
import { GpuxError } from '@gpux/core';
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** The exact request body bytes (undefined when there was no body). */
    rawBody?: Buffer;
  }
}

export function installJsonParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  // No parser-level limit: Fastify then applies the route's bodyLimit (result reports get a larger one).
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) => {
    const raw = body as Buffer;
    req.rawBody = raw;
    if (raw.length === 0) return done(null, undefined);
    try {
      done(null, JSON.parse(raw.toString('utf8')));
    } catch (e) {
      done(new GpuxError('REQUEST_INVALID', `the body is not valid JSON: ${(e as Error).message}`), undefined);
    }
  });
  app.addContentTypeParser('*', (_req, _payload, done) => {
    done(new GpuxError('REQUEST_INVALID', 'send the body as application/json'), undefined);
  });
}
