/**
 * The coordinator's identity (issue 19, TRUST.md layer 2): an ed25519 key whose signature ("seal") is on every
 * order an agent acts on — an assignment, a cancel, a challenge — and on the answer to a registration. An agent
 * pins the key when it enrolls (its fingerprint rides inside the enrollment token, or is given with
 * --coordinator-key) and refuses orders from any other key, so a man in the middle or a look-alike coordinator
 * cannot hand a provider's machine work. Rotation: the current key endorses the next one; agents follow the
 * chain of endorsements from the key they pinned (GET /v1/coordinator/identity).
 *
 * Canonical encoding of an order: "gpux-order-v1\n" + the canonical JSON (sorted keys) of the order with the
 * seal's keyId and expiresAt, UTF-8. Every field is a string, an integer, null or an array of integers.
 */
import { createHash, createPrivateKey, type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';
import { ENROLLMENT_TOKEN_PREFIX } from './access-api.js';
import { canonicalJson } from './commitment.js';
import { publicKeyFromRaw } from './signing.js';

export const Fingerprint = z.string().regex(/^[0-9a-f]{64}$/, 'a key fingerprint: 64 lowercase hex characters (sha256 of the raw ed25519 public key)');
const Signature = z.string().regex(/^[A-Za-z0-9+/]{86}==$/, 'base64 of a 64-byte ed25519 signature');
const PublicKey = z.string().regex(/^[A-Za-z0-9+/]{43}=$/, 'base64 of a 32-byte ed25519 public key');

/** sha256 (hex) of the 32 raw bytes of an ed25519 public key given as base64: the key's id everywhere. */
export function keyFingerprint(publicKeyB64: string): string {
  return createHash('sha256').update(Buffer.from(publicKeyB64, 'base64')).digest('hex');
}

/** The coordinator's signature on one order, and until when the agent may act on it. */
export const Seal = z.object({
  keyId: Fingerprint.describe('Fingerprint of the coordinator key that signed'),
  expiresAt: z.number().int().describe('The agent refuses the order after this instant (its own clock, with MAX_CLOCK_SKEW_MS of slack)'),
  signature: Signature,
});
export type Seal = z.infer<typeof Seal>;

/** How long a seal is good for, per order kind: long enough for redelivery and clock skew, short enough that a replay is useless. */
export const SEAL_TTL_MS = { assignment: 10 * 60_000, cancel: 10 * 60_000, registration: 5 * 60_000 } as const;

/** The orders a coordinator seals. Challenges are sealed until their deadline. */
export type Order =
  | {
      kind: 'assignment';
      attemptId: string;
      jobId: string;
      nodeId: string;
      /** specDigest() of the spec sent with it. */
      specDigest: string;
      gpuIndices: number[];
      leaseExpiresAt: number;
      /** sha256 of the canonical JSON of the gang assignment, or null for a single-node job. */
      gangDigest: string | null;
      /** sha256 of the checkpoint archive to restore (Assignment.checkpoint), or null. */
      checkpoint: string | null;
    }
  | { kind: 'cancel'; attemptId: string; nodeId: string }
  | {
      kind: 'challenge';
      challengeId: string;
      nodeId: string;
      /** sha256 of the canonical JSON of the challenge assignment without its seal. */
      challengeDigest: string;
    }
  | {
      kind: 'registration';
      nodeId: string;
      /** The node's own public key: the answer is bound to this node's registration. */
      nodePublicKey: string;
      serverTime: number;
    };

export const ORDER_DOMAIN = 'gpux-order-v1\n';

/** sha256 (hex) of the canonical JSON of a value: what a seal names for a spec, a gang or a challenge. */
export function canonicalDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value), 'utf8').digest('hex');
}

/** The job spec digest an assignment seal covers: over the spec as parsed by the JobSpec schema (defaults applied). */
export const specDigest = (spec: unknown): string => canonicalDigest(spec);

/**
 * The order of an assignment: the exact fields its seal covers, built the same way by the coordinator (from what
 * it sends) and the agent (from what arrived), so a field changed on the way changes a digest and the seal fails.
 */
export function assignmentOrder(
  a: { attemptId: string; jobId: string; spec: unknown; gpuIndices: number[]; leaseExpiresAt: number; gang?: unknown; checkpoint?: { sha256: string } | undefined },
  nodeId: string,
): Order {
  return {
    kind: 'assignment',
    attemptId: a.attemptId,
    jobId: a.jobId,
    nodeId,
    specDigest: specDigest(a.spec),
    gpuIndices: a.gpuIndices,
    leaseExpiresAt: a.leaseExpiresAt,
    gangDigest: a.gang ? canonicalDigest(a.gang) : null,
    checkpoint: a.checkpoint?.sha256 ?? null,
  };
}

/** The bytes signed for an order under a seal's keyId and expiry. */
export function canonicalOrder(order: Order, seal: Pick<Seal, 'keyId' | 'expiresAt'>): Buffer {
  return Buffer.from(ORDER_DOMAIN + canonicalJson({ ...order, v: 1, keyId: seal.keyId, expiresAt: seal.expiresAt }), 'utf8');
}

/** Seal an order with the coordinator's private key (PEM or KeyObject) whose public key has fingerprint keyId. */
export function sealOrder(order: Order, key: { privateKey: string | KeyObject; keyId: string }, expiresAt: number): Seal {
  const privateKey = typeof key.privateKey === 'string' ? createPrivateKey(key.privateKey) : key.privateKey;
  const signature = sign(null, canonicalOrder(order, { keyId: key.keyId, expiresAt }), privateKey).toString('base64');
  return { keyId: key.keyId, expiresAt, signature };
}

