/**
 * What several coordinator replicas on one database share (issue 14): the leader lease with its fencing epoch,
 * and the signature nonces every replica must see.
 */
import { GpuxError } from '../errors.js';

/** A fenced write found that its lease moved on: this process is no longer the leader and must stop leading. */
export class LeaseLostError extends GpuxError {
  constructor(name: string, epoch: number) {
    super('UNAVAILABLE', `the ${name} lease at epoch ${epoch} is no longer held: another replica took over`);
    this.name = 'LeaseLostError';
  }
}

/** A lease held: `epoch` grows by one at every change of holder; the leader's writes carry it (Store.fenced). */
export interface LeaseGrant {
  name: string;
  holder: string;
  epoch: number;
  expiresAt: number;
}

export interface ClusterPort {
  /**
   * Take the lease when it is free or expired (epoch + 1), or renew it when `holder` already has it at `epoch`.
   * null: another holder has it, or ours was taken (a stale epoch renews nothing).
   */
  acquireLease(name: string, holder: string, now: number, ttlMs: number, epoch?: number): Promise<LeaseGrant | null>;
  /** Give the lease up at once (a clean shutdown), so the next replica need not wait out the TTL. */
  releaseLease(name: string, holder: string, epoch: number): Promise<void>;
  /** Who holds the lease now (expired or not); null when nobody ever took it. */
  getLease(name: string): Promise<LeaseGrant | null>;
  /**
   * A view of this store whose every write transaction first checks that `lease` is still the current grant
   * (same holder and epoch) and fails with LeaseLostError otherwise; a new holder's takeover waits for a write in
   * flight. Reads are not fenced.
   */
  fenced(lease: { name: string; holder: string; epoch: number }): this;
  /**
   * Remember signature nonces until their `expiresAt`, in one statement; per item, false when it was already
   * claimed (a replay), on any replica. Items must be distinct.
   */
  claimNonces(items: readonly { nodeId: string; nonce: string; expiresAt: number }[]): Promise<boolean[]>;
  /** Forget nonces that expired before `now`; returns how many went. */
  pruneNonces(now: number, limit: number): Promise<number>;
}
