/**
 * Bearer-token authentication of buyers and operators. A token is looked up in the store on every request
 * (no cache), so a revocation or an expiry applies from the next request. A node enrollment token is not a
 * bearer token: it is refused here with a hint, and it works only at /v1/agent/register.
 */
import { type Clock, GpuxError, type Store, systemClock } from '@gpux/core';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../principal.js';
import { credentialDead, ENROLLMENT_TOKEN_PREFIX, hashToken, TOKEN_PREFIX } from '../tokens.js';

export type { Principal } from '../principal.js';


/** `need` is the route's auth: buyer routes take operator tokens too; operator routes only operators. */
export async function authenticateBearer(store: Store, req: FastifyRequest, need: 'buyer' | 'operator', clock: Clock = systemClock): Promise<Principal> {
  const header = req.headers.authorization;
  if (!header) throw new GpuxError('UNAUTHORIZED', 'send "Authorization: Bearer <token>"');
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (m?.[1]?.startsWith(ENROLLMENT_TOKEN_PREFIX)) {
    throw new GpuxError('UNAUTHORIZED', 'this is a node enrollment token: it only registers nodes (gpux node start --enrollment-token); use an account bearer token (gpux_…) here');
  }
  if (!m?.[1]?.startsWith(TOKEN_PREFIX)) throw new GpuxError('UNAUTHORIZED', 'the Authorization header must be "Bearer gpux_…"');
  const record = await store.findTokenByHash(hashToken(m[1]));
  if (!record) throw new GpuxError('UNAUTHORIZED', 'unknown or revoked token');
  const dead = credentialDead(record, clock.now(), 'token');
  if (dead) throw new GpuxError('UNAUTHORIZED', `${dead}: ask an operator for a new one (gpux token create)`);
  if (need === 'operator' && record.role !== 'operator') throw new GpuxError('FORBIDDEN', 'this route needs an operator token');
  return { tokenId: record.id, accountId: record.accountId, role: record.role };
}
