/** The blobs port (core store/blobs.ts): account holds on blobs and resumable uploads, with the quota checked in the write. */
import { type BeginBlobUploadInput, type BlobRecord, type BlobUploadRecord, type BlobUsage, GpuxError, type Page } from '@gpux/core';
import { type Kysely, sql } from 'kysely';
import type { BlobsTable, BlobUploadsTable } from './blob-schema.js';
import { type StoreContext, inTx } from './context.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import type { Database } from './schema.js';

/** Names gpux's per-account blob lock among PostgreSQL advisory locks (jobs use 7007). */
const PG_BLOB_LOCK = 7016;

const blobFromRow = (r: BlobsTable): BlobRecord => ({ sha256: r.sha256, ownerId: r.owner_id, size: Number(r.size), createdAt: Number(r.created_at), lastReferencedAt: Number(r.last_referenced_at) });

const uploadFromRow = (r: BlobUploadsTable): BlobUploadRecord => ({
  id: r.id,
  ownerId: r.owner_id,
  sha256: r.sha256,
  size: Number(r.size),
  received: Number(r.received),
  createdAt: Number(r.created_at),
  expiresAt: Number(r.expires_at),
});

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

async function usageIn(db: Kysely<Database>, ownerId: string): Promise<BlobUsage> {
  const blobs = await db
    .selectFrom('blobs')
    .select(sql<number | string | null>`sum(size)`.as('bytes'))
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  const uploads = await db
    .selectFrom('blob_uploads')
    .select([sql<number | string | null>`sum(size)`.as('bytes'), (eb) => eb.fn.countAll<number | string>().as('n')])
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  return { blobBytes: Number(blobs.bytes ?? 0), reservedBytes: Number(uploads.bytes ?? 0), openUploads: Number(uploads.n) };
}

export function blobUsage(ctx: StoreContext, ownerId: string): Promise<BlobUsage> {
  return usageIn(ctx.db, ownerId);
}

export function beginBlobUpload(ctx: StoreContext, q: BeginBlobUploadInput): Promise<{ upload: BlobUploadRecord } | { blob: BlobRecord }> {
  const u = q.upload;
  return inTx(ctx, async (trx) => {
    // One begin per account at a time on PostgreSQL (SQLite's write transaction is already exclusive), so two
    // concurrent begins cannot both fit under the quota.
    if (ctx.q.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${sql.lit(PG_BLOB_LOCK)}, hashtext(${u.ownerId}))`.execute(trx);
    const held = await trx.selectFrom('blobs').selectAll().where('owner_id', '=', u.ownerId).where('sha256', '=', u.sha256).executeTakeFirst();
    if (held) {
      await trx.updateTable('blobs').set({ last_referenced_at: u.createdAt }).where('owner_id', '=', u.ownerId).where('sha256', '=', u.sha256).execute();
      return { blob: { ...blobFromRow(held), lastReferencedAt: u.createdAt } };
    }
    const usage = await usageIn(trx, u.ownerId);
    if (usage.openUploads >= q.maxOpenUploads) {
      throw new GpuxError(
        'LIMIT_EXCEEDED',
        `account ${u.ownerId} has ${usage.openUploads} open uploads, the most allowed: finish or abort one (unfinished uploads expire by themselves)`,
      );
    }
    const used = usage.blobBytes + usage.reservedBytes;
    if (used + u.size > q.quotaBytes) {
      throw new GpuxError(
        'LIMIT_EXCEEDED',
        `blob quota exceeded: account ${u.ownerId} uses ${mib(used)} of its ${mib(q.quotaBytes)} (${mib(usage.blobBytes)} in blobs, ${mib(usage.reservedBytes)} reserved by ${usage.openUploads} open uploads) and this upload needs ${mib(u.size)}: free some with \`gpux blob rm SHA256\` (see \`gpux blob ls\`) or ask an operator for a larger GPUX_BLOB_QUOTA_BYTES`,
      );
    }
    await trx
      .insertInto('blob_uploads')
      .values({ id: u.id, owner_id: u.ownerId, sha256: u.sha256, size: u.size, received: u.received, created_at: u.createdAt, expires_at: u.expiresAt })
      .execute();
    return { upload: u };
  });
}

export async function getBlobUpload(ctx: StoreContext, id: string): Promise<BlobUploadRecord | undefined> {
  const row = await ctx.db.selectFrom('blob_uploads').selectAll().where('id', '=', id).executeTakeFirst();
  return row && uploadFromRow(row);
}

