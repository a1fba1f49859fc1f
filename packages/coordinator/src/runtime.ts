/**
 * The one place the coordinator is wired: its in-process parts (the capacity index, a cache rebuilt from the
 * store; long-poll waiters; signature caches; metrics; the scheduling loop) built once by createRuntime. No module
 * takes the whole: each service, loop and route names the parts it uses (`Needs<…>`), and services reach the caches
 * and the scheduling only through `signals`.
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
import { type ClusterBus, soloBus } from './cluster/bus.js';
import { nodeChanged } from './cluster/follow.js';
import { SharedNonces } from './cluster/shared-nonces.js';
import type { CoordinatorConfig } from './config.js';
import { NodeKeyCache } from './identity/node-keys.js';
import { NonceCache, type NonceClaims } from './identity/nonces.js';
import { Signer } from './identity/signer.js';
import { SchedulingLoop } from './loops/scheduling.js';
import { createMetrics, type Metrics } from './metrics.js';
import { DeliveryTracker } from './services/delivery.js';
import { PriceBook } from './services/price-book.js';
import { RunPredictions } from './services/run-predictions.js';
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
  /** How this replica tells the others (issue 14); absent: nobody to tell (one process). */
  bus?: ClusterBus;
}

export interface Runtime extends CoordinatorDeps {
  /** clock.now() when this process started; node requests signed earlier are refused. */
  startedAt: number;
  /** Replaced whole by a resync (cluster/follow.ts): read it through rt, never keep it. */
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
  /** In memory for one process; shared through PostgreSQL by replicas (cluster/shared-nonces.ts). */
  nonces: NonceClaims;
  nodeKeys: NodeKeyCache;
  delivery: DeliveryTracker;
  scheduling: SchedulingLoop;
  /** Index prices and provider asks (a cache of the store, like the capacity index). */
  book: PriceBook;
  /** Where withdrawals are paid out (the manual adapter unless the embedder passes another). */
  settlementAdapter: SettlementAdapter;
  /** Seals every order an agent acts on (issue 19). */
  signer: Signer;
  bus: ClusterBus;
  /** Whether this replica leads now (runs the scheduling and the other periodic passes). */
  leads(): boolean;
  /** What services tell the caches, the waiters and the scheduling, so they need not hold those parts themselves. */
  signals: Signals;
  /** Run-time predictions from the store's finished runs (issue 17); null with GPUX_PREDICTIONS=off. */
  predictions: RunPredictions | null;
}

export interface Signals {
  /** An attempt ended (committed): its GPUs go back to its node, its job's log readers wake, scheduling runs. */
  attemptEnded(attemptId: string, jobId: string, outcome: string): void;
  /** A node's record, stake or asks changed (committed): re-read it into the index and tell the other replicas. */
  nodeChanged(nodeId: string): Promise<void>;
  /** Something placeable may be waiting. */
  kick(): void;
  /** Whether the last scheduling pass left work it could not place. */
  backlog(): boolean;
}

/**
 * The part of the runtime a service, loop or route uses: each module names its own (`type XDeps = Needs<'store' | 'clock'>`),
 * so the compiler keeps it from reaching for anything else. createRuntime below is the one place the parts are built.
 */
export type Needs<K extends keyof Runtime> = Pick<Runtime, K>;

export function createRuntime(deps: CoordinatorDeps): Runtime {
  const bus = deps.bus ?? soloBus('solo');
  const rt = {
    ...deps,
    bus,
    leads: () => true,
    startedAt: deps.clock.now(),
    index: new CapacityIndex(),
    offlineNodes: new Set<string>(),
    scheduler: new PlacementEngine({ random: deps.random }),
    decider: transitionDecider({ baseBackoffMs: deps.config.retryBaseBackoffMs, maxBackoffMs: deps.config.retryMaxBackoffMs }),
    metrics: createMetrics(deps.store),
    work: new Waiters((node) => bus.publish({ t: 'work', node })),
    logs: new Waiters((job) => bus.publish({ t: 'logs', job })),
    nonces: deps.store.dialect === 'postgres' ? new SharedNonces(deps.store) : new NonceCache(),
    nodeKeys: new NodeKeyCache(deps.store),
    delivery: new DeliveryTracker(),
    book: new PriceBook(deps.config.treasuryFeeBps),
    settlementAdapter: deps.settlementAdapter ?? manualSettlementAdapter,
    signer: deps.signer ?? Signer.ephemeral(deps.clock),
    predictions: deps.config.predictions ? new RunPredictions(deps.store, deps.clock) : null,
  } as Omit<Runtime, 'scheduling' | 'signals'> as Runtime;
  rt.scheduling = new SchedulingLoop(rt);
  rt.signals = {
    attemptEnded: (attemptId, jobId, outcome) => attemptEnded(rt, attemptId, jobId, outcome),
    nodeChanged: (nodeId) => nodeChanged(rt, nodeId),
    kick: () => rt.scheduling.kick(),
    backlog: () => rt.scheduling.backlog,
  };
  return rt;
}

/** Capacity held by an attempt that ended goes back to its node; its job's log readers wake. */
function attemptEnded(rt: Needs<'index' | 'delivery' | 'metrics' | 'bus' | 'logs' | 'predictions' | 'scheduling'>, attemptId: string, jobId: string, outcome: string): void {
  rt.index.release(attemptId);
  rt.predictions?.attemptEnded(attemptId);
  rt.delivery.forget(attemptId);
  rt.metrics.attemptsFinished.inc({ outcome });
  rt.bus.publish({ t: 'ended', attempt: attemptId, job: jobId });
  rt.logs.wakeLocal(jobId); // the others wake on 'ended'
  rt.scheduling.kick();
}
