/** GET /v1/federation/balance (issue 15, operator token): inter-region clearing per peer and asset, with jobs sent, received and open. */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { regionBalance } from '../services/region-balance.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesRegionBalanceDeps = Needs<'clock' | 'config' | 'nodeKeys' | 'nonces' | 'startedAt' | 'store'>;

export function mountRegionBalanceRoutes(app: FastifyInstance, rt: RoutesRegionBalanceDeps): void {
  mountRoute(app, rt, 'regionBalance', () => regionBalance(rt));
}
