/**
 * Signed node requests: ed25519 over method, path+query, body digest, timestamp and nonce
 * (@gpux/protocol signing.ts). Replays are refused by a nonce cache and a start-time floor.
 *
 * The nonce cache is in memory. Entries live 2 × MAX_CLOCK_SKEW_MS: a request older than the skew is
 * refused by its timestamp anyway, so older nonces need not be remembered. A restart forgets the cache,
 * so requests timestamped before this coordinator started are refused too; agents sign with a fresh
 * timestamp on every try, so they only notice if their clock runs behind ours. Replicas on one PostgreSQL
 * also share every nonce through the database (cluster/shared-nonces.ts), so a replay to another replica fails too.
 */
import type { KeyObject } from 'node:crypto';
import { type Clock, GpuxError, type Store } from '@gpux/core';
import { MAX_CLOCK_SKEW_MS, nodeIdFromPublicKey, publicKeyFromRaw, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';
import type { FastifyRequest } from 'fastify';

export const NONCE_TTL_MS = 2 * MAX_CLOCK_SKEW_MS;

/** Claims a nonce once: true when it is new (and now remembered), false for a replay. */
export interface NonceClaims {
  claim(nodeId: string, nonce: string, now: number): boolean | Promise<boolean>;
}

export class NonceCache implements NonceClaims {
  private readonly seen = new Map<string, number>();
  private lastSweep = 0;

  /** True when the nonce is new (and remembers it); false for a replay. */
  claim(nodeId: string, nonce: string, now: number): boolean {
    this.sweep(now);
    const key = `${nodeId}\n${nonce}`;
    if (this.seen.has(key)) return false;
    this.seen.set(key, now + NONCE_TTL_MS);
    return true;
  }

  get size(): number {
    return this.seen.size;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 1000) return;
    this.lastSweep = now;
    // Map iteration follows insertion order, which is expiry order while the clock moves forward.
    for (const [k, exp] of this.seen) {
      if (exp > now) break;
      this.seen.delete(k);
    }
  }
}

/**
 * Public keys by node id; a node's key never changes (its id is derived from it). It also knows which nodes
 * were removed (their enrollment revoked with removeNodes), so their requests are refused at once.
 */
export class NodeKeyCache {
  private readonly keys = new Map<string, KeyObject>();
  private readonly removed = new Map<string, number>();
  constructor(private readonly store: Store) {}

  /** A node that registered (again): known, and no longer removed. */
  remember(nodeId: string, publicKeyB64: string): void {
    if (!this.keys.has(nodeId)) this.keys.set(nodeId, publicKeyFromRaw(publicKeyB64));
    this.removed.delete(nodeId);
  }

  markRemoved(nodeId: string, at: number): void {
    this.removed.set(nodeId, at);
  }

  /** When the node was removed, if it was. Valid after get() of the node. */
  removedAt(nodeId: string): number | undefined {
    return this.removed.get(nodeId);
  }

  async get(nodeId: string): Promise<KeyObject | undefined> {
    const cached = this.keys.get(nodeId);
    if (cached) return cached;
    const node = await this.store.getNode(nodeId);
    if (!node) return undefined;
    const key = publicKeyFromRaw(node.publicKey);
    this.keys.set(nodeId, key);
    if (node.removedAt !== null && node.removedAt !== undefined) this.removed.set(nodeId, node.removedAt);
    return key;
  }
}

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
