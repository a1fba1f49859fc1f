/**
 * The blob garbage collector (issue 13), one pass: (1) uploads abandoned past their expiry lose their staged
 * bytes and their reservation; (2) holds not referenced for the retention period are dropped, unless a job
 * still references them (`liveJobBlobRefs`: inputs of jobs not ended or inside their dispute window, outputs
 * for the retention period from the job's end, the checkpoint of a live job; see jobBlobRefs): those are
 * touched instead, so their retention starts again and they leave the stale set; (3) a sweep of the backend's listing deletes bytes no account holds and no open
 * upload declares, once they are older than ORPHAN_GRACE_MS (an upload completing right now has written its
 * bytes a moment before its row). The sweep resumes where the previous pass stopped.
 */
import type { BlobBackend, BlobRecord, Clock, JobBlobRefPolicy, Logger, Store } from '@gpux/core';
import type { BlobConfig } from '../blobs/config.js';

/** Bytes younger than this are never swept: their upload may be committing its row. */
export const ORPHAN_GRACE_MS = 3_600_000;
const BATCH = 500;
/** Work bounds of one pass, so a huge backlog is spread over passes instead of holding the loop. */
const MAX_BATCHES = 20;

/** Of these holds, the `${ownerId}/${sha256}` keys a live (not ended) job still references. */
export type LiveJobBlobRefs = (holds: readonly BlobRecord[]) => Promise<Set<string>>;

/** No job references any blob (tests of the collector alone). */
export const noLiveJobBlobRefs: LiveJobBlobRefs = async () => new Set();

/** The holds jobs reference, from the job_blobs table (one indexed read per batch of holds). */
export function jobBlobRefs(store: Pick<Store, 'referencedBlobHolds'>, clock: Clock, policy: JobBlobRefPolicy): LiveJobBlobRefs {
  return (holds) => store.referencedBlobHolds(holds, clock.now(), policy);
}

export interface BlobGcState {
  /** The sweep's position in the backend listing; undefined: start from the beginning. */
  sweepAfter?: string;
}

export interface BlobGcDeps {
  store: Store;
  backend: BlobBackend;
  config: Pick<BlobConfig, 'retentionMs'>;
  logger: Pick<Logger, 'info' | 'warn'>;
  liveJobBlobRefs?: LiveJobBlobRefs;
  /** Uploads with a chunk being received now (never collected mid-append). */
  busyUploads?: ReadonlySet<string>;
}

export interface BlobGcReport {
  uploadsExpired: number;
  holdsExpired: number;
  bytesDeleted: number;
  blobsDeleted: number;
}

export async function collectBlobGarbage(d: BlobGcDeps, now: number, state: BlobGcState = {}): Promise<BlobGcReport> {
  const report: BlobGcReport = { uploadsExpired: 0, holdsExpired: 0, bytesDeleted: 0, blobsDeleted: 0 };
  for (let i = 0; i < MAX_BATCHES; i++) {
    const expired = (await d.store.expiredBlobUploads(now, BATCH)).filter((u) => !d.busyUploads?.has(u.id));
    for (const u of expired) {
      await d.backend.abortUpload(u.id);
      await d.store.deleteBlobUpload(u.id);
      report.uploadsExpired++;
    }
    if (expired.length < BATCH) break;
  }
  const cutoff = now - d.config.retentionMs;
  const live = d.liveJobBlobRefs ?? noLiveJobBlobRefs;
  for (let i = 0; i < MAX_BATCHES; i++) {
    const stale = await d.store.staleBlobs(cutoff, BATCH);
    const kept = await live(stale);
    for (const b of stale) {
      // Still referenced: touched, so its retention runs from now and the next batch reaches past it.
      if (kept.has(`${b.ownerId}/${b.sha256}`)) await d.store.touchBlob(b.ownerId, b.sha256, now);
      else if (await d.store.deleteBlob(b.ownerId, b.sha256, { unreferencedSince: cutoff })) report.holdsExpired++;
    }
    if (stale.length < BATCH) break;
  }
  for (let i = 0; i < MAX_BATCHES; i++) {
    const page = await d.backend.list({ limit: BATCH, ...(state.sweepAfter ? { after: state.sweepAfter } : {}) });
    if (page.length === 0) {
      state.sweepAfter = undefined;
      break;
    }
    state.sweepAfter = page[page.length - 1]?.sha256;
    const inUse = await d.store.blobsInUse(page.map((o) => o.sha256));
    for (const o of page) {
      if (inUse.has(o.sha256) || o.modifiedAt > now - ORPHAN_GRACE_MS) continue;
      // Checked again right before deleting: an account may have completed an upload of these bytes since.
      if ((await d.store.blobsInUse([o.sha256])).size > 0) continue;
      await d.backend.delete(o.sha256);
      report.blobsDeleted++;
      report.bytesDeleted += o.size;
    }
    if (page.length < BATCH) {
      state.sweepAfter = undefined;
      break;
    }
  }
  if (report.uploadsExpired + report.holdsExpired + report.blobsDeleted > 0) d.logger.info({ ...report }, 'blob garbage collected');
  return report;
}
