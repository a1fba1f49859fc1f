/**
 * Federation peers (issue 15): the other regions an operator peered this coordinator with, by URL and key
 * fingerprint, and what the last summary exchange with each left: status, round trip, last seen, the peer's last
 * summary, and the failures in a row that back the next try off. Written by the leader's summary pass (outbound)
 * and by whichever replica a peer's own exchange reaches (inbound: the summary and last seen only).
 */
import type { PeerStatus, RegionSummary } from '@gpux/protocol';

export interface PeerRecord {
  id: string;
  name: string;
  url: string;
  keyFingerprint: string;
  createdAt: number;
  status: PeerStatus;
  lastSeenAt: number | null;
  rttMs: number | null;
  lastError: string | null;
  failures: number;
  nextTryAt: number | null;
  summary: RegionSummary | null;
  summaryAt: number | null;
}

export interface NewPeer {
  id: string;
  name: string;
  url: string;
  keyFingerprint: string;
  createdAt: number;
}

/** How an exchange this region started ended. */
export type PeerExchangeOutcome =
  | { at: number; ok: true; rttMs: number; summary: RegionSummary }
  | { at: number; ok: false; status: 'unreachable' | 'unauthorized'; error: string; nextTryAt: number };

export interface PeersPort {
  /** Adds a peer; CONFLICT (naming the existing peer) when its URL or its key is already a peer's. */
  addPeer(p: NewPeer): Promise<PeerRecord>;
  /** Every peer, oldest first. */
  listPeers(): Promise<PeerRecord[]>;
  getPeer(id: string): Promise<PeerRecord | undefined>;
  findPeerByKey(keyFingerprint: string): Promise<PeerRecord | undefined>;
  /** Removes the peer; undefined when there was none. */
  removePeer(id: string): Promise<PeerRecord | undefined>;
  /**
   * The outcome of an exchange this region started: ok sets status ok, the round trip, the peer's summary, last
   * seen, and clears the failures; a failure sets the status and error, counts one more failure in a row and the
   * next try, and keeps the last summary (its summaryAt says how old it is). A removed peer: nothing.
   */
  recordPeerExchange(id: string, outcome: PeerExchangeOutcome): Promise<void>;
  /** A summary the peer sent itself (inbound): its summary and last seen; this region's own status of it is unchanged. */
  recordPeerSummary(id: string, summary: RegionSummary, at: number): Promise<void>;
}
