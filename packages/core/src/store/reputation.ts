import type { ReputationState } from '../trust/reputation.js';

/** A node's stored reputation sums (trust/reputation.ts), decayed to state.asOf, and when the row last changed. */
export interface ReputationRecord {
  nodeId: string;
  state: ReputationState;
  /** Audits passed in a row (the adaptive audit rate's count; 0 when the node has no audit record). */
  auditsPassed: number;
  updatedAt: number;
}

/**
 * Node reputation (issue 11): decayed good and bad sums from audits, canaries, completions and lost leases.
 * The store updates them inside the transactions of the outcomes that change them (attempt end, verification),
 * so a reputation and its cause commit together. Scores are computed by the reader at its own `now`.
 */
export interface ReputationPort {
  /** The node's reputation; undefined before its first outcome (a new node: neutral). */
  getReputation(nodeId: string): Promise<ReputationRecord | undefined>;
  /** The reputations of these nodes (one query), for lists; nodes without one are left out. */
  getReputations(nodeIds: readonly string[]): Promise<ReputationRecord[]>;
  /** Reputations changed at or after `since`, oldest change first, for incremental readers (the capacity index). */
  listReputations(since: number): Promise<ReputationRecord[]>;
}
