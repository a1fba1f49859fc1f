/**
 * The scheduling pass: queued jobs → placements in the capacity index → one store transaction → wake the
 * chosen nodes' work long-polls. Runs every schedulePassIntervalMs and soon after a kick; one at a time.
 */
import { newId } from '@gpux/core';
import type { Runtime } from '../runtime.js';

export class SchedulingLoop {
  private started = false;
  private running: Promise<void> | undefined;
  private again = false;
  private interval: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Timeout | undefined;
  /** The last pass left runnable jobs unplaced: new capacity (an idle node's heartbeat) deserves a pass. */
  backlog = false;

  constructor(private readonly rt: Runtime) {}

  start(): void {
    if (this.started) return;
    this.started = true;
    this.interval = setInterval(() => void this.run(), this.rt.config.schedulePassIntervalMs);
    this.interval.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.started = false;
    clearInterval(this.interval);
    clearTimeout(this.kickTimer);
    this.kickTimer = undefined;
    await this.running;
  }

  /** Ask for a pass soon. Kicks arriving together (a burst of submits) share one pass. */
  kick(): void {
    if (!this.started || this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      void this.run();
    }, 1);
  }

  /** Run passes until one finds nothing more to do; if a pass is running, it runs once more after it. */
  run(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          if (await this.pass()) this.again = true;
        } while (this.again && this.started);
      } catch (err) {
        this.rt.logger.error({ err }, 'scheduling pass failed');
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  /** One pass. Returns true when a full batch was placed, so more may be waiting. */
  async pass(): Promise<boolean> {
    const { store, config, clock, random, index, scheduler, metrics, logger } = this.rt;
    const now = clock.now();
    metrics.schedulePasses.inc();
    const jobs = await store.claimQueued(now, config.scheduleBatchSize);
    if (jobs.length === 0) {
      this.backlog = false;
      return false;
    }
    const placements = scheduler.place(jobs, index, { now, leaseTtlMs: config.leaseTtlMs, newAttemptId: () => newId('att', now, random) });
    this.backlog = placements.length < jobs.length;
    if (placements.length === 0) return false;
    let written: Set<string>;
    try {
      written = new Set((await store.assign(placements, now)).map((a) => a.id));
    } catch (err) {
      for (const p of placements) index.release(p.attemptId);
      throw err;
    }
    const nodes = new Set<string>();
    for (const p of placements) {
      // A job cancelled (or placed elsewhere) since claimQueued is skipped by the store: free its room.
      if (!written.has(p.attemptId)) index.release(p.attemptId);
      else {
        nodes.add(p.nodeId);
        logger.debug({ jobId: p.jobId, attemptId: p.attemptId, nodeId: p.nodeId, gpus: p.gpuIndices }, 'job assigned');
      }
    }
    metrics.placements.inc(written.size);
    for (const n of nodes) this.rt.work.wake(n);
    return jobs.length === config.scheduleBatchSize && written.size > 0;
  }
}
