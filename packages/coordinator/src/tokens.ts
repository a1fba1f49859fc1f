/**
 * Credentials: bearer tokens (`gpux_` + 32 random bytes, base64url) and node enrollment tokens
 * (`gpux_enroll_` + 32 random bytes), which only register nodes. Only their sha256 is stored.
 */
import { createHash } from 'node:crypto';
import { type Clock, type EnrollmentRecord, newId, type Random, type Role, type Store } from '@gpux/core';
import { ENROLLMENT_TOKEN_PREFIX, withFingerprint } from '@gpux/protocol';

export const TOKEN_PREFIX = 'gpux_';
export { ENROLLMENT_TOKEN_PREFIX };

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Create a token for a new account. The secret is returned once and never stored. */
export async function issueToken(
  store: Store,
  opts: { role: Role; name: string; expiresInSeconds?: number },
  clock: Clock,
  random: Random,
): Promise<{ token: string; id: string; accountId: string; expiresAt: number | null }> {
  const now = clock.now();
  const token = TOKEN_PREFIX + Buffer.from(random.bytes(32)).toString('base64url');
  const id = newId('tok', now, random);
  const accountId = newId('acct', now, random);
  const expiresAt = opts.expiresInSeconds === undefined ? null : now + opts.expiresInSeconds * 1000;
  await store.createToken({ id, hash: hashToken(token), role: opts.role, accountId, name: opts.name, createdAt: now, expiresAt, revokedAt: null });
  return { token, id, accountId, expiresAt };
}

/**
 * Create an enrollment token for `accountId`'s nodes. The secret is returned once and never stored. With
 * `fingerprint` (the coordinator's signing key) the token ends in `.<fingerprint>` and the agent pins that key
 * (issue 19); the whole string is hashed, so the fingerprint cannot be swapped.
 */
export async function issueEnrollment(
  store: Store,
  opts: { accountId: string; name: string; expiresInSeconds?: number; maxNodes?: number; fingerprint?: string },
  clock: Clock,
  random: Random,
): Promise<{ token: string; enrollment: EnrollmentRecord }> {
  const now = clock.now();
  const secret = ENROLLMENT_TOKEN_PREFIX + Buffer.from(random.bytes(32)).toString('base64url');
  const token = opts.fingerprint === undefined ? secret : withFingerprint(secret, opts.fingerprint);
  const enrollment: EnrollmentRecord = {
    id: newId('enr', now, random),
    hash: hashToken(token),
    accountId: opts.accountId,
    name: opts.name,
    createdAt: now,
    expiresAt: opts.expiresInSeconds === undefined ? null : now + opts.expiresInSeconds * 1000,
    revokedAt: null,
    maxNodes: opts.maxNodes ?? null,
  };
  await store.createEnrollment(enrollment);
  return { token, enrollment };
}

/** Why a credential no longer works, or undefined while it does. */
export function credentialDead(c: { id: string; expiresAt?: number | null; revokedAt?: number | null }, now: number, what: string): string | undefined {
  if (c.revokedAt !== null && c.revokedAt !== undefined) return `${what} ${c.id} was revoked at ${new Date(c.revokedAt).toISOString()}`;
  if (c.expiresAt !== null && c.expiresAt !== undefined && c.expiresAt <= now) return `${what} ${c.id} expired at ${new Date(c.expiresAt).toISOString()}`;
  return undefined;
}
