/** Credential routes: node enrollment tokens (create, list, revoke) and bearer tokens (list, revoke). */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { createEnrollment, listEnrollments, listTokens, revokeEnrollment, revokeToken } from '../services/access.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesEnrollmentDeps = Needs<'clock' | 'config' | 'decider' | 'logger' | 'metrics' | 'nodeKeys' | 'nonces' | 'random' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

export function mountEnrollmentRoutes(app: FastifyInstance, rt: RoutesEnrollmentDeps): void {
  mountRoute(app, rt, 'createEnrollment', async ({ reply, principal, body }) => {
    const res = await createEnrollment(rt, principal, body);
    reply.code(201);
    return res;
  });
  mountRoute(app, rt, 'listEnrollments', ({ principal, query }) => listEnrollments(rt, principal, query));
  mountRoute(app, rt, 'revokeEnrollment', ({ principal, id, body }) => revokeEnrollment(rt, principal, id, body.removeNodes));
  mountRoute(app, rt, 'listTokens', ({ principal, query }) => listTokens(rt, principal, query));
  mountRoute(app, rt, 'revokeToken', ({ principal, id }) => revokeToken(rt, principal, id));
}
