/** GET /v1/stats: network totals for buyers and operators (aggregates only: no node or job ids). */
import type { FastifyInstance } from 'fastify';
import type { Runtime } from '../runtime.js';
import { networkStats } from '../services/stats.js';
import { mountRoute } from './route-kit.js';

export function mountStatsRoutes(app: FastifyInstance, rt: Runtime): void {
  mountRoute(app, rt, 'stats', () => networkStats(rt));
}
