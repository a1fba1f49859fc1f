/**
 * The credential routes of GpuxClient (issue 10 items 2, 14): node enrollment tokens (create, list, revoke)
 * and bearer tokens (list, revoke). A buyer manages its own account's; an operator anyone's.
 */
import type { CreateEnrollmentRequest } from '@gpux/protocol';
import { GpuxMoneyRoutes } from './market.js';
import { callRoute, type RouteResponse, type TransportConfig } from './transport.js';

export interface AccessRequestOptions {
  signal?: AbortSignal;
}
export interface ListCredentialsParams {
  /** Operators: only this account's. */
  accountId?: string;
  limit?: number;
  cursor?: string;
}
export type CreateEnrollmentBody = CreateEnrollmentRequest;

const sig = (opts: AccessRequestOptions) => (opts.signal ? { signal: opts.signal } : {});

/** Between the money routes and GpuxClient, so client.ts stays about jobs and nodes. */
export class GpuxAccessRoutes extends GpuxMoneyRoutes {
  protected constructor(cfg: TransportConfig) {
    super(cfg);
  }

  /** A node enrollment token (shown once): pass it to `gpux node start --enrollment-token`. It can only register nodes. */
  createEnrollment(body: CreateEnrollmentBody, opts: AccessRequestOptions = {}): Promise<RouteResponse<'createEnrollment'>> {
    return callRoute(this.cfg, 'createEnrollment', { body, ...sig(opts) });
  }

  listEnrollments(query: ListCredentialsParams = {}, opts: AccessRequestOptions = {}): Promise<RouteResponse<'listEnrollments'>> {
    return callRoute(this.cfg, 'listEnrollments', { query: { accountId: query.accountId, limit: query.limit, cursor: query.cursor }, ...sig(opts) });
  }

  /** No new node registers with it; with removeNodes its nodes are removed too (their running jobs retry elsewhere). */
  revokeEnrollment(id: string, body: { removeNodes?: boolean } = {}, opts: AccessRequestOptions = {}): Promise<RouteResponse<'revokeEnrollment'>> {
    return callRoute(this.cfg, 'revokeEnrollment', { params: { id }, body: { removeNodes: body.removeNodes ?? false }, ...sig(opts) });
  }

  /** Bearer tokens (never their secrets): your account's, or every account's for operators. */
  listTokens(query: ListCredentialsParams = {}, opts: AccessRequestOptions = {}): Promise<RouteResponse<'listTokens'>> {
    return callRoute(this.cfg, 'listTokens', { query: { accountId: query.accountId, limit: query.limit, cursor: query.cursor }, ...sig(opts) });
  }

  /** Revoke a bearer token: it is refused from its next request. */
  revokeToken(id: string, opts: AccessRequestOptions = {}): Promise<RouteResponse<'revokeToken'>> {
    return callRoute(this.cfg, 'revokeToken', { params: { id }, ...sig(opts) });
  }
}
