import type { ChallengeDigestsRequest, RevealItem } from '@gpux/protocol';
import type { NodeRecord } from '../records.js';

/**
 * Proof of hardware (issue 12; TRUST.md "the node proved a GPU of class X at challenge time (timed, checked
 * computation)"). The coordinator issues a challenge (a seed and a size) to every live node of a provider at
 * once, takes the node's digests before a deadline, names the row blocks to reveal, and records the verdict
 * on the node. The node's proof state gates dispatch (GPUX_CHALLENGE=required); a failure blocks it with the
 * reason, never slashes.
 */
export type ChallengeState = 'pending' | 'digested' | 'passed' | 'failed' | 'expired';

export interface ChallengeRecord {
  id: string;
  nodeId: string;
  providerId: string | null;
  /** 64 hex characters from the coordinator's CSPRNG: every matrix derives from it. */
  seed: string;
  n: number;
  products: number;
  rowBlock: number;
  /** The node's GPUs it covers (empty: a CPU-only node proves its CPU). */
  gpuIndices: number[];
  /** The class it was sized and is timed for (core challenge/classes.ts key, or 'cpu'). */
  claimedClass: string;
  issuedAt: number;
  /** Digests after this instant fail the challenge. */
  deadlineAt: number;
  state: ChallengeState;
  /** Set once digested: the runner, the per-GPU digests and timings as the node posted them. */
  runner: string | null;
  digests: ChallengeDigestsRequest['gpus'] | null;
  digestedAt: number | null;
  /** The row blocks the coordinator named after the digests arrived, and when the reveal is due. */
  reveal: RevealItem[] | null;
  revealBy: number | null;
  /** Why it failed or expired, in words; null otherwise. */
  reason: string | null;
  score: number | null;
  decidedAt: number | null;
}

/** One challenge to issue (the service sized it and drew its seed). */
export interface NewChallenge {
  id: string;
  nodeId: string;
  seed: string;
  n: number;
  products: number;
  rowBlock: number;
  gpuIndices: number[];
  claimedClass: string;
  deadlineAt: number;
  /**
   * The node's standing proof no longer holds (its advertisement changed): the node is 'challenging' and
   * takes no job until this passes. Otherwise a proven node stays proven (and dispatchable) while re-checked.
   */
  resetProof?: boolean;
}

export interface ChallengeDigestsInput {
  challengeId: string;
  nodeId: string;
  runner: string;
  digests: ChallengeDigestsRequest['gpus'];
  /** The row blocks to reveal, drawn by the caller (coordinator Random) after the digests arrived. */
  reveal: RevealItem[];
  /** The reveal must arrive by then, or the challenge expires. */
  revealBy: number;
  /** Digests past the deadline fail the challenge: the next one is due then. */
  retryAt: number;
  now: number;
}

/** What recording digests did: accepted (the reveal list), or too late (the challenge expired, the node's proof failed). */
export type ChallengeDigestsResult = { ok: true; challenge: ChallengeRecord } | { ok: false; challenge: ChallengeRecord; node: NodeRecord };

export interface ChallengeVerdictInput {
  challengeId: string;
  nodeId: string;
  now: number;
  outcome: 'passed' | 'failed';
  /** Why it failed (null when passed). */
  reason: string | null;
  /** The class proven (passed only). */
  provenClass: string | null;
  score: number | null;
  /** When the next re-check is due: now + a random interval (passed) or now + the retry delay (failed). */
  nextCheckAt: number;
}

export interface ChallengePort {
  /**
   * Issue challenges (one transaction): a node with an open (pending or digested) challenge keeps it and
   * gets none; a node not proven (or with resetProof) becomes 'challenging'. Event node.challenge_issued.
   * Returns the challenges inserted.
   */
  issueChallenges(items: NewChallenge[], now: number): Promise<ChallengeRecord[]>;
  getChallenge(id: string): Promise<ChallengeRecord | undefined>;
  /** The node's pending challenge (issued, digests not yet in), if any: what its heartbeat carries. */
  pendingChallengeOf(nodeId: string): Promise<ChallengeRecord | undefined>;
  /** The challenges of a node, newest first. */
  listChallenges(nodeId: string, limit: number): Promise<ChallengeRecord[]>;
  /**
   * Record the node's digests: only on the node's own pending challenge (NOT_FOUND for another node's,
   * CONFLICT when no longer pending); at or before the deadline the reveal list is stored (state digested);
   * after it the challenge expires and the node's proof fails with the reason (timed out), no slash.
   */
  recordChallengeDigests(input: ChallengeDigestsInput): Promise<ChallengeDigestsResult>;
  /** The verdict on a digested challenge: the challenge and the node's proof (event node.proven / node.proof_failed). */
  recordChallengeVerdict(input: ChallengeVerdictInput): Promise<{ challenge: ChallengeRecord; node: NodeRecord }>;
  /**
   * Open challenges past their deadline (pending) or reveal time (digested) expire; their nodes' proof fails
   * ('timed out'), next check at now + retryMs. Returns the nodes changed.
   */
  expireChallenges(now: number, retryMs: number, limit: number): Promise<NodeRecord[]>;
  /**
   * Live (online, not removed or banned) nodes due a challenge: a re-check whose time came, or, when
   * `unproven` is set, a node not proven (unproven, skipped, or challenging with its challenge gone) — in both cases with no open challenge.
   */
  dueChallengeNodes(q: { now: number; unproven: boolean; limit: number }): Promise<NodeRecord[]>;
  /** The live nodes of a provider (for the provider-wide challenge), ordered by id. */
  liveNodesOfProvider(providerId: string, limit: number): Promise<NodeRecord[]>;
  /** GPUX_CHALLENGE=off: an unproven node's proof state reads 'skipped' (a private cluster), nothing is gated. */
  skipProof(nodeId: string): Promise<void>;
}
