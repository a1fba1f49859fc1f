/**
 * End-to-end encryption (issue 13): the wire shapes of node encryption keys and of the key relay. The
 * coordinator stores and relays wrapped keys and ciphertext only; it never holds a data key in clear.
 * The crypto itself (HPKE wrapping, chunked AEAD of files and logs) is '@gpux/protocol/e2e' (Node only).
 */
import { createPrivateKey, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from './commitment.js';
import { publicKeyFromRaw, sha256Hex } from './signing.js';

/** An X25519 public key: base64 of the 32 raw bytes. */
export const X25519PublicKey = z.string().regex(/^[A-Za-z0-9+/]{43}=$/, 'base64 of a 32-byte X25519 public key (44 characters ending in "=")');
/** An HPKE-wrapped 32-byte key: base64 of enc (32) ‖ sealed key (48) = 80 bytes. */
export const WrappedKey = z.string().regex(/^[A-Za-z0-9+/]{107}=$/, 'base64 of an 80-byte HPKE-wrapped key (108 characters)');

/** The node's ed25519 identity signs this: "gpux-node-enc-key-v1\n" + the X25519 public key (base64), UTF-8. */
export const NODE_ENC_KEY_DOMAIN = 'gpux-node-enc-key-v1\n';

export const NodeEncryptionKey = z
  .object({
    publicKey: X25519PublicKey.describe("The node's X25519 encryption key: buyers wrap data keys to it"),
    signature: z.string().regex(/^[A-Za-z0-9+/]{86}==$/, 'base64 of a 64-byte ed25519 signature').describe('The node identity key\'s ed25519 signature over "gpux-node-enc-key-v1\\n" + publicKey'),
  })
  .strict();
export type NodeEncryptionKey = z.infer<typeof NodeEncryptionKey>;

export function nodeEncryptionKeyBytes(publicKeyB64: string): Buffer {
  return Buffer.from(NODE_ENC_KEY_DOMAIN + publicKeyB64, 'utf8');
}

/** The agent: sign its encryption key with its identity key (PEM). */
export function signNodeEncryptionKey(publicKeyB64: string, identityPrivateKeyPem: string): NodeEncryptionKey {
  return { publicKey: publicKeyB64, signature: sign(null, nodeEncryptionKeyBytes(publicKeyB64), createPrivateKey(identityPrivateKeyPem)).toString('base64') };
}

/**
 * True when the node identity key (base64 ed25519) signed this encryption key. The buyer's client checks it
 * against the identity key whose hash is the node id (nodeIdFromPublicKey), so a coordinator cannot hand it a
 * key of its own. Never throws.
 */
export function verifyNodeEncryptionKey(key: NodeEncryptionKey, identityPublicKeyB64: string): boolean {
  try {
    const sig = Buffer.from(key.signature, 'base64');
    return sig.length === 64 && verify(null, nodeEncryptionKeyBytes(key.publicKey), publicKeyFromRaw(identityPublicKeyB64), sig);
  } catch {
    return false;
  }
}

/**
 * The digest an input key's HPKE context binds (e2e/wrap.ts): sha256 of the canonical JSON of what decides where
 * the plaintext goes — image, command, args, env, inputs, network, checkpoint, verify and the buyer key — of the
 * spec with its defaults applied (JobSpec.parse). The buyer's client and the node compute it alike.
 */
export function e2eSpecDigest(spec: {
  image: string;
  command: readonly string[];
  args?: readonly string[] | undefined;
  env?: Record<string, string> | undefined;
  inputs?: readonly unknown[] | undefined;
  network?: boolean | undefined;
  checkpoint?: unknown;
  verify?: unknown;
  encryption?: { buyerKey: string } | undefined;
}): string {
  const fields = {
    v: 1,
    image: spec.image,
    command: spec.command,
    args: spec.args ?? [],
    env: spec.env ?? {},
    inputs: spec.inputs ?? [],
    network: spec.network ?? false,
    checkpoint: spec.checkpoint ?? null,
    verify: spec.verify ?? null,
    buyerKey: spec.encryption?.buyerKey ?? null,
  };
  return sha256Hex(`gpux-e2e-spec-v1\n${canonicalJson(fields)}`);
}

/** Most keys a spec may wrap in advance for named nodes. */
export const MAX_PREWRAPPED_KEYS = 32;

/** spec.encryption: the job is end-to-end encrypted. */
export const JobEncryption = z
  .object({
    buyerKey: X25519PublicKey.describe('Your X25519 public key (gpux keys create): nodes encrypt outputs and logs to it'),
    preWrapped: z
      .array(z.object({ nodeId: z.string().min(1).max(128), wrappedKey: WrappedKey }).strict())
      .max(MAX_PREWRAPPED_KEYS)
      .refine((l) => new Set(l.map((p) => p.nodeId)).size === l.length, { message: 'one pre-wrapped key per node' })
      .optional()
      .describe(`The input data key wrapped in advance for named nodes (at most ${MAX_PREWRAPPED_KEYS}; HPKE context "any-job", "any-attempt" and the spec digest): an attempt of this job on one of them starts without waiting for your client`),
  })
  .strict();
export type JobEncryption = z.infer<typeof JobEncryption>;

/** BlobInputFile.encrypted: the blob is ciphertext (format v1) of a plaintext of this digest and size. */
export const EncryptedPayload = z
  .object({
    sha256: z.string().regex(/^[0-9a-f]{64}$/, 'a sha256 digest: 64 lowercase hex characters').describe('sha256 of the plaintext'),
    size: z.number().int().min(0).describe('Bytes of the plaintext'),
  })
  .strict();
export type EncryptedPayload = z.infer<typeof EncryptedPayload>;

/** POST /v1/jobs/:id/attempts/:attemptId/key (buyer): the input data key wrapped to the attempt's node. */
export const ReleaseKeyRequest = z.object({ wrappedKey: WrappedKey.describe('HPKE to the node\'s encryption key, context: purpose input, the attempt\'s job, the attempt, the key\'s fingerprint, e2eSpecDigest of the spec') }).strict();
export type ReleaseKeyRequest = z.infer<typeof ReleaseKeyRequest>;
export const ReleaseKeyResponse = z.object({
  attemptId: z.string(),
  stored: z.boolean().describe('false: this very key was already released (idempotent)'),
});
export type ReleaseKeyResponse = z.infer<typeof ReleaseKeyResponse>;

/** One attempt waiting for its data key, with what the buyer's client checks before wrapping. */
export const KeyRequest = z.object({
  jobId: z.string().describe('The attempt\'s job: the job itself, or one of its check runs (audit, replica, referee) that reruns it'),
  attemptId: z.string(),
  nodeId: z.string(),
  nodePublicKey: z.string().describe('The node\'s ed25519 identity key; the node id is derived from it (check both)'),
  encryptionKey: NodeEncryptionKey.nullable().describe('null: the node announced no encryption key (it cannot run encrypted jobs; the attempt times out)'),
  waitingSince: z.number().int().describe('When the attempt was assigned (epoch ms)'),
  expiresAt: z.number().int().describe('When the attempt ends unstarted if no key arrives (epoch ms)'),
});
export type KeyRequest = z.infer<typeof KeyRequest>;
export const OutputKeyView = z.object({
  jobId: z.string(),
  attemptId: z.string(),
  nodeId: z.string(),
  wrappedKey: WrappedKey.describe('The attempt\'s output key wrapped to spec.encryption.buyerKey (context: purpose output, job, attempt, the buyer key\'s fingerprint)'),
});
export type OutputKeyView = z.infer<typeof OutputKeyView>;
export const KeyRequestsResponse = z.object({
  jobId: z.string(),
  encrypted: z.boolean(),
  ended: z.boolean().describe('The job is over: no more key requests will come (its check runs may still run: see requests)'),
  requests: z.array(KeyRequest).describe('Attempts waiting for their data key'),
  outputKeys: z.array(OutputKeyView).describe('Output keys the nodes announced, to decrypt outputs and logs'),
});
export type KeyRequestsResponse = z.infer<typeof KeyRequestsResponse>;

/** GET /v1/agent/attempts/:id/key (node): 404 NOT_FOUND until the buyer released it. */
export const AttemptKeyResponse = z.object({
  attemptId: z.string(),
  jobId: z.string(),
  wrappedKey: WrappedKey,
  scope: z.enum(['attempt', 'job']).describe('attempt: wrapped for this attempt (context: jobId, attemptId); job: pre-wrapped in the spec for this node (context: "any-job", "any-attempt"). Both bind e2eSpecDigest of the spec'),
});
export type AttemptKeyResponse = z.infer<typeof AttemptKeyResponse>;

/** POST /v1/agent/attempts/:id/output-key (node): its output key wrapped to the buyer, before any output or log. */
export const OutputKeyRequest = z.object({ wrappedKey: WrappedKey }).strict();
export type OutputKeyRequest = z.infer<typeof OutputKeyRequest>;
export const OutputKeyResponse = z.object({ ok: z.literal(true), stored: z.boolean() });
export type OutputKeyResponse = z.infer<typeof OutputKeyResponse>;
