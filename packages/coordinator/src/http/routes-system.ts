/** System routes: liveness, readiness and the OpenAPI document (open), Prometheus metrics (operator or metrics token unless GPUX_METRICS=open). */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { authorizeMetrics } from './metrics-auth.js';
import { buildOpenApi } from './openapi.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesSystemDeps = Needs<'bus' | 'config' | 'leads' | 'metrics' | 'store'>;

const READY_TIMEOUT_MS = 2000;

export function mountSystemRoutes(app: FastifyInstance, rt: RoutesSystemDeps): void {
  // Which replica answered and whether it leads (issue 14): a load balancer or an operator can see the leader move.
  app.get('/healthz', async () => ({ status: 'ok', replica: { id: rt.bus.replicaId, leader: rt.leads() } }));
  app.get('/readyz', async (_req, reply) => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${READY_TIMEOUT_MS} ms`)), READY_TIMEOUT_MS);
      });
      await Promise.race([rt.store.countTokens(), timeout]);
      return { status: 'ok', checks: { store: 'ok' } };
    } catch (err) {
      return reply.code(503).send({ status: 'unavailable', checks: { store: (err as Error).message } });
    } finally {
      clearTimeout(timer);
    }
  });
  app.get('/metrics', async (req, reply) => {
    await authorizeMetrics(rt, req);
    const body = await rt.metrics.registry.metrics();
    return reply.type(rt.metrics.registry.contentType).send(body);
  });
  let doc: object | undefined;
  app.get('/v1/openapi.json', async () => {
    doc ??= buildOpenApi(rt.config.publicUrl);
    return doc;
  });
}
