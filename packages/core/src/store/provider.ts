import type { Asset } from '@gpux/protocol';
import type { NodeRecord } from '../records.js';

/** Pay that reached a provider's wallet for one node's work, in one asset (issue 16: `gpux provider status`). */
export interface ProviderEarningRecord {
  asset: Asset;
  /** The node that did the work; null for a transfer that names none. */
  nodeId: string | null;
  /** Sum of the wallet's incoming settlement (paid at once) and pay.release (held pay released) postings. */
  paid: number;
}

/** A provider's own view of its side of the network: its nodes and what they earned. */
export interface ProviderPort {
  /** The provider's nodes that are not removed, ordered by id, at most `limit`. */
  providerNodes(providerId: string, limit: number): Promise<NodeRecord[]>;
  /** What reached the provider's wallet as pay, per asset and node (one grouped query over its wallet postings). */
  providerEarnings(providerId: string): Promise<ProviderEarningRecord[]>;
}
