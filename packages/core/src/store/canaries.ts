import type { Random } from '../ports.js';

/**
 * Canaries (issue 11, TRUST.md layer 6): known-answer jobs at about 1% of buyer traffic. The catalog of
 * known answers fills inside the verification step's transaction (a buyer's job that two independent
 * operators agreed on); canary runs are judged inside their own attempt-end transactions. This port is the
 * issuing pass and what operators read back.
 */
export interface CanaryIssueQuery {
  now: number;
  /** Probability a buyer's job that ended with a result draws a canary (0 disables issuing). */
  rate: number;
  /** The coordinator's CSPRNG: one draw per buyer job, so a node cannot count its way to a canary. */
  random: Random;
  /** Catalog entries kept (newest first); older ones are trimmed by the pass. */
  catalogSize: number;
  /** Buyer jobs drawn for in one pass (one transaction). */
  limit: number;
}

export interface CanaryPassResult {
  /** Buyer jobs drawn for in this pass. */
  drawn: number;
  /** The canary jobs queued. */
  issued: string[];
  /** Canary runs that ended outside an attempt end (queue timeout) and were closed with nothing decided. */
  reconciled: number;
}

/** How canaries have gone (GET /v1/treasury can show these). */
export interface CanaryStats {
  catalog: number;
  issued: number;
  /** Still running, or waiting for a referee. */
  open: number;
  passed: number;
  /** Failed and confirmed by a referee: the node was penalized. */
  failed: number;
  /** The referee sided with the node (or no referee agreed with anyone): the catalog entry was dropped. */
  dropped: number;
  /** Ended without a result (infrastructure): nothing decided. */
  noResult: number;
}

export interface CanaryPort {
  /** Draw for buyer jobs whose verification opened since the last pass and queue the canaries drawn, in one transaction. */
  issueCanaries(q: CanaryIssueQuery): Promise<CanaryPassResult>;
  canaryStats(): Promise<CanaryStats>;
  /** Nodes a failed canary banned at or after `since` (epoch ms), oldest first, so the capacity index drops them. */
  canaryBansSince(since: number): Promise<Array<{ nodeId: string; at: number }>>;
}
