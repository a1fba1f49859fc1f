/** Buyer routes (operators may use them too): jobs, logs, results, whoami. */
import { GpuxError } from '@gpux/core';
import { IDEMPOTENCY_HEADER } from '@gpux/protocol';
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { disputeJob } from '../services/disputes.js';
import { jobResult, readJobLogs } from '../services/job-output.js';
import { cancelJob, getJob, listJobs, submitJob } from '../services/jobs.js';
import { predictionOf } from '../services/run-predictions.js';
import { jobView } from '../views.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesBuyerDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'nodeKeys' | 'nonces' | 'predictions' | 'random' | 'signals' | 'startedAt' | 'store' | 'work'>;

const MAX_IDEMPOTENCY_KEY = 255;

export function mountBuyerRoutes(app: FastifyInstance, rt: RoutesBuyerDeps): void {
  mountRoute(
    app,
    rt,
    'submitJob',
    async ({ req, reply, principal, body }) => {
      const raw = req.headers[IDEMPOTENCY_HEADER];
      if (raw !== undefined && (typeof raw !== 'string' || raw.length === 0 || raw.length > MAX_IDEMPOTENCY_KEY)) {
        throw new GpuxError('REQUEST_INVALID', `the Idempotency-Key header must be 1-${MAX_IDEMPOTENCY_KEY} characters, sent once`);
      }
      const res = await submitJob(rt, principal, body.spec, raw ?? null);
      reply.code(res.created ? 201 : 200);
      return res;
    },
    { specBody: true },
  );
  mountRoute(app, rt, 'listJobs', ({ principal, query }) => listJobs(rt, principal, query));
  mountRoute(app, rt, 'getJob', async ({ principal, id, query }) => {
    const res = await getJob(rt, principal, id, query);
    return { ...res, ...(await predictionOf(rt, res.job)) };
  });
  mountRoute(app, rt, 'cancelJob', async ({ principal, id }) => ({ job: jobView(await cancelJob(rt, principal, id)) }));
  mountRoute(app, rt, 'jobLogs', ({ reply, principal, id, query }) => {
    // The client hung up before the answer: end the long-poll (and free its slot) now.
    const gone = new AbortController();
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) gone.abort();
    });
    return readJobLogs(rt, principal, id, query, gone.signal);
  });
  mountRoute(app, rt, 'jobResult', ({ principal, id }) => jobResult(rt, principal, id));
  mountRoute(app, rt, 'disputeJob', ({ principal, id, body }) => disputeJob(rt, principal, id, body));
  mountRoute(app, rt, 'whoami', async ({ principal }) => ({ accountId: principal.accountId, role: principal.role, tokenId: principal.tokenId }));
}
