/**
 * X25519 keys of the end-to-end encryption (issue 13): base64 of the 32 raw bytes, fingerprint = sha256 hex
 * of the raw public key. Node only (node:crypto); the dashboard never imports this module.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { sha256Hex } from '../signing.js';

export interface X25519KeyPair {
  /** base64 of the 32 raw bytes */
  publicKey: string;
  /** base64 of the 32 raw bytes; keep it secret (files 0600) */
  privateKey: string;
}

/** PKCS#8 DER of an X25519 private key, less its 32 raw bytes (RFC 8410). */
const PKCS8_X25519_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');
const B64_32 = /^[A-Za-z0-9+/]{43}=$/;

/** The 32 raw bytes of a base64 key, or a clear error naming `what`. */
export function rawKey(b64: string, what = 'key'): Uint8Array {
  if (typeof b64 !== 'string' || !B64_32.test(b64)) throw new Error(`${what} must be base64 of 32 bytes (44 characters ending in "=")`);
  return new Uint8Array(Buffer.from(b64, 'base64'));
}

export function generateX25519KeyPair(): X25519KeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('x25519');
  const pub = publicKey.export({ format: 'jwk' });
  const priv = privateKey.export({ format: 'jwk' });
  return { publicKey: Buffer.from(String(pub.x), 'base64url').toString('base64'), privateKey: Buffer.from(String(priv.d), 'base64url').toString('base64') };
}

/** The public key of a private one (both base64 raw): to check a key file is whole. */
export function x25519PublicOf(privateKeyB64: string): string {
  const priv: KeyObject = createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, rawKey(privateKeyB64, 'private key')]), format: 'der', type: 'pkcs8' });
  const x = createPublicKey(priv).export({ format: 'jwk' }).x;
  return Buffer.from(String(x), 'base64url').toString('base64');
}

/** sha256 hex of the raw public key. */
export function x25519Fingerprint(publicKeyB64: string): string {
  return sha256Hex(rawKey(publicKeyB64, 'public key'));
}
