import type { EquivocationRecord } from '../records.js';

/** Verification (issue 11, TRUST.md): equivocation evidence. */
export interface VerificationPort {
  /**
   * In one transaction, if the ended attempt's stored commitment differs from `second` (already verified):
   * store both as evidence, write node.equivocated, slash the node's whole stake to the treasury and ban
   * the node (removed, may not register again; its active leases end now). The same pair again: null.
   */
  recordEquivocation(q: { attemptId: string; nodeId: string; commitment: string; signature: string; now: number }): Promise<EquivocationRecord | null>;
  /** The node's equivocations, newest first. */
  listEquivocations(nodeId: string): Promise<EquivocationRecord[]>;
}
