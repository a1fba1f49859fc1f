/**
 * Federation (issue 15, first slice): each coordinator is a region with its own ed25519 identity (its coordinator
 * key). An operator peers two regions by URL and key; their leaders then exchange signed summaries: free GPUs and
 * the price index per class, queue depth and recent placement wait. Routing, forwarding and clearing come later.
 *
 * A summary exchange is `POST /v1/federation/summary`, signed by the sending coordinator's key like an agent
 * request (method, path, body digest, timestamp, nonce) under its own domain ("gpux-peer-v1"), so no node or
 * order signature can be replayed as one. The answer carries the receiver's summary, signed over the request's
 * nonce and the answer's body digest ("gpux-peer-answer-v1"): the sender knows it came from the key it pinned,
 * for this request.
 */
import { type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { Fingerprint, keyFingerprint } from './coordinator-identity.js';
import { sha256Hex } from './signing.js';

/** A region's name: short, lowercase, safe in a URL, a label and a terminal. */
export const REGION_NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;
export const RegionName = z.string().regex(REGION_NAME_PATTERN, 'a region name: 1-32 characters of a-z, 0-9 and -, starting and ending with a letter or digit');

export const FEDERATION_HEADERS = {
  /** The sender's (or answerer's) public key, base64 of 32 raw bytes: its fingerprint must be a pinned peer's. */
  key: 'x-gpux-peer-key',
  timestamp: 'x-gpux-timestamp',
  nonce: 'x-gpux-nonce',
  signature: 'x-gpux-signature',
} as const;

/** Largest summary exchange body (either way): a summary is well under 32 KiB even with every class. */
export const MAX_SUMMARY_BODY_BYTES = 64 * 1024;
/** Classes one summary may list. */
export const MAX_SUMMARY_CLASSES = 256;
/** Peers one region may have. */
export const MAX_PEERS = 64;

const Count = (max: number) => z.number().int().min(0).max(max);

export const RegionClassFigures = z.object({
  class: z.string().regex(/^[a-z0-9][a-z0-9.-]{0,63}$/, 'a market class, e.g. nvidia-h100-80gb').describe('Market class (as GET /v1/market/prices names it)'),
  freeGpus: Count(10_000_000).describe('GPUs of the class on live, schedulable nodes that no attempt holds now'),
  totalGpus: Count(10_000_000).describe('GPUs of the class on live nodes'),
  priceIndex: Count(1e15).describe('Index price per GPU-hour (per job-hour for cpu), minor units'),
});
export type RegionClassFigures = z.infer<typeof RegionClassFigures>;

export const RegionSummary = z.object({
  region: RegionName,
  sentAt: z.number().int().min(0).max(1e14).describe('When the summary was made (its region clock, epoch ms)'),
  classes: z.array(RegionClassFigures).max(MAX_SUMMARY_CLASSES),
  queueDepth: Count(1e9).describe('Jobs queued now'),
  placementWaitP50Ms: Count(365 * 86_400_000).nullable().describe('Median wait from submission to first placement over the recent window; null: no placement in it (or unknown on a replica that does not lead)'),
});
export type RegionSummary = z.infer<typeof RegionSummary>;

export const SummaryExchange = z.object({ summary: RegionSummary });
export type SummaryExchange = z.infer<typeof SummaryExchange>;

export const PEER_STATUSES = ['new', 'ok', 'unreachable', 'unauthorized'] as const;
export type PeerStatus = (typeof PEER_STATUSES)[number];

export const PeerView = z.object({
  id: z.string(),
  name: z.string(),
  url: z.string(),
  keyFingerprint: Fingerprint,
  createdAt: z.number().int(),
  status: z.enum(PEER_STATUSES).describe('new: not contacted yet; ok: the last exchange worked; unreachable: it failed (lastError says how); unauthorized: the peer refused our signature or answered with another key'),
  lastSeenAt: z.number().int().nullable().describe('Last time a signed summary came from the peer (its answer or its own exchange)'),
  rttMs: z.number().int().nullable().describe('Round trip of the last exchange this region started'),
  lastError: z.string().nullable(),
  failures: z.number().int().describe('Failed exchanges in a row (the next try backs off)'),
  nextTryAt: z.number().int().nullable(),
  summary: RegionSummary.nullable().describe("The peer's last summary"),
  summaryAt: z.number().int().nullable().describe('When this region received it'),
});
export type PeerView = z.infer<typeof PeerView>;

export const RegionView = z.object({
  region: RegionName,
  keyFingerprint: Fingerprint.describe('The key this region signs with (peers pin it)'),
  publicKey: z.string().describe('Its public key, base64 (what `gpux region peer add --key` takes)'),
  summary: RegionSummary,
});
export type RegionView = z.infer<typeof RegionView>;

export const ListPeersResponse = z.object({ self: RegionView, peers: z.array(PeerView) });
export type ListPeersResponse = z.infer<typeof ListPeersResponse>;

export const AddPeerRequest = z
  .object({
    url: z.string().min(1).max(2048),
    key: z.string().min(1).max(128).describe("The peer's coordinator key: its fingerprint (64 hex, as `gpux coordinator key show` prints it) or its public key (base64)"),
    name: z.string().min(1).max(64).optional(),
  })
  .strict();
export type AddPeerRequest = z.infer<typeof AddPeerRequest>;

export const PeerResponse = z.object({ peer: PeerView });
export type PeerResponse = z.infer<typeof PeerResponse>;

// ---- signatures ----

export interface PeerSignedParts {
  method: string;
  /** Path including the query string, exactly as sent. */
  path: string;
  body: string | Uint8Array;
  timestamp: number;
  nonce: string;
  /** Fingerprint of the signing key. */
  keyId: string;
}

export function peerCanonicalRequest(p: PeerSignedParts): Buffer {
  return Buffer.from(['gpux-peer-v1', p.method.toUpperCase(), p.path, sha256Hex(p.body), String(p.timestamp), p.nonce, p.keyId].join('\n'), 'utf8');
}

/** What the answer's signature covers: the request it answers (its nonce) and the answer's own bytes. */
export function peerCanonicalAnswer(requestNonce: string, body: string | Uint8Array, keyId: string): Buffer {
  return Buffer.from(['gpux-peer-answer-v1', requestNonce, sha256Hex(body), keyId].join('\n'), 'utf8');
}

export function verifyEd25519(data: Buffer, signatureB64: string, key: KeyObject): boolean {
  try {
    return verify(null, data, key, Buffer.from(signatureB64, 'base64'));
  } catch {
    return false;
  }
}

export function signEd25519(data: Buffer, key: KeyObject): string {
  return sign(null, data, key).toString('base64');
}

/**
 * What an operator typed as a peer's key → its fingerprint: 64 hex characters are the fingerprint itself, a
 * base64 ed25519 public key is hashed. Anything else: undefined.
 */
export function peerKeyFingerprint(raw: string): string | undefined {
  const s = raw.trim();
  if (/^[0-9a-fA-F]{64}$/.test(s)) return s.toLowerCase();
  if (/^[A-Za-z0-9+/]{43}=$/.test(s) && Buffer.from(s, 'base64').length === 32) return keyFingerprint(s);
  return undefined;
}

/** A short form of a fingerprint for tables. */
export const shortFingerprint = (fp: string): string => `${fp.slice(0, 16)}…`;
