/** The e2e-keys port (core store/e2e-keys.ts) on Kysely: migration 0018's node_encryption_keys and attempt_keys. */
import { type AttemptKeyRecord, GpuxError, type KeyWaitingAttempt, type NodeEncryptionKeyRecord } from '@gpux/core';
import { sql } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import type { AttemptKeysTable } from './e2e-key-schema.js';

const keyFromRow = (r: AttemptKeysTable): AttemptKeyRecord => ({
  attemptId: r.attempt_id,
  jobId: r.job_id,
  nodeId: r.node_id,
  dataKey: r.data_key,
  dataScope: r.data_scope === 'job' ? 'job' : r.data_scope === 'attempt' ? 'attempt' : null,
  releasedAt: r.released_at === null ? null : Number(r.released_at),
  outputKey: r.output_key,
  outputKeyAt: r.output_key_at === null ? null : Number(r.output_key_at),
});

export async function setNodeEncryptionKey(ctx: StoreContext, k: NodeEncryptionKeyRecord): Promise<void> {
  await ctx.db
    .insertInto('node_encryption_keys')
    .values({ node_id: k.nodeId, public_key: k.publicKey, signature: k.signature, updated_at: k.updatedAt })
    .onConflict((oc) => oc.column('node_id').doUpdateSet({ public_key: k.publicKey, signature: k.signature, updated_at: k.updatedAt }))
    .execute();
}

export async function nodeEncryptionKeys(ctx: StoreContext, nodeIds: readonly string[]): Promise<Map<string, NodeEncryptionKeyRecord>> {
  const out = new Map<string, NodeEncryptionKeyRecord>();
  if (nodeIds.length === 0) return out;
  const rows = await ctx.db.selectFrom('node_encryption_keys').selectAll().where('node_id', 'in', [...new Set(nodeIds)]).execute();
  for (const r of rows) out.set(r.node_id, { nodeId: r.node_id, publicKey: r.public_key, signature: r.signature, updatedAt: Number(r.updated_at) });
  return out;
}

/** First key wins (the row is made if missing, then the column set only while empty); the same key again is idempotent. */
async function setOnce(
  ctx: StoreContext,
  q: { attemptId: string; jobId: string; nodeId: string; wrappedKey: string },
  column: 'data_key' | 'output_key',
  set: Partial<AttemptKeysTable>,
  what: string,
): Promise<{ stored: boolean }> {
  return inTx(ctx, async (trx) => {
    await trx
      .insertInto('attempt_keys')
      .values({ attempt_id: q.attemptId, job_id: q.jobId, node_id: q.nodeId, data_key: null, data_scope: null, released_at: null, output_key: null, output_key_at: null })
      .onConflict((oc) => oc.column('attempt_id').doNothing())
      .execute();
    const res = await trx.updateTable('attempt_keys').set(set).where('attempt_id', '=', q.attemptId).where(column, 'is', null).executeTakeFirst();
    if (Number(res.numUpdatedRows) === 1) return { stored: true };
    const row = await trx.selectFrom('attempt_keys').select(column).where('attempt_id', '=', q.attemptId).executeTakeFirstOrThrow();
    if (row[column] === q.wrappedKey) return { stored: false };
    throw new GpuxError('CONFLICT', `attempt ${q.attemptId} already has another ${what}: one attempt gets one key (a new attempt gets its own)`);
  });
}

export function releaseDataKey(
  ctx: StoreContext,
  q: { attemptId: string; jobId: string; nodeId: string; wrappedKey: string; scope: 'attempt' | 'job'; now: number },
): Promise<{ stored: boolean }> {
  return setOnce(ctx, q, 'data_key', { data_key: q.wrappedKey, data_scope: q.scope, released_at: q.now }, 'data key');
}

export function setOutputKey(ctx: StoreContext, q: { attemptId: string; jobId: string; nodeId: string; wrappedKey: string; now: number }): Promise<{ stored: boolean }> {
  return setOnce(ctx, q, 'output_key', { output_key: q.wrappedKey, output_key_at: q.now }, 'output key');
}

export async function attemptKeys(ctx: StoreContext, attemptIds: readonly string[]): Promise<Map<string, AttemptKeyRecord>> {
  if (attemptIds.length === 0) return new Map();
  const rows = await ctx.db.selectFrom('attempt_keys').selectAll().where('attempt_id', 'in', [...new Set(attemptIds)]).execute();
  return new Map(rows.map((r) => [r.attempt_id, keyFromRow(r)]));
}

export async function attemptKeysOfJobs(ctx: StoreContext, jobIds: readonly string[]): Promise<AttemptKeyRecord[]> {
  if (jobIds.length === 0) return [];
  const rows = await ctx.db.selectFrom('attempt_keys').selectAll().where('job_id', 'in', [...new Set(jobIds)]).orderBy('attempt_id').execute();
  return rows.map(keyFromRow);
}

/**
 * Assigned attempts without a data key, of jobs whose stored spec has an `encryption` member (JSON.stringify
 * writes it as `"encryption":{`, which no escaped string value can contain), oldest first.
 */
export async function keyWaitingAttempts(ctx: StoreContext, before: number, limit: number): Promise<KeyWaitingAttempt[]> {
  const rows = await ctx.db
    .selectFrom('attempts as a')
    .innerJoin('jobs as j', 'j.id', 'a.job_id')
    .leftJoin('attempt_keys as k', 'k.attempt_id', 'a.id')
    .select(['a.id', 'a.job_id', 'a.node_id', 'a.created_at'])
    .where('a.state', '=', 'assigned')
    .where('a.created_at', '<', before)
    .where((eb) => eb.or([eb('k.data_key', 'is', null), eb('k.attempt_id', 'is', null)]))
    .where(sql<boolean>`j.spec like ${'%"encryption":{%'}`)
    .orderBy('a.created_at')
    .limit(Math.max(0, Math.floor(limit)))
    .execute();
  return rows.map((r) => ({ attemptId: r.id, jobId: r.job_id, nodeId: r.node_id, createdAt: Number(r.created_at) }));
}
