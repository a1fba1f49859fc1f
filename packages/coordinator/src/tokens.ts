/** Bearer tokens: `gpux_` + 32 random bytes (base64url); only their sha256 is stored. */
import { createHash } from 'node:crypto';
import { type Clock, newId, type Random, type Role, type Store } from '@gpux/core';

export const TOKEN_PREFIX = 'gpux_';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** Create a token for a new account. The secret is returned once and never stored. */
export async function issueToken(
  store: Store,
  opts: { role: Role; name: string },
  clock: Clock,
  random: Random,
): Promise<{ token: string; id: string; accountId: string }> {
  const now = clock.now();
  const token = TOKEN_PREFIX + Buffer.from(random.bytes(32)).toString('base64url');
  const id = newId('tok', now, random);
  const accountId = newId('acct', now, random);
  await store.createToken({ id, hash: hashToken(token), role: opts.role, accountId, name: opts.name, createdAt: now });
  return { token, id, accountId };
}
