/**
 * Who may read GET /metrics: by default an operator bearer token or the scrape-only metrics token
 * (GPUX_METRICS_TOKEN); with GPUX_METRICS=open, anyone who reaches the port.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { GpuxError } from '@gpux/core';
import type { FastifyRequest } from 'fastify';
import type { Runtime } from '../runtime.js';
import { authenticateBearer } from './bearer-auth.js';

const HOW = 'send "Authorization: Bearer <token>" with an operator token or the metrics token (GPUX_METRICS_TOKEN), or start the coordinator with GPUX_METRICS=open to serve metrics to anyone who reaches it';

export async function authorizeMetrics(rt: Pick<Runtime, 'config' | 'store'>, req: FastifyRequest): Promise<void> {
  if (rt.config.metrics === 'open') return;
  const header = req.headers.authorization;
  if (!header) throw new GpuxError('UNAUTHORIZED', `/metrics needs a token: ${HOW}`);
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
  if (presented !== undefined && rt.config.metricsToken !== null && sameSecret(presented, rt.config.metricsToken)) return;
  try {
    await authenticateBearer(rt.store, req, 'operator');
  } catch (e) {
    if (e instanceof GpuxError && e.code === 'FORBIDDEN') throw new GpuxError('FORBIDDEN', `/metrics needs an operator token or the metrics token, not a buyer's: ${HOW}`);
    if (e instanceof GpuxError && e.code === 'UNAUTHORIZED') throw new GpuxError('UNAUTHORIZED', `${e.message}: ${HOW}`);
    throw e;
  }
}

/** Compares digests, so neither the length nor the content leaks through timing. */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}
