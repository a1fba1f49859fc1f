/** Signed node-agent routes under /v1/agent. */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { finishAttempt, heartbeat, refuseAttempt, startAttempt } from '../services/agent.js';
import { postDigests, postReveal, REVEAL_BODY_LIMIT_BYTES } from '../services/challenges.js';
import { appendAttemptEvents, appendLogs } from '../services/attempt-writes.js';
import { RegisterRateLimited, register } from '../services/register.js';
import { exchangeWork, pollWork, WORK_EXCHANGE_BODY_LIMIT_BYTES } from '../services/work.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesAgentDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'nonces' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

export function mountAgentRoutes(app: FastifyInstance, rt: RoutesAgentDeps): void {
  mountRoute(app, rt, 'register', async ({ nodeId, body, req, reply }) => {
    const legacyProviderToken = typeof req.body === 'object' && req.body !== null && 'providerToken' in req.body;
    try {
      return await register(rt, { nodeId, publicKey: body.publicKey, advertisement: body.advertisement, enrollmentToken: body.enrollmentToken, encryptionKey: body.encryptionKey, legacyProviderToken });
    } catch (err) {
      if (err instanceof RegisterRateLimited) reply.header('retry-after', String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))));
      throw err;
    }
  });
  mountRoute(app, rt, 'heartbeat', ({ nodeId, body }) => {
    if (body.rttMs !== undefined) rt.index.noteRtt(nodeId, body.rttMs); // feeds the latency score
    return heartbeat(rt, nodeId, body.activeAttemptIds);
  });
  mountRoute(app, rt, 'work', ({ nodeId, query }) => pollWork(rt, nodeId, query.waitMs));
  mountRoute(app, rt, 'workExchange', ({ nodeId, body }) => exchangeWork(rt, nodeId, body), { bodyLimit: WORK_EXCHANGE_BODY_LIMIT_BYTES });
  mountRoute(app, rt, 'startAttempt', ({ nodeId, id }) => startAttempt(rt, nodeId, id));
  mountRoute(app, rt, 'attemptLogs', async ({ nodeId, id, body }) => {
    const res = await appendLogs(rt, nodeId, id, body);
    // A cancel the agent acts on is sealed (issue 19).
    return res.cancel ? { ...res, cancelSeal: rt.signer.sealCancel(id, nodeId).seal } : res;
  });
  mountRoute(app, rt, 'refuseAttempt', ({ nodeId, id, body }) => refuseAttempt(rt, nodeId, id, body.reason));
  // The key chain changes only on a rotation (activating a day later): a few seconds of caching is safe.
  mountRoute(app, rt, 'coordinatorIdentity', async ({ reply }) => {
    reply.header('cache-control', 'public, max-age=5');
    return rt.signer.identityView();
  });
  mountRoute(app, rt, 'attemptEvents', ({ nodeId, id, body }) => appendAttemptEvents(rt, nodeId, id, body));
  mountRoute(app, rt, 'challengeDigests', ({ nodeId, id, body }) => postDigests(rt, nodeId, id, body));
  // Up to MAX_REVEALS row blocks of about 256 KiB each, base64: the largest reveal any sizing asks for.
  mountRoute(app, rt, 'challengeReveal', ({ nodeId, id, body }) => postReveal(rt, nodeId, id, body), { bodyLimit: REVEAL_BODY_LIMIT_BYTES });
  mountRoute(app, rt, 'attemptResult', ({ nodeId, id, body }) => finishAttempt(rt, nodeId, id, body), { bodyLimit: rt.config.resultBodyLimitBytes });
}
