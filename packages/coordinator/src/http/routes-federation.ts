/**
 * Federation routes (issue 15): operators add, list and remove peer regions and read this region's summary; a
 * peer's signed summary exchange (POST /v1/federation/summary) is authenticated by its coordinator key before its
 * body is read, and answered with this region's summary signed over the request's nonce.
 */
import { GpuxError } from '@gpux/core';
import { FEDERATION_HEADERS, MAX_SUMMARY_BODY_BYTES, problemsFromZod, ROUTES, SummaryExchange } from '@gpux/protocol';
import type { FastifyInstance } from 'fastify';
import { authenticatePeer } from '../federation/peer-auth.js';
import { addPeer, answerPeer, listPeers, removePeer } from '../federation/peers.js';
import { regionSummary } from '../federation/summary.js';
import type { Needs } from '../runtime.js';
import { authLimitHooks } from './auth-limit.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesFederationDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'random' | 'scheduling' | 'signer' | 'startedAt' | 'store'>;

export function mountFederationRoutes(app: FastifyInstance, rt: RoutesFederationDeps): void {
  mountRoute(app, rt, 'regionPeers', () => listPeers(rt));
  mountRoute(app, rt, 'addPeer', async ({ body, reply }) => {
    const peer = await addPeer(rt, body);
    reply.code(201);
    return { peer };
  });
  mountRoute(app, rt, 'removePeer', async ({ id }) => ({ peer: await removePeer(rt, id) }));
  mountRoute(app, rt, 'regionSummary', () => regionSummary(rt));

  const def = ROUTES.exchangeSummary;
  app.route({
    method: def.method,
    url: def.path,
    bodyLimit: MAX_SUMMARY_BODY_BYTES,
    ...authLimitHooks(rt),
    handler: async (req, reply) => {
      const peer = await authenticatePeer(rt, req);
      const parsed = SummaryExchange.safeParse(req.body);
      if (!parsed.success) {
        const problems = problemsFromZod(parsed.error);
        throw new GpuxError('REQUEST_INVALID', `invalid summary: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, { problems });
      }
      const answer = await answerPeer(rt, peer, parsed.data.summary, req.headers[FEDERATION_HEADERS.nonce] as string);
      reply.header(FEDERATION_HEADERS.key, answer.key).header(FEDERATION_HEADERS.signature, answer.signature).type('application/json');
      return reply.send(answer.body);
    },
  });
}
