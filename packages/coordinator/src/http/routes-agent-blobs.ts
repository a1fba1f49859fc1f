
import { GpuxError } from '@gpux/core';
import { OUTPUT_UPLOAD_TOKEN_HEADER, UPLOAD_OFFSET_HEADER } from '@gpux/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Needs } from '../runtime.js';
import { AgentBlobService } from '../services/agent-blobs.js';
import type { BlobService } from '../services/blobs.js';
import { authLimitHooks } from './auth-limit.js';
import { mountRoute } from './route-kit.js';
import { declaredLength, noBytes, OCTETS, offsetHeader, sendBlob } from './routes-blobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesAgentBlobsDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

function rangeOf(req: FastifyRequest): string | undefined {
  return typeof req.headers.range === 'string' ? req.headers.range : undefined;
}

function tokenOf(req: FastifyRequest): string | undefined {
  const raw = req.headers[OUTPUT_UPLOAD_TOKEN_HEADER];
  return typeof raw === 'string' && raw.length <= 256 ? raw : undefined;
}

export function mountAgentBlobRoutes(app: FastifyInstance, rt: RoutesAgentBlobsDeps, blobs: BlobService): AgentBlobService {
  const service = new AgentBlobService(rt, blobs);
  mountRoute(app, rt, 'attemptInput', async ({ nodeId, id, req, reply }) => {
    const sha256 = (req.params as { sha256?: string }).sha256 ?? '';
    return sendBlob(reply, await service.input(nodeId, id, sha256, rangeOf(req)), sha256, rangeOf(req));
  });
  mountRoute(app, rt, 'attemptCheckpoint', async ({ nodeId, id, req, reply }) => {
    const d = await service.checkpoint(nodeId, id, rangeOf(req));
    return sendBlob(reply, d, 'checkpoint', rangeOf(req));
  });
  mountRoute(app, rt, 'createOutputUpload', ({ nodeId, id, body }) => service.begin(nodeId, id, 'output', body));
  mountRoute(app, rt, 'createCheckpointUpload', ({ nodeId, id, body }) => service.begin(nodeId, id, 'checkpoint', body));
  app.register(async (scope) => {
    scope.removeContentTypeParser('*');
    scope.addContentTypeParser(OCTETS, (_req, payload, done) => done(null, payload));
    scope.addContentTypeParser('*', (_req, _payload, done) => done(new GpuxError('REQUEST_INVALID', `send upload chunks as ${OCTETS}`), undefined));
    // The token is the credential here: refused tokens count against the address like refused signatures.
    const limit = authLimitHooks(rt);
    scope.addHook('onRequest', limit.onRequest);
    scope.addHook('onError', limit.onError);
    mountRoute(scope, rt, 'getAgentUpload', ({ id, req }) => service.status(id, tokenOf(req)));
    mountRoute(scope, rt, 'appendAgentUpload', async ({ id, req, reply }) => {
      const offset = offsetHeader(req);
      const raw = req.body as { [Symbol.asyncIterator]?: unknown } | undefined | null;
      if (raw != null && typeof raw[Symbol.asyncIterator] !== 'function') throw new GpuxError('REQUEST_INVALID', `send upload chunks as ${OCTETS}`);
      const body = raw == null ? noBytes() : (raw as AsyncIterable<Uint8Array>);
      try {
        return await service.append(id, tokenOf(req), offset, body, declaredLength(req), (server) => reply.header(UPLOAD_OFFSET_HEADER, String(server)));
      } catch (err) {
        // The rest of a refused or cut body is never read: close the connection after the answer.
        if (!req.raw.readableEnded) reply.header('connection', 'close');
        throw err;
      }
    });
  });
  return service;
}
