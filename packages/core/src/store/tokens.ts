import type { EnrollmentRecord, Role, TokenRecord } from '../records.js';
import type { Page } from './page.js';

/** Tokens and node enrollments (tokens that only register nodes). */
export interface TokensPort {
  createToken(token: TokenRecord): Promise<void>;
  findTokenByHash(hash: string): Promise<TokenRecord | undefined>;
  countTokens(role?: Role): Promise<number>;
  getToken(id: string): Promise<TokenRecord | undefined>;
  /** Oldest first (by id), keyset-paginated; of one account or all. */
  listTokens(q: { accountId?: string; limit: number; cursor?: string }): Promise<Page<TokenRecord>>;
  /** Set revokedAt (kept when already revoked). undefined when there is no such token. */
  revokeToken(id: string, now: number): Promise<TokenRecord | undefined>;
  createEnrollment(e: EnrollmentRecord): Promise<void>;
  findEnrollmentByHash(hash: string): Promise<EnrollmentRecord | undefined>;
  getEnrollment(id: string): Promise<EnrollmentRecord | undefined>;
  /** Oldest first (by id), keyset-paginated, each with how many live (not removed) nodes registered with it. */
  listEnrollments(q: { accountId?: string; limit: number; cursor?: string }): Promise<Page<EnrollmentRecord & { nodes: number }>>;
  /**
   * Revoke (revokedAt kept when already set). With removeNodes, every node registered with it and not yet
   * removed gets removedAt = now and goes offline (event node.removed), and the leases of their active
   * attempts are cut to expire (expireLeases then ends them as lost), in the same transaction. `nodes`: its
   * live nodes after the call.
   */
  /** lostAttempts: the removed nodes' assigned and running attempts, whose leases end now (expireLeases ends them as lost). */
  revokeEnrollment(id: string, now: number, removeNodes: boolean): Promise<{ enrollment: EnrollmentRecord; removedNodeIds: string[]; lostAttempts: number; nodes: number } | undefined>;
  /** Live (not removed) nodes of one provider account. */
  countProviderNodes(providerId: string): Promise<number>;
  /** Enrollments of the account that still register nodes: not revoked, not expired at `now`. */
  countLiveEnrollments(accountId: string, now: number): Promise<number>;
}
