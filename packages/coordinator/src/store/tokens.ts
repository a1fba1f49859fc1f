/** API tokens (only their hashes are stored). */
import { GpuxError, type Page, type Role, type TokenRecord } from '@gpux/core';
import type { StoreContext } from './context.js';
import { afterId, pageById } from './cursor.js';
import { tokenFromRow } from './rows.js';

/** SQLite and PostgreSQL spellings of a unique-constraint violation. */
export function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

export async function createToken(ctx: StoreContext, t: TokenRecord): Promise<void> {
  try {
    await ctx.db
      .insertInto('tokens')
      .values({ id: t.id, hash: t.hash, role: t.role, account_id: t.accountId, name: t.name, created_at: t.createdAt, expires_at: t.expiresAt ?? null, revoked_at: t.revokedAt ?? null })
      .execute();
  } catch (err) {
    if (isUniqueViolation(err)) throw new GpuxError('CONFLICT', `a token with id ${t.id} or the same hash already exists`, { cause: err });
    throw err;
  }
}

export async function findTokenByHash(ctx: StoreContext, hash: string): Promise<TokenRecord | undefined> {
  const row = await ctx.db.selectFrom('tokens').selectAll().where('hash', '=', hash).executeTakeFirst();
  return row && tokenFromRow(row);
}

export async function countTokens(ctx: StoreContext, role?: Role): Promise<number> {
  const row = await ctx.db
    .selectFrom('tokens')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .$if(role !== undefined, (qb) => qb.where('role', '=', role as Role))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function getToken(ctx: StoreContext, id: string): Promise<TokenRecord | undefined> {
  const row = await ctx.db.selectFrom('tokens').selectAll().where('id', '=', id).executeTakeFirst();
  return row && tokenFromRow(row);
}

export async function listTokens(ctx: StoreContext, q: { accountId?: string; limit: number; cursor?: string }): Promise<Page<TokenRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('tokens').selectAll();
  if (q.accountId !== undefined) qb = qb.where('account_id', '=', q.accountId);
  const after = afterId(q.cursor);
  if (after !== undefined) qb = qb.where('id', '>', after);
  const rows = await qb
    .orderBy('id')
    .limit(limit + 1)
    .execute();
  return pageById(rows, limit, tokenFromRow);
}

/** The first revocation's time is kept, so revoking twice is harmless. */
export async function revokeToken(ctx: StoreContext, id: string, now: number): Promise<TokenRecord | undefined> {
  await ctx.db.updateTable('tokens').set({ revoked_at: now }).where('id', '=', id).where('revoked_at', 'is', null).execute();
  return getToken(ctx, id);
}
