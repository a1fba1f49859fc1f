/**
 * Route hooks that apply the per-address limit of failed authentications (services/auth-failures.ts) to every
 * route that needs a credential: `onRequest` refuses a blocked address before its body is read (429
 * RATE_LIMITED with Retry-After); `onError` counts a 401 (UNAUTHORIZED or SIGNATURE_INVALID), wherever the
 * route found it: the bearer check, the node signature check, or registration's enrollment token.
 * Refused requests are logged with the client address (request.ip: the forwarded one only from a trusted proxy).
 */
import { GpuxError, isGpuxError } from '@gpux/core';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Needs } from '../runtime.js';
import { AuthFailures } from '../services/auth-failures.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type AuthLimitDeps = Needs<'clock' | 'config'>;

/** One limiter per runtime (a coordinator process), created on first use; null when the limit is off (0). */
const limiters = new WeakMap<object, AuthFailures | null>();
function limiterOf(rt: AuthLimitDeps): AuthFailures | null {
  let l = limiters.get(rt);
  if (l === undefined) {
    l = rt.config.authFailuresPerMinute > 0 ? new AuthFailures(rt.config.authFailuresPerMinute) : null;
    limiters.set(rt, l);
  }
  return l;
}

const AUTH_FAILURE_CODES = new Set(['UNAUTHORIZED', 'SIGNATURE_INVALID']);

export function authLimitHooks(rt: AuthLimitDeps) {
  return {
    onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
      const limiter = limiterOf(rt);
      if (!limiter) return;
      const waitMs = limiter.blockedFor(req.ip, rt.clock.now());
      if (waitMs === 0) return;
      const retryAfterS = Math.max(1, Math.ceil(waitMs / 1000));
      const fields = { clientAddress: req.ip, route: req.routeOptions.url, retryAfterS };
      if (limiter.firstRefusal(req.ip)) req.log.warn(fields, 'too many failed authentications from this address: its authenticated requests are refused for now');
      else req.log.debug(fields, 'refused: too many failed authentications from this address');
      reply.header('retry-after', String(retryAfterS));
      throw new GpuxError(
        'RATE_LIMITED',
        `too many failed authentications from ${req.ip} (at most ${rt.config.authFailuresPerMinute} a minute, GPUX_AUTH_FAILURES_PER_MINUTE): retry in ${retryAfterS} s with a valid credential`,
      );
    },
    onError: async (req: FastifyRequest, _reply: FastifyReply, err: Error) => {
      if (!isGpuxError(err) || !AUTH_FAILURE_CODES.has(err.code)) return;
      limiterOf(rt)?.fail(req.ip, rt.clock.now());
      req.log.info({ clientAddress: req.ip, route: req.routeOptions.url, code: err.code }, 'authentication refused');
    },
  };
}
