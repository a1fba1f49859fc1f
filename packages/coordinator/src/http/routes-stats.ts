/** GET /v1/stats: network totals for buyers and operators (aggregates only: no node or job ids). */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { networkStats } from '../services/stats.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesStatsDeps = Needs<'clock' | 'config' | 'index' | 'metrics' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'startedAt' | 'store'>;

export function mountStatsRoutes(app: FastifyInstance, rt: RoutesStatsDeps): void {
  mountRoute(app, rt, 'stats', () => networkStats(rt));
}
