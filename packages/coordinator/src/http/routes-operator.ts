/** Operator routes: nodes, their admin state and trust tier, token issuing. */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { getNode, listNodes, setAdminState, setTier } from '../services/nodes.js';
import { issueToken } from '../tokens.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesOperatorDeps = Needs<'clock' | 'config' | 'index' | 'logger' | 'nodeKeys' | 'nonces' | 'random' | 'signals' | 'startedAt' | 'store'>;

export function mountOperatorRoutes(app: FastifyInstance, rt: RoutesOperatorDeps): void {
  mountRoute(app, rt, 'listNodes', ({ query }) => listNodes(rt, query));
  mountRoute(app, rt, 'getNode', async ({ id }) => ({ node: await getNode(rt, id) }));
  mountRoute(app, rt, 'cordonNode', async ({ id }) => ({ node: await setAdminState(rt, id, 'cordoned') }));
  mountRoute(app, rt, 'uncordonNode', async ({ id }) => ({ node: await setAdminState(rt, id, 'active') }));
  mountRoute(app, rt, 'drainNode', async ({ id }) => ({ node: await setAdminState(rt, id, 'draining') }));
  mountRoute(app, rt, 'setNodeTier', async ({ id, body, principal }) => ({ node: await setTier(rt, id, body.tier, principal.accountId) }));
  mountRoute(app, rt, 'createToken', async ({ reply, principal, body }) => {
    const t = await issueToken(
      rt.store,
      { role: body.role, name: body.name, ...(body.expiresInSeconds !== undefined ? { expiresInSeconds: body.expiresInSeconds } : {}) },
      rt.clock,
      rt.random,
    );
    rt.logger.info({ tokenId: t.id, accountId: t.accountId, role: body.role, by: principal.accountId }, 'token created');
    reply.code(201);
    return { ...t, role: body.role };
  });
}
