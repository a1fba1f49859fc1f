/**
 * Peers of this region (issue 15): add, list, remove (operators), and a peer's own summary exchange (inbound):
 * its summary is recorded and this region's is answered, signed over the request's nonce.
 */
import { GpuxError, newId, type PeerRecord } from '@gpux/core';
import { type AddPeerRequest, type ListPeersResponse, MAX_PEERS, type PeerView, peerKeyFingerprint, } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { regionSummary, type SummaryDeps } from './summary.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type PeersDeps = SummaryDeps & Needs<'random' | 'signer'>;

export const peerView = (p: PeerRecord): PeerView => ({ ...p });

/** An http(s) base URL without credentials, query or fragment; a trailing slash dropped. */
export function normalizePeerUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    throw new GpuxError('REQUEST_INVALID', `url: "${raw.slice(0, 200)}" is not a URL: give the peer coordinator's base URL, e.g. https://eu.gpux.example`);
  }
  if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new GpuxError('REQUEST_INVALID', `url: ${u.protocol} is not http: or https:`);
  if (u.username || u.password || u.search || u.hash) throw new GpuxError('REQUEST_INVALID', 'url: give the base URL alone, without credentials, query or fragment');
  return `${u.origin}${u.pathname.replace(/\/+$/, '')}`;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}$/;

export async function addPeer(rt: PeersDeps, body: AddPeerRequest): Promise<PeerView> {
  const url = normalizePeerUrl(body.url);
  const fingerprint = peerKeyFingerprint(body.key);
  if (!fingerprint) {
    throw new GpuxError('REQUEST_INVALID', "key: give the peer coordinator's key fingerprint (64 hex characters: gpux coordinator key show on the peer) or its public key (base64, from -o json)");
  }
  if (rt.signer.identityView().keys.some((k) => k.fingerprint === fingerprint)) throw new GpuxError('REQUEST_INVALID', "key: that is this coordinator's own key: give the peer's");
  const name = body.name ?? new URL(url).host;
  if (!NAME.test(name)) throw new GpuxError('REQUEST_INVALID', 'name: 1-64 characters of letters, digits, space and . _ : -, starting with a letter or digit');
  if ((await rt.store.listPeers()).length >= MAX_PEERS) throw new GpuxError('LIMIT_EXCEEDED', `this region has ${MAX_PEERS} peers, the most it may have: remove one first`);
  const now = rt.clock.now();
  return peerView(await rt.store.addPeer({ id: newId('peer', now, rt.random), name, url, keyFingerprint: fingerprint, createdAt: now }));
}

export async function removePeer(rt: PeersDeps, id: string): Promise<PeerView> {
  const removed = await rt.store.removePeer(id);
  if (!removed) throw new GpuxError('NOT_FOUND', `no peer ${id} (gpux region list shows the peers)`);
  return peerView(removed);
}

export async function listPeers(rt: PeersDeps): Promise<ListPeersResponse> {
  const [summary, peers] = await Promise.all([regionSummary(rt), rt.store.listPeers()]);
  const key = rt.signer.current();
  return { self: { region: rt.config.region, keyFingerprint: key.fingerprint, publicKey: key.publicKey, summary }, peers: peers.map(peerView) };
}
