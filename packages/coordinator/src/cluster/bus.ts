/**
 * The replicas' message bus (issue 14): how one replica's change reaches the others' long-polls, capacity index
 * and scheduling. One process on SQLite has nobody to tell (soloBus); on PostgreSQL it is LISTEN/NOTIFY (pg-bus.ts).
 */
import type { ClusterMessage } from './messages.js';

export interface ClusterBus {
  /** This replica's id (random per process start). */
  readonly replicaId: string;
  /** Tell the other replicas (never delivered back to this one). Best effort: the receivers' resync covers a loss. */
  publish(m: ClusterMessage): void;
  /** `onMessage` for every message from another replica; `onGap` after messages may have been lost (a reconnect). */
  listen(handlers: { onMessage: (m: ClusterMessage) => void; onGap: () => void }): void;
  close(): Promise<void>;
}

export function soloBus(replicaId: string): ClusterBus {
  return { replicaId, publish: () => {}, listen: () => {}, close: async () => {} };
}