export async function recordBlobUploadProgress(ctx: StoreContext, id: string, received: number, expiresAt: number): Promise<void> {
  await ctx.db
    .updateTable('blob_uploads')
    .set((eb) => ({
      received: sql<number>`case when ${eb.ref('received')} < ${received} then ${received} else ${eb.ref('received')} end`,
      expires_at: sql<number>`case when ${eb.ref('expires_at')} < ${expiresAt} then ${expiresAt} else ${eb.ref('expires_at')} end`,
    }))
    .where('id', '=', id)
    .execute();
}

export function finishBlobUpload(ctx: StoreContext, id: string, now: number): Promise<BlobRecord | undefined> {
  return inTx(ctx, async (trx) => {
    const up = await trx.selectFrom('blob_uploads').selectAll().where('id', '=', id).executeTakeFirst();
    if (!up) return undefined;
    await trx.deleteFrom('blob_uploads').where('id', '=', id).execute();
    const row: BlobsTable = { owner_id: up.owner_id, sha256: up.sha256, size: Number(up.size), created_at: now, last_referenced_at: now };
    await trx
      .insertInto('blobs')
      .values(row)
      .onConflict((oc) => oc.columns(['owner_id', 'sha256']).doUpdateSet({ last_referenced_at: now }))
      .execute();
    const stored = await trx.selectFrom('blobs').selectAll().where('owner_id', '=', up.owner_id).where('sha256', '=', up.sha256).executeTakeFirstOrThrow();
    return blobFromRow(stored);
  });
}

export async function deleteBlobUpload(ctx: StoreContext, id: string): Promise<void> {
  await ctx.db.deleteFrom('blob_uploads').where('id', '=', id).execute();
}

export async function getBlob(ctx: StoreContext, ownerId: string, sha256: string): Promise<BlobRecord | undefined> {
  const row = await ctx.db.selectFrom('blobs').selectAll().where('owner_id', '=', ownerId).where('sha256', '=', sha256).executeTakeFirst();
  return row && blobFromRow(row);
}

export async function touchBlob(ctx: StoreContext, ownerId: string, sha256: string, now: number): Promise<void> {
  await ctx.db.updateTable('blobs').set({ last_referenced_at: now }).where('owner_id', '=', ownerId).where('sha256', '=', sha256).where('last_referenced_at', '<', now).execute();
}

export async function listBlobs(ctx: StoreContext, q: { ownerId: string; limit: number; cursor?: string }): Promise<Page<BlobRecord>> {
  const limit = Math.max(1, Math.floor(q.limit));
  let qb = ctx.db.selectFrom('blobs').selectAll().where('owner_id', '=', q.ownerId);
  if (q.cursor) qb = qb.where('sha256', '>', decodeCursor(q.cursor, ['string'] as const)[0]);
  const rows = await qb
    .orderBy('sha256')
    .limit(limit + 1)
    .execute();
  const items = rows.slice(0, limit).map(blobFromRow);
  const last = items[items.length - 1];
  return { items, nextCursor: rows.length > limit && last ? encodeCursor([last.sha256]) : null };
}

export async function deleteBlob(ctx: StoreContext, ownerId: string, sha256: string, opts: { unreferencedSince?: number } = {}): Promise<boolean> {
  let qb = ctx.db.deleteFrom('blobs').where('owner_id', '=', ownerId).where('sha256', '=', sha256);
  if (opts.unreferencedSince !== undefined) qb = qb.where('last_referenced_at', '<', opts.unreferencedSince);
  const res = await qb.executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function staleBlobs(ctx: StoreContext, before: number, limit: number): Promise<BlobRecord[]> {
  const rows = await ctx.db.selectFrom('blobs').selectAll().where('last_referenced_at', '<', before).orderBy('last_referenced_at').limit(limit).execute();
  return rows.map(blobFromRow);
}

export async function expiredBlobUploads(ctx: StoreContext, now: number, limit: number): Promise<BlobUploadRecord[]> {
  const rows = await ctx.db.selectFrom('blob_uploads').selectAll().where('expires_at', '<=', now).orderBy('expires_at').limit(limit).execute();
  return rows.map(uploadFromRow);
}

export async function blobsInUse(ctx: StoreContext, sha256s: readonly string[]): Promise<Set<string>> {
  if (sha256s.length === 0) return new Set();
  const list = [...sha256s];
  const held = await ctx.db.selectFrom('blobs').select('sha256').distinct().where('sha256', 'in', list).execute();
  const uploading = await ctx.db.selectFrom('blob_uploads').select('sha256').distinct().where('sha256', 'in', list).execute();
  return new Set([...held, ...uploading].map((r) => r.sha256));
}
