/**
 * The federation routes of GpuxClient (issue 15; operator token): this region and its peers, adding and removing
 * a peer, this region's own summary, and the clearing balances with each peer. Calls between regions (summary
 * exchanges, forwarded jobs) are signed by coordinator keys, not here.
 */
import type { AddPeerRequest } from '@gpux/protocol';
import { GpuxAccessRoutes } from './access.js';
import { callRoute, type RouteResponse, type TransportConfig } from './transport.js';

export interface FederationRequestOptions {
  signal?: AbortSignal;
}
export type AddPeerBody = AddPeerRequest;

const sig = (opts: FederationRequestOptions) => (opts.signal ? { signal: opts.signal } : {});

/** Between the access routes and GpuxClient, so client.ts stays about jobs and nodes. */
export class GpuxFederationRoutes extends GpuxAccessRoutes {
  protected constructor(cfg: TransportConfig) {
    super(cfg);
  }

  /** This region (name, key, summary) and its peers with their status, round trip, last seen and last summary. */
  regionPeers(opts: FederationRequestOptions = {}): Promise<RouteResponse<'regionPeers'>> {
    return callRoute(this.cfg, 'regionPeers', sig(opts));
  }

  /** Peer with another region by its URL and its coordinator key (fingerprint or base64 public key). Not retried. */
  addPeer(body: AddPeerBody, opts: FederationRequestOptions = {}): Promise<RouteResponse<'addPeer'>> {
    return callRoute(this.cfg, 'addPeer', { body, ...sig(opts) });
  }

  removePeer(id: string, opts: FederationRequestOptions = {}): Promise<RouteResponse<'removePeer'>> {
    return callRoute(this.cfg, 'removePeer', { params: { id }, ...sig(opts) });
  }

  /** This region's summary as its peers receive it. */
  regionSummary(opts: FederationRequestOptions = {}): Promise<RouteResponse<'regionSummary'>> {
    return callRoute(this.cfg, 'regionSummary', sig(opts));
  }

  /** Inter-region clearing per peer and asset (positive: this region owes the peer), with jobs sent, received and open. */
  regionBalance(opts: FederationRequestOptions = {}): Promise<RouteResponse<'regionBalance'>> {
    return callRoute(this.cfg, 'regionBalance', sig(opts));
  }
}
