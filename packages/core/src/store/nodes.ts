import type { NodeAdminState, NodeAdvertisement, NodeStatus } from '@gpux/protocol';
import type { AttemptRecord, NodeRecord, NodeStatsRecord } from '../records.js';
import type { Page } from './page.js';

export interface RegisterNodeInput {
  id: string;
  publicKey: string;
  advertisement: NodeAdvertisement;
  now: number;
  providerId?: string;
  enrollment?: { id: string; maxProviderNodes: number };
}

/** Nodes: registration, heartbeats, admin state and track records. */
export interface NodesPort {
  /**
   * Insert or update (same id = same key) a node: status online, lastHeartbeatAt = now, event node.registered.
   * providerId binds an unowned node to that account; a node owned by another account: FORBIDDEN. With an
   * enrollment (issue 10 item 2), checked in the same transaction with the enrollment row locked: a revoked
   * or expired enrollment registers only a live node that is already its own (UNAUTHORIZED otherwise); a new
   * node past the enrollment's maxNodes or the provider's maxProviderNodes is LIMIT_EXCEEDED; the node
   * records the enrollment and a removed node is restored; and a GPU uuid that a live node of another
   * provider advertises is CONFLICT (naming the uuid).
   */
  registerNode(node: RegisterNodeInput): Promise<NodeRecord>;
  getNode(id: string): Promise<NodeRecord | undefined>;
  /** Ordered by id. */
  listNodes(q: { status?: NodeStatus; limit: number; cursor?: string }): Promise<Page<NodeRecord>>;
  /**
   * A heartbeat: lastHeartbeatAt = now, status online (event node.online if it was offline), and every
   * active attempt of the node gets leaseExpiresAt, never past its stop_by or its deadline (attempt-end/deadline.ts).
   * Returns the node's active attempts (renewed; oldest first) and those whose job has a cancel request.
   */
  heartbeat(nodeId: string, now: number, leaseExpiresAt: number): Promise<{ cancelAttemptIds: string[]; active: AttemptRecord[] }>;
  setNodeAdminState(nodeId: string, state: NodeAdminState, now: number): Promise<NodeRecord>;
  /**
   * The node's trust tier (TRUST.md "Tiers"): event node.tier_set {from, to, by, reason} in the same
   * transaction; unchanged: no event. The caller checks who may set what (trust/attestation.ts
   * tierChangeRefusal: an operator never sets attested). NODE_NOT_FOUND for an unknown node.
   */
  setNodeTier(nodeId: string, tier: 'open' | 'attested' | 'curated', now: number, by: { source: 'operator' | 'attestation'; reason?: string | null }): Promise<NodeRecord>;
  /** Online nodes whose last heartbeat is older than `cutoff` become offline (event node.offline). Returns their ids. */
  markStaleNodesOffline(cutoff: number, now: number): Promise<string[]>;

  /**
   * Node track records changed at or after `since` (every one for 0), with the node's admin state. The store
   * updates them in the transactions that end attempts (finishAttempt, expireLeases) and mark nodes offline,
   * and auto-cordons a node there (event node.auto_cordoned) when its failures cross the policy's threshold.
   */
  listNodeStats(since: number): Promise<NodeStatsRecord[]>;
}
