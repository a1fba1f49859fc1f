/** Prices before launch (issue 16): GET /v1/offers and POST /v1/jobs/quote, for any buyer (operators too). Nothing is written. */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { offers } from '../services/offers.js';
import { quoteJob } from '../services/quote.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesOffersDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'scheduling' | 'startedAt' | 'store'>;

export function mountOffersRoutes(app: FastifyInstance, rt: RoutesOffersDeps): void {
  mountRoute(app, rt, 'offers', async ({ query }) => offers(rt, query));
  // The body is the submit's ({ spec }), checked by the same schema with the same messages.
  mountRoute(app, rt, 'quoteJob', ({ principal, body }) => quoteJob(rt, principal, body.spec), { specBody: true });
}
