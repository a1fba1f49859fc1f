/** The key relay of end-to-end encrypted jobs (issue 13): buyer routes and node routes; wrapped keys only. */
import { GpuxError } from '@gpux/core';
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { announceOutputKey, attemptKey, keyRequests, releaseKey } from '../services/e2e-keys.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesE2eDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

export function mountE2eRoutes(app: FastifyInstance, rt: RoutesE2eDeps): void {
  mountRoute(app, rt, 'keyRequests', ({ principal, id }) => keyRequests(rt, principal, id));
  mountRoute(app, rt, 'releaseKey', ({ principal, id, req, body }) => {
    const attemptId = (req.params as { attemptId?: string }).attemptId ?? '';
    if (attemptId.length === 0 || attemptId.length > 128) throw new GpuxError('REQUEST_INVALID', 'attemptId must be 1 to 128 characters');
    return releaseKey(rt, principal, id, attemptId, body.wrappedKey);
  });
  mountRoute(app, rt, 'attemptKey', ({ nodeId, id }) => attemptKey(rt, nodeId, id));
  mountRoute(app, rt, 'attemptOutputKey', ({ nodeId, id, body }) => announceOutputKey(rt, nodeId, id, body.wrappedKey));
}
