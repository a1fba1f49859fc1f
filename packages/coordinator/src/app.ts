/** buildApp: the Fastify instance with every /v1 route, system routes, error mapping and request metrics. */
import Fastify, { type FastifyInstance, LogController } from 'fastify';
import { installJsonParser } from './http/body-parser.js';
import { clientErrorHandler, frameworkErrors } from './http/client-errors.js';
import { mountDashboard } from './http/dashboard.js';
import { installErrorHandlers } from './http/errors.js';
import { mountAgentRoutes } from './http/routes-agent.js';
import { mountAgentBlobRoutes } from './http/routes-agent-blobs.js';
import { mountBlobRoutes } from './http/routes-blobs.js';
import { mountE2eRoutes } from './http/routes-e2e.js';
import { mountEnrollmentRoutes } from './http/routes-enrollment.js';
import { mountExplainRoutes } from './http/routes-explain.js';
import { mountFederationRoutes } from './http/routes-federation.js';
import { mountBuyerRoutes } from './http/routes-buyer.js';
import { mountMarketRoutes } from './http/routes-market.js';
import { mountOffersRoutes } from './http/routes-offers.js';
import { mountOperatorRoutes } from './http/routes-operator.js';
import { mountRegionBalanceRoutes } from './http/routes-region-balance.js';
import { mountStatsRoutes } from './http/routes-stats.js';
import { mountSystemRoutes } from './http/routes-system.js';
import { installSecurityHeaders } from './http/security-headers.js';
import { type CoordinatorDeps, createRuntime, type Runtime } from './runtime.js';
import type { TlsPair } from './tls.js';

export type AppDeps = CoordinatorDeps & {
  /** Shared with the background loops; built from the deps when absent. */
  runtime?: Runtime;
  /** The dashboard build served at /. Default: packages/dashboard/dist of this workspace. */
  dashboardDir?: string;
  /** Serve HTTPS with this certificate and key (start.ts loads and watches the files); absent: plain HTTP. */
  tls?: TlsPair;
};

export function buildApp(deps: AppDeps): FastifyInstance {
  const rt = deps.runtime ?? createRuntime(deps);
  const app = Fastify({
    loggerInstance: rt.logger,
    // Heartbeats and long-polls would flood the log at info; we log requests at debug below.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: rt.config.bodyLimitBytes,
    return503OnClosing: true,
    // Close must not wait for keep-alive sockets that never send another request (long-polls are ended
    // first; an agent whose in-flight call is cut retries it, and every agent call is idempotent).
    forceCloseConnections: true,
    // Requests the HTTP parser refuses get the API's error body too (issue 10: every refusal has a code).
    clientErrorHandler,
    frameworkErrors,
    ...(deps.tls ? { https: { cert: deps.tls.cert, key: deps.tls.key } } : {}),
    // X-Forwarded-For is believed only from the proxies the operator names (GPUX_TRUST_PROXY); else request.ip is the peer.
    ...(rt.config.trustProxy.length > 0 ? { trustProxy: rt.config.trustProxy } : {}),
  }) as unknown as FastifyInstance;
  installJsonParser(app);
  installErrorHandlers(app);
  installSecurityHeaders(app, { hsts: deps.tls !== undefined });
  // Durable before shown: no answer, to the writer or to a reader, goes out before the commits it may show are on disk.
  app.addHook('onSend', async (_req, _reply, payload) => {
    await rt.store.synced();
    return payload;
  });
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'unmatched';
    rt.metrics.httpDuration.observe({ method: req.method, route, status: String(reply.statusCode) }, reply.elapsedTime / 1000);
    req.log.debug({ method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });
  mountSystemRoutes(app, rt);
  mountBuyerRoutes(app, rt);
  mountOperatorRoutes(app, rt);
  mountEnrollmentRoutes(app, rt);
  mountAgentRoutes(app, rt);
  mountExplainRoutes(app, rt);
  mountStatsRoutes(app, rt);
  mountMarketRoutes(app, rt);
  mountOffersRoutes(app, rt);
  mountAgentBlobRoutes(app, rt, mountBlobRoutes(app, rt));
  mountE2eRoutes(app, rt);
  mountFederationRoutes(app, rt);
  mountRegionBalanceRoutes(app, rt);
  mountDashboard(app, deps.dashboardDir ? { dir: deps.dashboardDir } : {});
  return app;
}
