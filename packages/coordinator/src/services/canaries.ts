/**
 * Canaries (TRUST.md layer 6), the coordinator's side: one issuing pass (the store draws per buyer job with
 * the coordinator's Random and queues canaries in one transaction), then the nodes a failed canary banned
 * (judged inside an attempt-end transaction) leave the capacity index, as a failed audit's do.
 */
import type { Needs } from '../runtime.js';
import { takeOutBannedNode } from './commitments.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type CanariesDeps = Needs<'clock' | 'config' | 'decider' | 'logger' | 'metrics' | 'nodeKeys' | 'random' | 'signals' | 'store' | 'work'>;

const BATCH = 500;

/** One pass. `bansSince`: take out nodes banned by canaries at or after this time; returns the next watermark. */
export async function canaryPass(rt: CanariesDeps, bansSince: number): Promise<{ issued: number; bansSince: number }> {
  const now = rt.clock.now();
  let issued = 0;
  if (rt.config.canaryRate > 0) {
    const res = await rt.store.issueCanaries({ now, rate: rt.config.canaryRate, random: rt.random, catalogSize: rt.config.canaryCatalogSize, limit: BATCH });
    issued = res.issued.length;
    if (issued > 0) {
      rt.logger.debug({ drawn: res.drawn, issued: res.issued }, 'canaries issued');
      rt.signals.kick();
    }
  }
  let next = bansSince;
  for (const b of await rt.store.canaryBansSince(bansSince)) {
    await takeOutBannedNode(rt, b.nodeId, now);
    rt.logger.warn({ nodeId: b.nodeId }, 'node banned: a failed canary, confirmed by a referee run; stake slashed');
    next = Math.max(next, b.at + 1);
  }
  return { issued, bansSince: next };
}
