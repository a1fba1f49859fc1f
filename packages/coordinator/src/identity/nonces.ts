/** Signature nonces a node request may use once (the check is http/node-auth.ts; replicas share them: cluster/shared-nonces.ts). */
import { MAX_CLOCK_SKEW_MS } from '@gpux/protocol';

export const NONCE_TTL_MS = 2 * MAX_CLOCK_SKEW_MS;

/** Claims a nonce once: true when it is new (and now remembered), false for a replay. */
export interface NonceClaims {
  claim(nodeId: string, nonce: string, now: number): boolean | Promise<boolean>;
}

export class NonceCache implements NonceClaims {
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;

  /** True when the nonce is new (and remembers it); false for a replay. */
  claim(nodeId: string, nonce: string, now: number): boolean {
    this.sweep(now);
    const key = `${nodeId}\n${nonce}`;
    if (this.seen.has(key)) return false;
    this.seen.set(key, now + NONCE_TTL_MS);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 1000) return;
    this.lastSweep = now;
    // Map iteration follows insertion order, which is expiry order while the clock moves forward.
    for (const [k, exp] of this.seen) {
      if (exp > now) break;
      this.seen.delete(k);
    }
  }
}
