/**
 * The job-blobs port (core store/job-blobs.ts): blobs jobs reference (job_blobs) and the uploads nodes open for
 * their attempts (agent_uploads beside the buyer-owned blob_uploads row). Migration 0017.
 */
import {
  type AgentUploadRecord,
  type BeginAgentUploadInput,
  type BlobRecord,
  type CheckpointRecord,
  GpuxError,
  type JobBlobRefPolicy,
  type NewJob,
} from '@gpux/core';
import { isBlobInput, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { type Kysely, sql } from 'kysely';
import type { BlobsTable } from './blob-schema.js';
import { chunks, inTx, type StoreContext } from './context.js';
import type { AgentUploadsTable } from './job-blob-schema.js';
import type { Database } from './schema.js';

/** Names gpux's per-attempt upload lock among PostgreSQL advisory locks (jobs use 7007, blobs 7016). */
const PG_ATTEMPT_UPLOAD_LOCK = 7017;

const blobFromRow = (r: BlobsTable): BlobRecord => ({ sha256: r.sha256, ownerId: r.owner_id, size: Number(r.size), createdAt: Number(r.created_at), lastReferencedAt: Number(r.last_referenced_at) });

const uploadFromRow = (r: AgentUploadsTable): AgentUploadRecord => ({
  uploadId: r.upload_id,
  attemptId: r.attempt_id,
  jobId: r.job_id,
  ownerId: r.owner_id,
  kind: r.kind === 'checkpoint' ? 'checkpoint' : 'output',
  path: r.path,
  sha256: r.sha256,
  size: Number(r.size),
  tokenHash: r.token_hash,
  createdAt: Number(r.created_at),
  completedAt: r.completed_at === null ? null : Number(r.completed_at),
});

const gib = (n: number) => `${(n / 2 ** 30).toFixed(2)} GiB`;

/**
 * In the submit transaction: every blob input must name a blob the buyer holds, with the size the input says;
 * else SPEC_INVALID naming the input (someone else's blob reads as not held), and the job's insert rolls back.
 * Then the job references its inputs (role 'input'), and their holds count as used now.
 */
export async function insertJobInputBlobsIn(trx: Kysely<Database>, job: NewJob): Promise<void> {
  const inputs = (job.spec.inputs ?? []).map((f, i) => ({ f, i })).filter((x) => isBlobInput(x.f));
  if (inputs.length === 0) return;
  const wanted = [...new Set(inputs.map((x) => (isBlobInput(x.f) ? x.f.blob : '')))];
  const held = new Map((await trx.selectFrom('blobs').selectAll().where('owner_id', '=', job.buyerId).where('sha256', 'in', wanted).execute()).map((r) => [r.sha256, Number(r.size)]));
  const problems: Array<{ path: string; message: string }> = [];
  for (const { f, i } of inputs) {
    if (!isBlobInput(f)) continue;
    const size = held.get(f.blob);
    if (size === undefined) problems.push({ path: `inputs.${i}.blob`, message: `you hold no blob ${f.blob} (for ${f.path}): upload it with \`gpux blob put FILE\` (unused blobs expire; see \`gpux blob ls\`)` });
    else if (size !== f.size) problems.push({ path: `inputs.${i}.size`, message: `blob ${f.blob} (for ${f.path}) has ${size} bytes, not ${f.size}: set size to ${size}, or name the blob you meant` });
  }
  if (problems.length > 0) {
    throw new GpuxError('SPEC_INVALID', `the job spec has ${problems.length} blob input problem${problems.length === 1 ? '' : 's'}: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, { problems });
  }
  const rows = wanted.map((sha256) => ({ job_id: job.id, role: 'input', sha256, owner_id: job.buyerId, size: held.get(sha256) ?? 0, attempt_id: null, created_at: job.now }));
  await trx.insertInto('job_blobs').values(rows).onConflict((oc) => oc.columns(['job_id', 'role', 'sha256']).doNothing()).execute();
  await trx.updateTable('blobs').set({ last_referenced_at: job.now }).where('owner_id', '=', job.buyerId).where('sha256', 'in', wanted).where('last_referenced_at', '<', job.now).execute();
}

/** The hold of `ownerId` on the blob, made or refreshed (lastReferencedAt = now). */
async function holdIn(trx: Kysely<Database>, ownerId: string, sha256: string, size: number, now: number): Promise<BlobRecord> {
  await trx
    .insertInto('blobs')
    .values({ owner_id: ownerId, sha256, size, created_at: now, last_referenced_at: now })
    .onConflict((oc) => oc.columns(['owner_id', 'sha256']).doUpdateSet({ last_referenced_at: now }))
    .execute();
  return blobFromRow(await trx.selectFrom('blobs').selectAll().where('owner_id', '=', ownerId).where('sha256', '=', sha256).executeTakeFirstOrThrow());
}

/** The upload is complete: its token dies, and the job references the blob (an output, or its latest checkpoint). */
async function completeIn(trx: Kysely<Database>, u: AgentUploadRecord, now: number): Promise<void> {
  await trx.updateTable('agent_uploads').set({ completed_at: now, token_hash: null }).where('upload_id', '=', u.uploadId).execute();
  const row = { job_id: u.jobId, role: u.kind, sha256: u.sha256, owner_id: u.ownerId, size: u.size, attempt_id: u.attemptId, created_at: now };
  // Only the latest checkpoint stays referenced: the older one's hold expires by retention.
  if (u.kind === 'checkpoint') await trx.deleteFrom('job_blobs').where('job_id', '=', u.jobId).where('role', '=', 'checkpoint').execute();
  await trx
    .insertInto('job_blobs')
    .values(row)
    .onConflict((oc) => oc.columns(['job_id', 'role', 'sha256']).doUpdateSet({ attempt_id: u.attemptId, created_at: now }))
    .execute();
}

export function beginAgentUpload(ctx: StoreContext, q: BeginAgentUploadInput): Promise<{ upload: AgentUploadRecord } | { upload: AgentUploadRecord; blob: BlobRecord }> {
  const u = q.upload;
  return inTx(ctx, async (trx) => {
    // One begin per attempt at a time on PostgreSQL, so concurrent begins cannot both fit under the bounds.
    if (ctx.q.dialect === 'postgres') await sql`select pg_advisory_xact_lock(${sql.lit(PG_ATTEMPT_UPLOAD_LOCK)}, hashtext(${q.attemptId}))`.execute(trx);
    const mine = await trx
      .selectFrom('agent_uploads')
      .leftJoin('blob_uploads', 'blob_uploads.id', 'agent_uploads.upload_id')
      .select(['agent_uploads.kind', 'agent_uploads.size', 'agent_uploads.completed_at', 'blob_uploads.id as open_id'])
      .where('agent_uploads.attempt_id', '=', q.attemptId)
      .execute();
    if (mine.length >= q.maxUploads) {
      throw new GpuxError('LIMIT_EXCEEDED', `attempt ${q.attemptId} opened ${mine.length} uploads, the most one attempt may (GPUX_MAX_UPLOADS_PER_ATTEMPT): fewer, larger outputs (a tar), or checkpoints less often`);
    }
    const open = mine.filter((m) => m.completed_at === null && m.open_id !== null).length;
    if (open >= q.maxOpenUploads) {
      throw new GpuxError('LIMIT_EXCEEDED', `attempt ${q.attemptId} has ${open} unfinished uploads, the most at once: finish one first (unfinished uploads expire by themselves)`);
    }
    if (q.kind === 'output') {
      // Declared bytes of live output uploads (complete, or still open): an expired one no longer counts.
      const used = mine.filter((m) => m.kind === 'output' && (m.completed_at !== null || m.open_id !== null)).reduce((n, m) => n + Number(m.size), 0);
      if (used + u.size > q.maxOutputBytes) {
        throw new GpuxError(
          'LIMIT_EXCEEDED',
          `attempt ${q.attemptId} would upload ${gib(used + u.size)} of outputs (${gib(used)} declared before this ${gib(u.size)}), more than the ${gib(q.maxOutputBytes)} one attempt may (GPUX_MAX_OUTPUT_BYTES)`,
        );
      }
    } else if (u.size > q.maxOutputBytes) {
      throw new GpuxError('LIMIT_EXCEEDED', `a checkpoint of ${gib(u.size)} is more than the ${gib(q.maxOutputBytes)} one upload may be (GPUX_MAX_OUTPUT_BYTES)`);
    }
    const record: AgentUploadRecord = {
      uploadId: u.id,
      attemptId: q.attemptId,
      jobId: q.jobId,
      ownerId: u.ownerId,
      kind: q.kind,
      path: q.path,
      sha256: u.sha256,
      size: u.size,
      tokenHash: q.tokenHash,
      createdAt: u.createdAt,
      completedAt: null,
    };
    await trx
      .insertInto('agent_uploads')
      .values({
        upload_id: record.uploadId,
        attempt_id: record.attemptId,
        job_id: record.jobId,
        owner_id: record.ownerId,
        kind: record.kind,
        path: record.path,
        sha256: record.sha256,
        size: record.size,
        token_hash: record.tokenHash,
        created_at: record.createdAt,
        completed_at: null,
      })
      .execute();
    const held = await trx.selectFrom('blobs').selectAll().where('owner_id', '=', u.ownerId).where('sha256', '=', u.sha256).executeTakeFirst();
    if (held && Number(held.size) === u.size) {
      // The buyer has these bytes already: nothing to upload.
      await completeIn(trx, record, u.createdAt);
      const blob = await holdIn(trx, u.ownerId, u.sha256, u.size, u.createdAt);
      return { upload: { ...record, tokenHash: null, completedAt: u.createdAt }, blob };
    }
    await trx
      .insertInto('blob_uploads')
      .values({ id: u.id, owner_id: u.ownerId, sha256: u.sha256, size: u.size, received: 0, created_at: u.createdAt, expires_at: u.expiresAt })
      .execute();
    return { upload: record };
  });
}

export async function getAgentUpload(ctx: StoreContext, uploadId: string): Promise<AgentUploadRecord | undefined> {
  const row = await ctx.db.selectFrom('agent_uploads').selectAll().where('upload_id', '=', uploadId).executeTakeFirst();
  return row && uploadFromRow(row);
}

export function finishAgentUpload(ctx: StoreContext, uploadId: string, now: number): Promise<BlobRecord | undefined> {
  return inTx(ctx, async (trx) => {
    const row = await trx.selectFrom('agent_uploads').selectAll().where('upload_id', '=', uploadId).executeTakeFirst();
    const up = await trx.selectFrom('blob_uploads').selectAll().where('id', '=', uploadId).executeTakeFirst();
    if (!row || !up || row.completed_at !== null) return undefined;
    await trx.deleteFrom('blob_uploads').where('id', '=', uploadId).execute();
    const u = uploadFromRow(row);
    await completeIn(trx, u, now);
    return holdIn(trx, u.ownerId, u.sha256, u.size, now);
  });
}

export async function completedOutputUploads(ctx: StoreContext, attemptId: string): Promise<Array<{ path: string; sha256: string; size: number }>> {
  const rows = await ctx.db
    .selectFrom('agent_uploads')
    .select(['path', 'sha256', 'size'])
    .where('attempt_id', '=', attemptId)
    .where('kind', '=', 'output')
    .where('completed_at', 'is not', null)
    .execute();
  return rows.map((r) => ({ path: r.path ?? '', sha256: r.sha256, size: Number(r.size) }));
}

export async function latestCheckpoints(ctx: StoreContext, jobIds: readonly string[]): Promise<Map<string, CheckpointRecord>> {
  const out = new Map<string, CheckpointRecord>();
  for (const part of chunks([...new Set(jobIds)], 1, ctx.q)) {
    const rows = await ctx.db.selectFrom('job_blobs').selectAll().where('job_id', 'in', part).where('role', '=', 'checkpoint').execute();
    for (const r of rows) out.set(r.job_id, { jobId: r.job_id, attemptId: r.attempt_id ?? '', sha256: r.sha256, size: Number(r.size), createdAt: Number(r.created_at) });
  }
  return out;
}

export async function grantBlobHolds(ctx: StoreContext, ownerId: string, blobs: ReadonlyArray<{ sha256: string; size: number }>, now: number): Promise<void> {
  if (blobs.length === 0) return;
  await inTx(ctx, async (trx) => {
    for (const b of blobs) await holdIn(trx, ownerId, b.sha256, b.size, now);
  });
}

/** One indexed read (job_blobs by sha256, joined to its job) per chunk of holds. */
export async function referencedBlobHolds(ctx: StoreContext, holds: readonly BlobRecord[], now: number, policy: JobBlobRefPolicy): Promise<Set<string>> {
  const asked = new Set(holds.map((h) => `${h.ownerId}/${h.sha256}`));
  const out = new Set<string>();
  for (const part of chunks([...new Set(holds.map((h) => h.sha256))], 1, ctx.q)) {
    const rows = await ctx.db
      .selectFrom('job_blobs')
      .innerJoin('jobs', 'jobs.id', 'job_blobs.job_id')
      .select(['job_blobs.owner_id', 'job_blobs.sha256'])
      .where('job_blobs.sha256', 'in', part)
      .where((eb) =>
        eb.or([
          eb('jobs.state', 'not in', [...TERMINAL_JOB_STATES]),
          eb.and([
            eb('job_blobs.role', '=', 'input'),
            eb(sql<number>`coalesce(${eb.ref('jobs.finished_at')}, ${eb.ref('jobs.updated_at')}) + coalesce(${eb.ref('jobs.verify_window_ms')}, ${policy.disputeWindowMs})`, '>', now),
          ]),
          eb.and([eb('job_blobs.role', '=', 'output'), eb(sql<number>`coalesce(${eb.ref('jobs.finished_at')}, ${eb.ref('jobs.updated_at')})`, '>', now - policy.outputRetentionMs)]),
        ]),
      )
      .execute();
    for (const r of rows) {
      const key = `${r.owner_id}/${r.sha256}`;
      if (asked.has(key)) out.add(key);
    }
  }
  return out;
}
