/** The blob garbage collector's task: collectBlobGarbage every GPUX_BLOB_GC_INTERVAL_S (the first soon after start), on the leader. */
import { collectBlobGarbage, type BlobGcState } from '../services/blob-gc.js';
import type { BlobService } from '../services/blobs.js';
import type { Needs } from '../runtime.js';
import { PeriodicTask } from './periodic.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type BlobGcDeps = Needs<'clock' | 'config' | 'leads' | 'logger' | 'store'>;

export function blobGcTask(rt: BlobGcDeps, blobs: BlobService): PeriodicTask {
  const state: BlobGcState = {};
  let lastRun = Number.NEGATIVE_INFINITY;
  return new PeriodicTask(rt, {
    what: 'blob garbage collection',
    // Ticks come every expiry interval; a collection runs once its own interval has passed.
    everyMs: rt.config.expiryPassIntervalMs,
    pass: async () => {
      const now = rt.clock.now();
      if (now - lastRun < rt.config.blobs.gcIntervalMs) return;
      lastRun = now;
      const ports = { store: rt.store, backend: await blobs.backend(), config: rt.config.blobs, logger: rt.logger, liveJobBlobRefs: blobs.liveJobBlobRefs, busyUploads: blobs.busyUploads };
      await collectBlobGarbage(ports, now, state);
    },
  });
}
