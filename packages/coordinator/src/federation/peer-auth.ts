/**
 * Signed requests from peer regions (issue 15): ed25519 by the sending coordinator's key over method, path, body
 * digest, timestamp and nonce (protocol federation-api.ts, domain "gpux-peer-v1"). Accepted only from a configured
 * peer whose pinned key fingerprint is the signing key's; the timestamp within MAX_CLOCK_SKEW_MS and not before
 * this process started; each nonce once (the node nonce cache, under "peer:<fingerprint>", shared by replicas).
 */
import { type Clock, GpuxError, type PeerRecord, type Store } from '@gpux/core';
import { FEDERATION_HEADERS, keyFingerprint, MAX_CLOCK_SKEW_MS, peerCanonicalRequest, publicKeyFromRaw, verifyEd25519 } from '@gpux/protocol';
import type { FastifyRequest } from 'fastify';
import type { NonceClaims } from '../identity/nonces.js';

export interface PeerAuthDeps {
  clock: Clock;
  nonces: NonceClaims;
  startedAt: number;
  store: Store;
  config: { region: string };
}

const fail = (why: string): never => {
  throw new GpuxError('SIGNATURE_INVALID', `peer signature rejected: ${why}`);
};

function header(req: FastifyRequest, name: string): string {
  const v = req.headers[name];
  if (typeof v !== 'string' || v.length === 0 || v.length > 256) return fail(`missing or malformed ${name} header`);
  return v;
}

/** The peer that signed `req`, or a 401 saying what was wrong. */
export async function authenticatePeer(deps: PeerAuthDeps, req: FastifyRequest): Promise<PeerRecord> {
  const publicKey = header(req, FEDERATION_HEADERS.key);
  const tsRaw = header(req, FEDERATION_HEADERS.timestamp);
  const nonce = header(req, FEDERATION_HEADERS.nonce);
  const signature = header(req, FEDERATION_HEADERS.signature);
  if (!/^[A-Za-z0-9+/]{43}=$/.test(publicKey)) fail(`${FEDERATION_HEADERS.key} must be a base64 ed25519 public key (32 bytes)`);
  if (!/^\d{1,16}$/.test(tsRaw)) fail('the timestamp must be epoch milliseconds');
  if (!/^[A-Za-z0-9_-]{8,128}$/.test(nonce)) fail('the nonce must be 8-128 characters of [A-Za-z0-9_-]');
  const timestamp = Number(tsRaw);
  const now = deps.clock.now();
  if (Math.abs(now - timestamp) > MAX_CLOCK_SKEW_MS) fail(`the timestamp is more than ${MAX_CLOCK_SKEW_MS} ms from this coordinator's clock (${now})`);
  if (timestamp < deps.startedAt) fail('the timestamp is older than this coordinator start; sign again');
  let key: ReturnType<typeof publicKeyFromRaw>;
  try {
    key = publicKeyFromRaw(publicKey);
  } catch {
    return fail(`${FEDERATION_HEADERS.key} is not an ed25519 public key`);
  }
  const keyId = keyFingerprint(publicKey);
  const parts = { method: req.method, path: req.url, body: req.rawBody ?? '', timestamp, nonce, keyId };
  if (!verifyEd25519(peerCanonicalRequest(parts), signature, key)) fail('bad signature');
  const peer = await deps.store.findPeerByKey(keyId);
  if (!peer) {
    throw new GpuxError('UNAUTHORIZED', `key ${keyId} is not a peer of region ${deps.config.region}: its operator adds it with gpux region peer add URL --key ${keyId}`);
  }
  // Claimed only for a valid signature of a known peer, so nobody else can burn a peer's nonces.
  if (!(await deps.nonces.claim(`peer:${keyId}`, nonce, now))) fail('this nonce was used already (replay)');
  return peer;
}
