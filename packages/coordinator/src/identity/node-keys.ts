/** Node public keys by node id, and which nodes were removed: the node-signature check's cache (http/node-auth.ts). */
import type { KeyObject } from 'node:crypto';
import type { Store } from '@gpux/core';
import { publicKeyFromRaw } from '@gpux/protocol';

/**
 * Public keys by node id; a node's key never changes (its id is derived from it). It also knows which nodes
 * were removed (their enrollment revoked with removeNodes), so their requests are refused at once.
 */
export class NodeKeyCache {
  private readonly keys = new Map<string, KeyObject>();
  private readonly removed = new Map<string, number>();
  constructor(private readonly store: Store) {}

  /** A node that registered (again): known, and no longer removed. */
  remember(nodeId: string, publicKeyB64: string): void {
    if (!this.keys.has(nodeId)) this.keys.set(nodeId, publicKeyFromRaw(publicKeyB64));
    this.removed.delete(nodeId);
  }

  markRemoved(nodeId: string, at: number): void {
    this.removed.set(nodeId, at);
  }

  /** When the node was removed, if it was. Valid after get() of the node. */
  removedAt(nodeId: string): number | undefined {
    return this.removed.get(nodeId);
  }

  async get(nodeId: string): Promise<KeyObject | undefined> {
    const cached = this.keys.get(nodeId);
    if (cached) return cached;
    const node = await this.store.getNode(nodeId);
    if (!node) return undefined;
    const key = publicKeyFromRaw(node.publicKey);
    this.keys.set(nodeId, key);
    if (node.removedAt !== null && node.removedAt !== undefined) this.removed.set(nodeId, node.removedAt);
    return key;
  }
}
