/**
 * Signature nonces seen by any replica (issue 14): this replica's own cache answers a replay to it at once; a new
 * nonce is also claimed in the database, so the same request replayed to another replica is refused there.
 * Claims arriving together go to the database in one statement.
 */
import type { Store } from '@gpux/core';
import { NONCE_TTL_MS, NonceCache, type NonceClaims } from '../identity/nonces.js';

interface Pending {
  item: { nodeId: string; nonce: string; expiresAt: number };
  resolve: (claimed: boolean) => void;
  reject: (err: unknown) => void;
}

export class SharedNonces implements NonceClaims {
  private readonly local = new NonceCache();
  private batch: Pending[] = [];

  constructor(private readonly store: Store) {}

  claim(nodeId: string, nonce: string, now: number): boolean | Promise<boolean> {
    if (!this.local.claim(nodeId, nonce, now)) return false;
    return new Promise((resolve, reject) => {
      if (this.batch.length === 0) setImmediate(() => void this.flush());
      this.batch.push({ item: { nodeId, nonce, expiresAt: now + NONCE_TTL_MS }, resolve, reject });
    });
  }

  private async flush(): Promise<void> {
    const batch = this.batch;
    this.batch = [];
    try {
      const claimed = await this.store.claimNonces(batch.map((p) => p.item));
      for (const [i, p] of batch.entries()) p.resolve(claimed[i] === true);
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
