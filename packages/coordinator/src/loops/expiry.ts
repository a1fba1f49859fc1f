/**
 * The expiry pass: nodes without a heartbeat for nodeOfflineAfterMs go offline (in the store and in the
 * capacity index, which the market counts supply from); attempts whose lease ran out are lost and their
 * jobs move on (requeue with backoff, fail, or cancel), among them those held past their deadline (the
 * job's timeout plus GPUX_RESULT_GRACE_MS: heartbeats never lease an attempt past it); queued jobs past their queue timeout fail with the
 * reason and their escrow returns (services/queue-timeouts.ts).
 */
import type { Needs } from '../runtime.js';
import { PeriodicTask } from './periodic.js';
import { expireQueuedJobs } from '../services/queue-timeouts.js';
import { expireKeyWaits } from '../services/e2e-keys.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ExpiryDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'leads' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

const EXPIRE_BATCH = 1000;

export function expiryTask(rt: ExpiryDeps): PeriodicTask {
  return new PeriodicTask(rt, { what: 'expiry pass', everyMs: rt.config.expiryPassIntervalMs, pass: () => expiryPass(rt) });
}

export async function expiryPass(rt: ExpiryDeps): Promise<void> {
  const { store, config, clock, index, metrics, logger } = rt;
  const now = clock.now();
  // After a restart every node counts as online for nodeOfflineAfterMs: the coordinator was the one away.
  if (now >= rt.startedAt + config.nodeOfflineAfterMs) {
    for (const nodeId of await store.markStaleNodesOffline(now - config.nodeOfflineAfterMs, now)) {
      // The index follows the store: offline, out of the buckets and out of the market's supply.
      index.setStatus(nodeId, 'offline');
      rt.offlineNodes.add(nodeId);
      rt.bus.publish({ t: 'node', node: nodeId });
      logger.info({ nodeId }, 'node offline: no heartbeat');
    }
  }
  for (;;) {
    const lost = await store.expireLeases(now, rt.decider, EXPIRE_BATCH);
    for (const l of lost) {
      metrics.leaseExpiries.inc();
      // cancelled: the job's cancel grace ran out while its node still held the attempt (store requestCancel).
      const outcome = l.outcome ?? 'lost';
      rt.signals.attemptEnded(l.attemptId, l.jobId, outcome);
      // deadline: the node kept heartbeating but never finished (or started) it in time (core attempt-end/deadline.ts).
      const why = l.cause === 'deadline' ? 'deadline passed' : 'lease expired';
      logger.warn({ attemptId: l.attemptId, jobId: l.jobId, nodeId: l.nodeId, jobState: l.jobState }, `${why}: attempt ${outcome}`);
    }
    if (lost.length < EXPIRE_BATCH) break;
  }
  await expireQueuedJobs(rt, now);
  await expireKeyWaits(rt, now);
}
