/** GET /v1/jobs/:id/explain: why a pending job waits (buyers see their own jobs, operators all). */
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../runtime.js';
import { explainJobWait } from '../services/explain.js';
import { mountRoute } from './route-kit.js';

export function mountExplainRoutes(app: FastifyInstance, rt: Runtime): void {
  mountRoute(app, rt, 'explainJob', ({ principal, id }) => explainJobWait(rt, principal, id));
}
