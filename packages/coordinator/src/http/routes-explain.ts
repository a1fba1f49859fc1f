/** GET /v1/jobs/:id/explain: why a pending job waits (buyers see their own jobs, operators all). */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { explainJobWait } from '../services/explain.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesExplainDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'predictions' | 'random' | 'scheduling' | 'signals' | 'startedAt' | 'store' | 'work'>;

export function mountExplainRoutes(app: FastifyInstance, rt: RoutesExplainDeps): void {
  mountRoute(app, rt, 'explainJob', ({ principal, id }) => explainJobWait(rt, principal, id));
}
