/**
 * Checkpoints of an attempt (issue 13), for a job whose spec sets `checkpoint: { everySeconds }`. Before the program
 * starts, the checkpoint the assignment names (sealed by the coordinator) is downloaded, its sha256 checked, and
 * extracted into the attempt's checkpoints dir. While it runs, the dir is archived every interval and uploaded when
 * its digest changed; once more after the program ended (exit, stop, timeout), before the result is reported. One
 * upload at a time; a failed one is logged and tried again at the next tick. The executor owns the dir and calls
 * these at the right moments; the attempt runner builds it.
 */
import { rm } from 'node:fs/promises';
import type { Clock, ExecutionRequest, Logger } from '@gpux/core';
import type { CheckpointRef } from '@gpux/protocol';
import type { CoordinatorClient } from '../coordinator-client.js';
import type { AttemptE2e } from '../e2e/attempt-e2e.js';
import { type ArchiveLimits, ArchiveLimitError, extractArchive, maxArchiveBytes, type WrittenArchive, writeArchive } from './checkpoint-archive.js';
import { DataPlaneError, downloadToFile } from './download.js';
import { uploadFile } from './upload.js';

export interface AttemptCheckpoints {
  /** Restores the assignment's checkpoint into `dir` (empty) through `archive` (a temp file); nothing when it names none. Throws DataPlaneError. */
  restore(dir: string, archive: string, limits: ArchiveLimits): Promise<void>;
  /** The program runs: archive `dir` into `archive` every interval, and upload it when it changed. */
  watch(dir: string, archive: string, limits: ArchiveLimits): void;
  /** The program ended: stop the ticks, let an upload in progress end, upload once more if the dir changed. Never throws. */
  finish(): Promise<void>;
}

/** The executor request as the agent passes it for a job with checkpoints. */
export interface CheckpointRequest extends ExecutionRequest {
  checkpoints?: AttemptCheckpoints;
}

export const checkpointsOf = (req: ExecutionRequest): AttemptCheckpoints | undefined => (req as CheckpointRequest).checkpoints;

/** The last upload, after the program ended, may take this long at most (less once the agent is stopping). */
export const FINAL_UPLOAD_MS = 10 * 60_000;

export interface CheckpointDeps {
  client: CoordinatorClient;
  attemptId: string;
  /** The checkpoint to restore (Assignment.checkpoint). */
  from: CheckpointRef | undefined;
  everyMs: number;
  clock: Clock;
  /** Aborted when the attempt is stopped: cuts a periodic upload short (the last one has its own time). */
  signal: AbortSignal;
  /** Once the agent is stopping: when the result must be reported by (the last upload leaves it time). */
  giveUpAt(): number | null;
  logger: Logger;
  retryDelayMs?: number;
  chunkBytes?: number;
  /**
   * An encrypted job (issue 13): archives are encrypted under the job's INPUT data key before upload (so a retry on
   * another node, which gets that key, can restore them) and decrypted before extraction.
   */
  e2e?: AttemptE2e;
}

export class CheckpointKeeper implements AttemptCheckpoints {
  /** sha256 of the state the coordinator holds for this job: the restored one, then each upload (an encrypted job's: of the plaintext archive). */
  private last: string | null;
  private watched: { dir: string; archive: string; limits: ArchiveLimits } | null = null;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private finished = false;
  /** Uploads that completed (for tests and logs). */
  uploads = 0;

  constructor(private readonly d: CheckpointDeps) {
    // An encrypted checkpoint's plaintext digest is known once it is restored.
    this.last = d.e2e ? null : (d.from?.sha256 ?? null);
  }

