/**
 * One replica's part in the cluster (issue 14). On SQLite the process leads from its start and runs every
 * periodic pass. On PostgreSQL it competes for the leader lease: while it leads, the passes run over a store
 * fenced by the lease; either way it listens to the other replicas on the bus and resyncs its index from the
 * store every indexResyncMs and after a gap.
 */
import { randomUUID } from 'node:crypto';
import { type LeaseGrant, LeaseLostError, type Store } from '@gpux/core';
import { canaryTask } from '../loops/canaries.js';
import { forwardTask } from '../federation/forwarder.js';
import { peerSummaryTask } from '../federation/summary-task.js';
import { challengeTask } from '../loops/challenges.js';
import { expiryTask } from '../loops/expiry.js';
import { marketTasks } from '../loops/market.js';
import { verificationTask } from '../loops/verification.js';
import type { Needs, Runtime } from '../runtime.js';
import { type ClusterBus, soloBus } from './bus.js';
import { onClusterMessage, resyncIndex } from './follow.js';
import { Leadership } from './leadership.js';
import { pgBus } from './pg-bus.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ReplicaDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'leads' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'predictions' | 'random' | 'scheduler' | 'scheduling' | 'signals' | 'signer' | 'startedAt' | 'store' | 'work'>;

const NONCE_PRUNE_BATCH = 10_000;

/** The bus for this store: LISTEN/NOTIFY on PostgreSQL (with the same URL), nobody to tell on SQLite. */
export function busFor(store: Store, dbUrl: string, logger: Runtime['logger']): ClusterBus {
  const replicaId = `rep_${randomUUID()}`;
  return store.dialect === 'postgres' && /^postgres(ql)?:\/\//i.test(dbUrl) ? pgBus(dbUrl, replicaId, logger) : soloBus(replicaId);
}

/** The leader's store: a write the fence refused means another replica leads now, so step down at once. */
function reportingLoss(store: Store, lost: () => void): Store {
  return new Proxy(store, {
    get(target, key, receiver) {
      const v: unknown = Reflect.get(target, key, receiver);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const r: unknown = v.apply(target, args);
        if (!(r instanceof Promise)) return r;
        return r.catch((err: unknown) => {
          if (err instanceof LeaseLostError) lost();
          throw err;
        });
      };
    },
  });
}

/** The runtime with its store swapped for `store`; every other field (the index included, after a resync) is rt's own. */
function withStore(rt: ReplicaDeps, store: Store): ReplicaDeps {
  return new Proxy(rt, { get: (target, key, receiver) => (key === 'store' ? store : Reflect.get(target, key, receiver)) });
}

async function pruneNonces(rt: ReplicaDeps): Promise<void> {
  while ((await rt.store.pruneNonces(rt.clock.now(), NONCE_PRUNE_BATCH)) === NONCE_PRUNE_BATCH);
}

export interface Replica {
  /** Whether this replica leads now. */
  leads(): boolean;
  stop(): Promise<void>;
}

/** The periodic passes of one leadership term. */
function startPasses(rt: ReplicaDeps): () => Promise<void> {
  const loops = [expiryTask(rt), ...marketTasks(rt), verificationTask(rt), canaryTask(rt), challengeTask(rt), peerSummaryTask(rt), forwardTask(rt)];
  rt.scheduling.start(rt);
  for (const l of loops) l.start();
  return async () => {
    await Promise.all([rt.scheduling.stop(), ...loops.map((l) => l.stop())]);
  };
}

export async function startReplica(rt: ReplicaDeps): Promise<Replica> {
  if (rt.store.dialect !== 'postgres') {
    const stop = startPasses(rt);
    return { leads: () => true, stop };
  }
  let stopPasses: (() => Promise<void>) | null = null;
  let freshIndex = true; // start.ts has just built it
  const leadership = new Leadership(
    rt.store,
    rt.bus.replicaId,
    rt.clock,
    { ttlMs: rt.config.leaderLeaseMs, renewMs: Math.max(100, Math.floor(rt.config.leaderLeaseMs / 3)) },
    {
      elected: async (grant: LeaseGrant) => {
        // What the last leader reserved and ended is in the store, maybe not yet in this index.
        if (!freshIndex) await resyncIndex(rt);
        freshIndex = false;
        stopPasses = startPasses(withStore(rt, reportingLoss(rt.store.fenced(grant), () => leadership.lost())));
      },
      deposed: async () => {
        const stop = stopPasses;
        stopPasses = null;
        await stop?.();
      },
    },
    rt.logger,
  );
  rt.leads = () => leadership.isLeader;
  const resync = () => {
    freshIndex = false;
    if (leadership.isLeader) rt.scheduling.resync();
    else void resyncIndex(rt).catch((err: unknown) => rt.logger.error({ err }, 'index resync failed'));
  };
  rt.bus.listen({
    onMessage: (m) => void onClusterMessage(rt, m, leadership.isLeader).catch((err: unknown) => rt.logger.error({ err, message: m }, 'cluster message not applied')),
    onGap: () => {
      // Messages may have been lost: every long-poll rereads the store, and the index is rebuilt.
      rt.work.wakeAll();
      rt.logs.wakeAll();
      resync();
    },
  });
  const timer = setInterval(() => {
    resync();
    if (leadership.isLeader) void pruneNonces(rt).catch((err: unknown) => rt.logger.warn({ err }, 'pruning expired nonces failed'));
  }, rt.config.indexResyncMs);
  timer.unref();
  await leadership.start();
  return {
    leads: () => leadership.isLeader,
    async stop() {
      clearInterval(timer);
      await leadership.stop();
      await rt.bus.close();
    },
  };
}
