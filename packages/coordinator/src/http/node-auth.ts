/**
 * Signed node requests: ed25519 over method, path+query, body digest, timestamp and nonce
 * (@gpux/protocol signing.ts). Replays are refused by a nonce cache and a start-time floor.
 *
 * The nonce cache (identity/nonces.ts) is in memory. Entries live 2 × MAX_CLOCK_SKEW_MS: a request older than the skew is
 * refused by its timestamp anyway, so older nonces need not be remembered. A restart forgets the cache,
 * so requests timestamped before this coordinator started are refused too; agents sign with a fresh
 * timestamp on every try, so they only notice if their clock runs behind ours. Replicas on one PostgreSQL
 * also share every nonce through the database (cluster/shared-nonces.ts), so a replay to another replica fails too.
 */
import type { KeyObject } from 'node:crypto';
import { type Clock, GpuxError } from '@gpux/core';
import { MAX_CLOCK_SKEW_MS, nodeIdFromPublicKey, publicKeyFromRaw, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';
import type { FastifyRequest } from 'fastify';
import type { NodeKeyCache } from '../identity/node-keys.js';
import type { NonceClaims } from '../identity/nonces.js';

export interface NodeAuthDeps {
  clock: Clock;
  nonces: NonceClaims;
  keys: NodeKeyCache;
  /** Requests timestamped before this are refused (see the module comment). */
  startedAt: number;
}

const fail = (why: string): never => {
  throw new GpuxError('SIGNATURE_INVALID', `request signature rejected: ${why}`);
};

function header(req: FastifyRequest, name: string): string {
  const v = req.headers[name];
  if (typeof v !== 'string' || v.length === 0 || v.length > 256) return fail(`missing or malformed ${name} header`);
  return v;
}

/**
 * Verify a node request and return the node id. A register request carries its public key in the body
 * (`register.publicKey`, unvalidated yet); every other route looks the key up by node id.
 */
export async function authenticateNode(deps: NodeAuthDeps, req: FastifyRequest, register?: { publicKey: unknown }): Promise<string> {
  const nodeId = header(req, SIGNATURE_HEADERS.node);
  const tsRaw = header(req, SIGNATURE_HEADERS.timestamp);
  const nonce = header(req, SIGNATURE_HEADERS.nonce);
  const signature = header(req, SIGNATURE_HEADERS.signature);
  if (!/^\d{1,16}$/.test(tsRaw)) fail('the timestamp must be epoch milliseconds');
  if (!/^[A-Za-z0-9_-]{8,128}$/.test(nonce)) fail('the nonce must be 8-128 characters of [A-Za-z0-9_-]');
  const timestamp = Number(tsRaw);
  const now = deps.clock.now();
  if (Math.abs(now - timestamp) > MAX_CLOCK_SKEW_MS) fail(`the timestamp is more than ${MAX_CLOCK_SKEW_MS} ms from the coordinator's clock (${now})`);
  if (timestamp < deps.startedAt) fail('the timestamp is older than the coordinator start; sign again');

  let key: KeyObject | undefined;
  if (register) {
    const pk = register.publicKey;
    if (typeof pk !== 'string') return fail('the body has no publicKey');
    if (nodeIdFromPublicKey(pk) !== nodeId) fail('the node id does not belong to this public key');
    try {
      key = publicKeyFromRaw(pk);
    } catch {
      fail('publicKey is not a base64 ed25519 public key of 32 bytes');
    }
  } else {
    key = await deps.keys.get(nodeId);
    if (!key) fail('unknown node; register first');
  }
  const parts = { method: req.method, path: req.url, body: req.rawBody ?? '', nodeId, timestamp, nonce };
  if (!verifySignature(parts, signature, key as KeyObject)) fail('bad signature');
  const removedAt = register ? undefined : deps.keys.removedAt(nodeId);
  if (removedAt !== undefined) {
    throw new GpuxError(
      'UNAUTHORIZED',
      `node ${nodeId} was removed at ${new Date(removedAt).toISOString()} (its enrollment was revoked): register it again with a valid enrollment token`,
    );
  }
  // Claim the nonce only for a valid signature, so forged requests cannot burn a real agent's nonces.
  if (!(await deps.nonces.claim(nodeId, nonce, now))) fail('this nonce was used already (replay)');
  return nodeId;
}
