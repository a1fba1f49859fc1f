/**
 * Node request signing: every agent request is signed with the node's ed25519 key over method, path,
 * body digest, timestamp and nonce. Shared by the agent (signs) and the coordinator (verifies).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';

export const SIGNATURE_HEADERS = {
  node: 'x-gpux-node',
  timestamp: 'x-gpux-timestamp',
  nonce: 'x-gpux-nonce',
  signature: 'x-gpux-signature',
} as const;

/** How far a request's timestamp may be from the coordinator's clock. */
export const MAX_CLOCK_SKEW_MS = 60_000;

export interface SignedParts {
  method: string;
  /** Path including the query string, exactly as sent. */
  path: string;
  body: string | Uint8Array;
  nodeId: string;
  timestamp: number;
  nonce: string;
}

export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

export function canonicalRequest(p: SignedParts): string {
  return ['gpux-v1', p.method.toUpperCase(), p.path, sha256Hex(p.body), String(p.timestamp), p.nonce, p.nodeId].join('\n');
}

/** A node id is derived from its public key, so an id cannot be claimed without the key. */
export function nodeIdFromPublicKey(publicKeyB64: string): string {
  return `n-${sha256Hex(Buffer.from(publicKeyB64, 'base64')).slice(0, 24)}`;
}

export interface NodeKeyPair {
  publicKey: string; // base64 of 32 raw bytes
  privateKeyPem: string;
}

export function generateNodeKeyPair(): NodeKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { publicKey: rawPublicKey(publicKey), privateKeyPem: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString() };
}

export function rawPublicKey(key: KeyObject): string {
  const jwk = key.export({ format: 'jwk' });
  return Buffer.from(String(jwk.x), 'base64url').toString('base64');
}

/**
 * Keys made from their text, kept: making one costs about as much as the signature check itself, and a
 * coordinator checks each node's key on every report. Bounded (the oldest goes first), so a stream of
 * made-up keys costs a miss each, never memory.
 */
const KEPT_KEYS = 4096;
function keptKey(cache: Map<string, KeyObject>, text: string, make: () => KeyObject): KeyObject {
  let key = cache.get(text);
  if (!key) {
    key = make();
    if (cache.size >= KEPT_KEYS) cache.delete(cache.keys().next().value as string);
    cache.set(text, key);
  }
  return key;
}

const publicKeys = new Map<string, KeyObject>();
export function publicKeyFromRaw(publicKeyB64: string): KeyObject {
  return keptKey(publicKeys, publicKeyB64, () => {
    const raw = Buffer.from(publicKeyB64, 'base64');
    if (raw.length !== 32) throw new Error('an ed25519 public key has 32 bytes');
    return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  });
}

// Parsing a PEM costs ten times the signature itself; an agent signs every request and result with one key.
const privateKeys = new Map<string, KeyObject>();
export function privateKeyObject(key: string | KeyObject): KeyObject {
  return typeof key === 'string' ? keptKey(privateKeys, key, () => createPrivateKey(key)) : key;
}

/** Headers to attach to a request. `now` and `nonce` are parameters so tests are deterministic. */
export function signRequest(
  parts: Omit<SignedParts, 'timestamp' | 'nonce'> & { timestamp?: number; nonce?: string },
  privateKey: string | KeyObject,
): Record<string, string> {
  const full: SignedParts = { ...parts, timestamp: parts.timestamp ?? Date.now(), nonce: parts.nonce ?? randomBytes(16).toString('hex') };
  const signature = sign(null, Buffer.from(canonicalRequest(full)), privateKeyObject(privateKey)).toString('base64');
  return {
    [SIGNATURE_HEADERS.node]: full.nodeId,
    [SIGNATURE_HEADERS.timestamp]: String(full.timestamp),
    [SIGNATURE_HEADERS.nonce]: full.nonce,
    [SIGNATURE_HEADERS.signature]: signature,
  };
}

export function verifySignature(parts: SignedParts, signatureB64: string, publicKey: KeyObject): boolean {
  try {
    return verify(null, Buffer.from(canonicalRequest(parts)), publicKey, Buffer.from(signatureB64, 'base64'));
  } catch {
    return false;
  }
}

/** Root digest over a set of output files: sha256 of sorted "path\0sha256\n" lines. */
export function outputRootDigest(files: ReadonlyArray<{ path: string; sha256: string }>): string {
  const lines = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)).map((f) => `${f.path}\0${f.sha256}\n`);
  return sha256Hex(lines.join(''));
}
