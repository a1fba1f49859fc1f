/**
 * Key wrapping with HPKE (RFC 9180) base mode: DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM, through
 * @hpke/core with @hpke/dhkem-x25519 (a pure-JS X25519, so it behaves the same on Node 20, 22 and 24 whatever
 * their WebCrypto X25519 support). A wrapped key is base64 of enc (32 bytes) ‖ sealed 32-byte key (48 bytes).
 *
 * `info` binds the context, so a wrapped key opens only where it was meant to: see wrapInfo.
 */
import { Aes256Gcm, CipherSuite, HkdfSha256 } from '@hpke/core';
import { DhkemX25519HkdfSha256 } from '@hpke/dhkem-x25519';
import { rawKey, x25519Fingerprint } from './keys.js';

export const DATA_KEY_BYTES = 32;
/** enc (32) + the sealed data key (32) + its tag (16). */
export const WRAPPED_KEY_BYTES = 80;
export const E2E_VERSION = 'gpux-e2e-v1';

const suite = new CipherSuite({ kem: new DhkemX25519HkdfSha256(), kdf: new HkdfSha256(), aead: new Aes256Gcm() });

/**
 * What a wrapped key is for:
 * - `input`: the job's input data key for one attempt (jobId, attemptId) on the node whose encryption key has
 *   `recipientFingerprint`, for the spec whose e2eSpecDigest is `specDigest` (so a coordinator that alters the
 *   image, command, env, inputs or buyer key in the assignment gets a key the node cannot open). A key the buyer
 *   wraps in advance for a named node (spec.encryption.preWrapped) has jobId and attemptId null: the job id is not
 *   known before submission; the spec digest still binds it to this very spec.
 * - `output`: an attempt's output key (outputs and logs), wrapped by the node to the buyer's key; no spec digest.
 */
export interface WrapContext {
  purpose: 'input' | 'output';
  jobId: string | null;
  attemptId: string | null;
  /** x25519Fingerprint of the recipient's public key */
  recipientFingerprint: string;
  /** e2eSpecDigest of the job's spec; required for `input`. */
  specDigest?: string | undefined;
}

/**
 * UTF-8 of the lines "gpux-e2e-v1", purpose, jobId (or "any-job"), attemptId (or "any-attempt"), the recipient
 * fingerprint, and (input) the spec digest, joined by "\n".
 */
export function wrapInfo(c: WrapContext): Uint8Array {
  for (const [k, v] of [['jobId', c.jobId ?? ''], ['attemptId', c.attemptId ?? '']] as const) {
    if (v.includes('\n')) throw new Error(`${k} must not contain a newline`);
  }
  if (!/^[0-9a-f]{64}$/.test(c.recipientFingerprint)) throw new Error('recipientFingerprint must be a sha256 hex digest');
  if (c.purpose === 'input' && !/^[0-9a-f]{64}$/.test(c.specDigest ?? '')) throw new Error('an input key\'s context needs the spec digest (e2eSpecDigest)');
  const lines = [E2E_VERSION, c.purpose, c.jobId ?? 'any-job', c.attemptId ?? 'any-attempt', c.recipientFingerprint];
  if (c.purpose === 'input') lines.push(c.specDigest as string);
  return new TextEncoder().encode(lines.join('\n'));
}

/** Wrap a 32-byte data key to the recipient's X25519 public key (base64); the fingerprint in `ctx` must be that key's. */
export async function wrapKey(dataKey: Uint8Array, recipientPublicKeyB64: string, ctx: WrapContext): Promise<string> {
  if (dataKey.length !== DATA_KEY_BYTES) throw new Error(`a data key has ${DATA_KEY_BYTES} bytes`);
  if (x25519Fingerprint(recipientPublicKeyB64) !== ctx.recipientFingerprint) throw new Error('the context names another recipient key than the one given');
  const recipientPublicKey = await suite.kem.deserializePublicKey(rawKey(recipientPublicKeyB64, 'recipient public key'));
  const sealed = await suite.seal({ recipientPublicKey, info: wrapInfo(ctx) }, dataKey);
  return Buffer.concat([Buffer.from(sealed.enc), Buffer.from(sealed.ct)]).toString('base64');
}

/** True when `s` has the shape of a wrapped key (base64 of WRAPPED_KEY_BYTES). */
export function isWrappedKey(s: string): boolean {
  return /^[A-Za-z0-9+/]{107}=$/.test(s) && Buffer.from(s, 'base64').length === WRAPPED_KEY_BYTES;
}

/**
 * Open a wrapped key with the recipient's private key (base64). Throws when it was wrapped to another key, for
 * another context (job, attempt, purpose, recipient) or altered: the error never says which.
 */
export async function unwrapKey(wrappedB64: string, recipientPrivateKeyB64: string, ctx: WrapContext): Promise<Uint8Array> {
  if (!isWrappedKey(wrappedB64)) throw new Error(`a wrapped key is base64 of ${WRAPPED_KEY_BYTES} bytes`);
  const raw = Buffer.from(wrappedB64, 'base64');
  const recipientKey = await suite.kem.deserializePrivateKey(rawKey(recipientPrivateKeyB64, 'private key'));
  try {
    const pt = await suite.open({ recipientKey, enc: raw.subarray(0, 32), info: wrapInfo(ctx) }, raw.subarray(32));
    return new Uint8Array(pt);
  } catch {
    throw new Error('the wrapped key does not open with this key and context (another recipient, job, attempt or purpose, or altered)');
  }
}
