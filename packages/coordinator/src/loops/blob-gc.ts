/** The blob garbage collector's loop: collectBlobGarbage every GPUX_BLOB_GC_INTERVAL_S (ticks come every expiry interval). */
import { collectBlobGarbage, type BlobGcState } from '../services/blob-gc.js';
import type { BlobService } from '../services/blobs.js';
import type { Runtime } from '../runtime.js';
import { PeriodicPass } from './periodic.js';

export class BlobGcLoop extends PeriodicPass {
  private lastRun = Number.NEGATIVE_INFINITY;
  private readonly state: BlobGcState = {};

  constructor(
    rt: Runtime,
    private readonly blobs: BlobService,
  ) {
    super(rt, 'blob garbage collection');
  }

  protected async tick(): Promise<void> {
    const now = this.rt.clock.now();
    if (now - this.lastRun < this.rt.config.blobs.gcIntervalMs) return;
    this.lastRun = now;
    await collectBlobGarbage(
      { store: this.rt.store, backend: await this.blobs.backend(), config: this.rt.config.blobs, logger: this.rt.logger, liveJobBlobRefs: this.blobs.liveJobBlobRefs, busyUploads: this.blobs.busyUploads },
      now,
      this.state,
    );
  }
}