  async restore(dir: string, archive: string, limits: ArchiveLimits): Promise<void> {
    const cp = this.d.from;
    if (!cp) return;
    const what = `checkpoint ${cp.sha256.slice(0, 12)}… (from attempt ${cp.attemptId})`;
    if (cp.size > maxArchiveBytes(limits)) {
      throw new DataPlaneError(`${what}: ${cp.size} bytes, more than a checkpoint may be on this node (GPUX_NODE_MAX_OUTPUT_BYTES); not restored`);
    }
    const source = { open: (offset: number, signal: AbortSignal) => this.d.client.openCheckpoint(this.d.attemptId, offset, signal) };
    const e2e = this.d.e2e;
    const sealed = `${archive}.gpxe`;
    try {
      await downloadToFile(source, e2e ? sealed : archive, { sha256: cp.sha256, size: cp.size }, what, {
        signal: this.d.signal,
        ...(this.d.retryDelayMs === undefined ? {} : { retryDelayMs: this.d.retryDelayMs }),
      });
      if (e2e) this.last = (await e2e.open(sealed, archive, what)).sha256;
      await extractArchive(archive, dir, limits, what);
    } finally {
      await rm(archive, { force: true });
      await rm(sealed, { force: true });
    }
    this.d.logger.info({ sha256: cp.sha256, size: cp.size, fromAttempt: cp.attemptId }, 'restored the checkpoint');
  }

  watch(dir: string, archive: string, limits: ArchiveLimits): void {
    if (this.finished || this.watched) return;
    this.watched = { dir, archive, limits };
    this.schedule();
  }

  async finish(): Promise<void> {
    if (this.finished) return;
    this.finished = true;
    clearTimeout(this.timer);
    await this.running;
    if (!this.watched) return; // the program never ran: nothing new to keep
    const giveUpAt = this.d.giveUpAt();
    // Stopping: leave a few seconds of the shutdown window for the result report itself.
    const ms = giveUpAt === null ? FINAL_UPLOAD_MS : Math.max(1000, giveUpAt - this.d.clock.now() - 3000);
    await this.save('after the program ended', AbortSignal.timeout(ms));
  }

  private schedule(): void {
    if (this.finished) return;
    this.timer = setTimeout(() => {
      this.running = this.save('periodic', this.d.signal).finally(() => {
        this.running = null;
        this.schedule();
      });
    }, this.d.everyMs);
    this.timer.unref();
  }

  /** Archives the dir and uploads it if it changed. Never throws: a failure is logged (the next tick tries again). */
  private async save(why: string, signal: AbortSignal): Promise<void> {
    const w = this.watched;
    if (!w || signal.aborted) return;
    try {
      const a = await archiveSettled(w);
      if (a.skipped > 0) this.d.logger.warn({ skipped: a.skipped }, 'the checkpoints dir holds symlinks or special files; a checkpoint keeps only files and dirs');
      if (a.sha256 === this.last || (this.last === null && a.entries === 0)) return; // unchanged, or nothing written yet
      // An encrypted job's checkpoint leaves the node as ciphertext only (its digest differs at each upload: a fresh salt).
      const up = this.d.e2e ? { ...(await this.d.e2e.sealCheckpoint(w.archive, sealedOf(w.archive))), file: sealedOf(w.archive) } : { sha256: a.sha256, size: a.size, file: w.archive };
      const begin = (s: AbortSignal) => this.d.client.createCheckpointUpload(this.d.attemptId, { sha256: up.sha256, size: up.size }, s);
      await uploadFile(this.d.client, begin, up.file, up.size, 'the checkpoint', {
        signal,
        logger: this.d.logger,
        ...(this.d.retryDelayMs === undefined ? {} : { retryDelayMs: this.d.retryDelayMs }),
        ...(this.d.chunkBytes === undefined ? {} : { chunkBytes: this.d.chunkBytes }),
      });
      this.last = a.sha256;
      this.uploads++;
      this.d.logger.info({ sha256: a.sha256, size: a.size, entries: a.entries, why }, 'uploaded a checkpoint');
    } catch (e) {
      this.d.logger.warn({ err: (e as Error).message, why }, signal.aborted ? 'checkpoint upload stopped' : 'could not upload a checkpoint; trying again at the next tick');
    } finally {
      await rm(w.archive, { force: true }).catch(() => {});
      if (this.d.e2e) await rm(sealedOf(w.archive), { force: true }).catch(() => {});
    }
  }
}

const sealedOf = (archive: string) => `${archive}.gpxe`;

/** A file replaced under the walk (the job saving its state) fails one archive: try again at once, a few times. */
async function archiveSettled(w: { dir: string; archive: string; limits: ArchiveLimits }, tries = 3): Promise<WrittenArchive> {
  for (let i = 1; ; i++) {
    try {
      return await writeArchive(w.dir, w.archive, w.limits);
    } catch (e) {
      if (i >= tries || e instanceof ArchiveLimitError) throw e;
    }
  }
}