export type SealCheck = { ok: true } | { ok: false; reason: string };

/**
 * Check a seal against the keys the agent trusts (fingerprint → base64 public key). `now` is the agent's clock;
 * `skewMs` of slack on the expiry. Reasons are sentences for logs and the refusal report.
 */
export function checkSeal(order: Order, seal: Seal | undefined, trusted: ReadonlyMap<string, string>, now: number, skewMs = 60_000): SealCheck {
  if (!seal) return { ok: false, reason: `the ${order.kind} is not signed by the coordinator` };
  const publicKey = trusted.get(seal.keyId);
  if (publicKey === undefined) return { ok: false, reason: `the ${order.kind} is signed by key ${seal.keyId.slice(0, 16)}…, which this node does not trust` };
  if (seal.expiresAt + skewMs < now) return { ok: false, reason: `the ${order.kind}'s signature expired at ${new Date(seal.expiresAt).toISOString()}` };
  let good: boolean;
  try {
    good = verify(null, canonicalOrder(order, seal), publicKeyFromRaw(publicKey), Buffer.from(seal.signature, 'base64'));
  } catch {
    good = false;
  }
  return good ? { ok: true } : { ok: false, reason: `the ${order.kind}'s signature does not match its contents (altered on the way?)` };
}

/** One key of the coordinator, endorsed by the key before it (the first key of a chain has no endorsement). */
export const CoordinatorKey = z.object({
  publicKey: PublicKey,
  fingerprint: Fingerprint,
  activeFrom: z.number().int().describe('From this instant the coordinator signs with this key (until a later key is active)'),
  endorsement: z
    .object({ by: Fingerprint.describe('The key that endorsed this one'), signature: Signature })
    .nullable()
    .describe('Signature of the previous key over this key and its activeFrom (endorsementBytes)'),
});
export type CoordinatorKey = z.infer<typeof CoordinatorKey>;

export const CoordinatorIdentityResponse = z.object({
  signingKey: Fingerprint.describe('The key the coordinator signs with now'),
  keys: z.array(CoordinatorKey).min(1).max(16).describe('The endorsement chain, oldest first'),
});
export type CoordinatorIdentityResponse = z.infer<typeof CoordinatorIdentityResponse>;

export const ENDORSEMENT_DOMAIN = 'gpux-key-endorsement-v1\n';
export function endorsementBytes(k: { publicKey: string; activeFrom: number }, by: string): Buffer {
  return Buffer.from(ENDORSEMENT_DOMAIN + canonicalJson({ publicKey: k.publicKey, activeFrom: k.activeFrom, by }), 'utf8');
}

/**
 * The keys an agent may trust, starting from the ones it pinned and following endorsements along the chain:
 * a key joins only when a key already trusted signed it. Returns fingerprint → public key.
 */
export function trustedKeys(pinned: ReadonlyMap<string, string>, chain: readonly CoordinatorKey[]): Map<string, string> {
  const trusted = new Map(pinned);
  let grew = true;
  while (grew) {
    grew = false;
    for (const k of chain) {
      if (trusted.has(k.fingerprint) || !k.endorsement || keyFingerprint(k.publicKey) !== k.fingerprint) continue;
      const by = trusted.get(k.endorsement.by);
      if (by === undefined) continue;
      let good = false;
      try {
        good = verify(null, endorsementBytes(k, k.endorsement.by), publicKeyFromRaw(by), Buffer.from(k.endorsement.signature, 'base64'));
      } catch {
        good = false;
      }
      if (good) {
        trusted.set(k.fingerprint, k.publicKey);
        grew = true;
      }
    }
  }
  return trusted;
}

/**
 * Enrollment tokens may carry the fingerprint of the coordinator's key after a dot:
 * `gpux_enroll_<secret>.<fingerprint>`. The whole string is the credential (its sha256 is stored), so the
 * fingerprint cannot be swapped without invalidating the token. Old tokens without one still register; the
 * agent then pins the key it first sees (trust on first use) and says so.
 */
export function enrollmentTokenFingerprint(token: string): string | undefined {
  if (!token.startsWith(ENROLLMENT_TOKEN_PREFIX)) return undefined;
  const dot = token.lastIndexOf('.');
  if (dot < 0) return undefined;
  const fp = token.slice(dot + 1);
  return Fingerprint.safeParse(fp).success ? fp : undefined;
}
export function withFingerprint(token: string, fingerprint: string): string {
  return `${token}.${fingerprint}`;
}

/** An agent refuses an order it cannot verify and tells the coordinator (POST /v1/agent/attempts/:id/refuse). */
export const RefuseAttemptRequest = z.object({ reason: z.string().min(1).max(512).describe('Why the node refused the assignment, e.g. its signature did not verify') }).strict();
export type RefuseAttemptRequest = z.infer<typeof RefuseAttemptRequest>;
export const RefuseAttemptResponse = z.object({ ok: z.literal(true), ended: z.boolean().describe('The attempt was still assigned and has been ended (the job goes back to the queue)') });
export type RefuseAttemptResponse = z.infer<typeof RefuseAttemptResponse>;

/** A cancel the agent acts on only when its seal verifies. */
export const SealedCancel = z.object({ attemptId: z.string(), seal: Seal.optional() });
export type SealedCancel = z.infer<typeof SealedCancel>;
