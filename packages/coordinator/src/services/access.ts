/**
 * Credentials as a service (issue 10 items 2, 14): enrollment tokens (create, list, revoke and remove
 * nodes) and bearer tokens (list, revoke). A buyer acts on its own account; an operator on any.
 */
import { type EnrollmentRecord, GpuxError, type TokenRecord } from '@gpux/core';
import type {
  CreateEnrollmentResponse,
  EnrollmentView,
  ListEnrollmentsResponse,
  ListTokensResponse,
  RevokeEnrollmentResponse,
  TokenView,
} from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { issueEnrollment } from '../tokens.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type AccessDeps = Needs<'clock' | 'decider' | 'logger' | 'metrics' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

const EXPIRE_BATCH = 1000;
/** Live enrollments one account may hold: enough for every rack and site, not a table-filling loop. */
export const MAX_LIVE_ENROLLMENTS = 100;

export function enrollmentView(e: EnrollmentRecord, nodes: number): EnrollmentView {
  return { id: e.id, accountId: e.accountId, name: e.name, createdAt: e.createdAt, expiresAt: e.expiresAt, revokedAt: e.revokedAt, maxNodes: e.maxNodes, nodes };
}

export function tokenView(t: TokenRecord): TokenView {
  return { id: t.id, accountId: t.accountId, role: t.role, name: t.name, createdAt: t.createdAt, expiresAt: t.expiresAt ?? null, revokedAt: t.revokedAt ?? null };
}

/** Whose credentials a principal may see: its own account, or (operators) any, optionally one. */
function scope(p: Principal, accountId: string | undefined): string | undefined {
  if (p.role === 'operator') return accountId;
  if (accountId !== undefined && accountId !== p.accountId) throw new GpuxError('FORBIDDEN', 'only operators see other accounts\' credentials: drop accountId');
  return p.accountId;
}

export async function createEnrollment(
  rt: AccessDeps,
  p: Principal,
  body: { name: string; expiresInSeconds?: number | undefined; maxNodes?: number | undefined; accountId?: string | undefined },
): Promise<CreateEnrollmentResponse> {
  if (body.accountId !== undefined && body.accountId !== p.accountId && p.role !== 'operator') {
    throw new GpuxError('FORBIDDEN', 'only operators create enrollments for another account: drop accountId to enroll nodes for your own');
  }
  const accountId = body.accountId ?? p.accountId;
  // Accounts exist through their tokens: an operator's typo must not enroll nodes for nobody.
  if (accountId !== p.accountId && (await rt.store.listTokens({ accountId, limit: 1 })).items.length === 0) {
    throw new GpuxError('NOT_FOUND', `no account ${accountId}: list accounts with \`gpux token list --all\``);
  }
  const live = await rt.store.countLiveEnrollments(accountId, rt.clock.now());
  if (live >= MAX_LIVE_ENROLLMENTS) {
    throw new GpuxError('LIMIT_EXCEEDED', `account ${accountId} has ${live} live enrollments, the most one account may hold (${MAX_LIVE_ENROLLMENTS}): revoke unused ones with \`gpux enrollment revoke\``);
  }
  const { token, enrollment } = await issueEnrollment(
    rt.store,
    {
      accountId,
      name: body.name,
      ...(body.expiresInSeconds !== undefined ? { expiresInSeconds: body.expiresInSeconds } : {}),
      ...(body.maxNodes !== undefined ? { maxNodes: body.maxNodes } : {}),
      fingerprint: rt.signer.current().fingerprint, // the agent pins the coordinator's key from it (issue 19)
    },
    rt.clock,
    rt.random,
  );
  rt.logger.info({ enrollmentId: enrollment.id, accountId: enrollment.accountId, by: p.accountId }, 'enrollment created');
  return { token, enrollment: enrollmentView(enrollment, 0) };
}

export async function listEnrollments(rt: AccessDeps, p: Principal, q: { accountId?: string | undefined; limit: number; cursor?: string | undefined }): Promise<ListEnrollmentsResponse> {
  const accountId = scope(p, q.accountId);
  const page = await rt.store.listEnrollments({ limit: q.limit, ...(accountId !== undefined ? { accountId } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) });
  return { enrollments: page.items.map((e) => enrollmentView(e, e.nodes)), nextCursor: page.nextCursor };
}

/**
 * Revoke an enrollment. With removeNodes its nodes are refused from their next request, leave the
 * capacity index (and so the supply) now, and their active attempts end as lost here, so their jobs retry
 * elsewhere at once instead of after a lease.
 */
export async function revokeEnrollment(rt: AccessDeps, p: Principal, id: string, removeNodes: boolean): Promise<RevokeEnrollmentResponse> {
  const existing = await rt.store.getEnrollment(id);
  // Someone else's enrollment reads as missing, like someone else's job.
  if (!existing || (p.role !== 'operator' && existing.accountId !== p.accountId)) throw new GpuxError('NOT_FOUND', `enrollment ${id} not found`);
  const now = rt.clock.now();
  const res = await rt.store.revokeEnrollment(id, now, removeNodes);
  if (!res) throw new GpuxError('NOT_FOUND', `enrollment ${id} not found`);
  for (const nodeId of res.removedNodeIds) {
    // Removed: refused from its next request, out of placement and supply, never brought back by a heartbeat.
    await rt.signals.nodeChanged(nodeId);
    rt.work.wake(nodeId);
  }
  // Their attempts end now, here or by the periodic expiry pass if it comes first: the store counted them.
  if (res.removedNodeIds.length > 0) {
    for (;;) {
      const lost = await rt.store.expireLeases(now, rt.decider, EXPIRE_BATCH);
      for (const l of lost) {
        rt.metrics.leaseExpiries.inc();
        rt.signals.attemptEnded(l.attemptId, l.jobId, 'lost');
      }
      if (lost.length < EXPIRE_BATCH) break;
    }
  }
  const lostAttempts = res.lostAttempts;
  rt.logger.warn({ enrollmentId: id, by: p.accountId, removedNodes: res.removedNodeIds.length, lostAttempts }, 'enrollment revoked');
  return { enrollment: enrollmentView(res.enrollment, res.nodes), removedNodes: res.removedNodeIds, lostAttempts };
}

export async function listTokens(rt: AccessDeps, p: Principal, q: { accountId?: string | undefined; limit: number; cursor?: string | undefined }): Promise<ListTokensResponse> {
  const accountId = scope(p, q.accountId);
  const page = await rt.store.listTokens({ limit: q.limit, ...(accountId !== undefined ? { accountId } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) });
  return { tokens: page.items.map(tokenView), nextCursor: page.nextCursor };
}

export async function revokeToken(rt: AccessDeps, p: Principal, id: string): Promise<{ token: TokenView }> {
  const existing = await rt.store.getToken(id);
  if (!existing || (p.role !== 'operator' && existing.accountId !== p.accountId)) throw new GpuxError('NOT_FOUND', `token ${id} not found`);
  const t = await rt.store.revokeToken(id, rt.clock.now());
  if (!t) throw new GpuxError('NOT_FOUND', `token ${id} not found`);
  rt.logger.warn({ tokenId: id, accountId: t.accountId, by: p.accountId }, 'token revoked');
  return { token: tokenView(t) };
}
