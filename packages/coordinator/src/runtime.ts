/**
 * The coordinator's in-process state shared by routes and background loops: the capacity index (a cache
 * rebuilt from the store), long-poll waiters, signature caches, metrics and the scheduling kick.
 */
import {
  CapacityIndex,
  type Clock,
  manualSettlementAdapter,
  PlacementEngine,
  type Random,
  type Scheduler,
  type SettlementAdapter,
  type Store,
  type TransitionDecider,
  transitionDecider,
} from '@gpux/core';
import type { Logger } from 'pino';
import type { CoordinatorConfig } from './config.js';
import { NodeKeyCache, NonceCache } from './http/node-auth.js';
import { Signer } from './identity/signer.js';
import { SchedulingLoop } from './loops/scheduling.js';
import { createMetrics, type Metrics } from './metrics.js';
import { DeliveryTracker } from './services/delivery.js';
import { PriceBook } from './services/price-book.js';
import { Waiters } from './waiters.js';

export interface CoordinatorDeps {
  store: Store;
  config: CoordinatorConfig;
  clock: Clock;
  random: Random;
  logger: Logger;
  settlementAdapter?: SettlementAdapter;
  /** The coordinator's key (start.ts loads the key file); absent: a key held in memory only. */
  signer?: Signer;
}

export interface Runtime extends CoordinatorDeps {
  /** clock.now() when this process started; node requests signed earlier are refused. */
  startedAt: number;
  index: CapacityIndex;
  /** Nodes the index holds as offline, so a heartbeat knows to bring them back. */
  offlineNodes: Set<string>;
  scheduler: Scheduler;
  decider: TransitionDecider;
  metrics: Metrics;
  /** Work long-polls by node id. */
  work: Waiters;
  /** Log long-polls by job id. */
  logs: Waiters;
  nonces: NonceCache;
  nodeKeys: NodeKeyCache;
  delivery: DeliveryTracker;
  scheduling: SchedulingLoop;
  /** Index prices and provider asks (a cache of the store, like the capacity index). */
  book: PriceBook;
  /** Where withdrawals are paid out (the manual adapter unless the embedder passes another). */
  settlementAdapter: SettlementAdapter;
  /** Seals every order an agent acts on (issue 19). */
  signer: Signer;
}

export function createRuntime(deps: CoordinatorDeps): Runtime {
  const rt = {
    ...deps,
    startedAt: deps.clock.now(),
    index: new CapacityIndex(),
    offlineNodes: new Set<string>(),
    scheduler: new PlacementEngine({ random: deps.random }),
    decider: transitionDecider({ baseBackoffMs: deps.config.retryBaseBackoffMs, maxBackoffMs: deps.config.retryMaxBackoffMs }),
    metrics: createMetrics(deps.store),
    work: new Waiters(),
    logs: new Waiters(),
    nonces: new NonceCache(),
    nodeKeys: new NodeKeyCache(deps.store),
    delivery: new DeliveryTracker(),
    book: new PriceBook(deps.config.treasuryFeeBps),
    settlementAdapter: deps.settlementAdapter ?? manualSettlementAdapter,
    signer: deps.signer ?? Signer.ephemeral(deps.clock),
  } as Omit<Runtime, 'scheduling'> as Runtime;
  rt.scheduling = new SchedulingLoop(rt);
  return rt;
}

/** Capacity held by an attempt that ended goes back to its node; its job's log readers wake. */
export function attemptEnded(rt: Runtime, attemptId: string, jobId: string, outcome: string): void {
  rt.index.release(attemptId);
  rt.delivery.forget(attemptId);
  rt.metrics.attemptsFinished.inc({ outcome });
  rt.logs.wake(jobId);
  rt.scheduling.kick();
}
