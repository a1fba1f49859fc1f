/** Ships one attempt's job events (image pulls) to the coordinator: best effort, in order, a few tries per batch. */
import type { Clock, ExecutionEventType, Logger } from '@gpux/core';
import type { AttemptEvent, AttemptEventBatchResponse } from '@gpux/protocol';
import { drainUntil } from './backoff.js';

export interface EventShipperOptions {
  send(events: AttemptEvent[]): Promise<AttemptEventBatchResponse>;
  /** The coordinator no longer takes events for the attempt (404/409/410): stop shipping. */
  isGone(e: unknown): boolean;
  clock: Clock;
  logger: Logger;
  /** Retry tick for a batch that failed. Default 1000 ms. */
  retryIntervalMs?: number;
  /** Tries per batch before it is dropped. Default 3. */
  maxTries?: number;
  /** Events kept per attempt; later ones are dropped (progress is already throttled by the executor). Default 500. */
  maxEvents?: number;
}

const MAX_BATCH = 100; // AttemptEventBatch schema limit

export class EventShipper {
  private buffer: AttemptEvent[] = [];
  private pushed = 0;
  private tries = 0;
  private gone = false;
  private sending: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly opts: EventShipperOptions) {
    this.timer = setInterval(() => void this.flush(), opts.retryIntervalMs ?? 1000);
    this.timer.unref();
  }

  push(type: ExecutionEventType, data: Record<string, unknown>): void {
    if (this.gone || this.pushed >= (this.opts.maxEvents ?? 500)) return;
    this.pushed++;
    this.buffer.push({ type, at: Math.round(this.opts.clock.now()), data });
    void this.flush();
  }

  /** One batch in flight at a time; a failed batch stays buffered for the next tick, until its tries run out. */
  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  /** Stops the timer and delivers the rest, retrying until `deadline` (clock ms) or the tries run out. */
  async close(deadline: number): Promise<void> {
    clearInterval(this.timer);
    const left = await drainUntil(deadline, {
      flush: () => this.flush(),
      pending: () => this.buffer.length > 0,
      gone: () => this.gone,
      now: () => this.opts.clock.now(),
      maxBackoffMs: 2000,
    });
    if (left) this.opts.logger.warn({ undelivered: this.buffer.length }, 'job events could not be delivered');
  }

  private async sendAll(): Promise<void> {
    while (this.buffer.length > 0 && !this.gone) {
      const batch = this.buffer.slice(0, MAX_BATCH);
      try {
        const res = await this.opts.send(batch);
        this.buffer.splice(0, batch.length);
        this.tries = 0;
        if (res.truncated) {
          // The attempt's event budget is spent: the coordinator drops the rest, so stop sending.
          this.gone = true;
          this.buffer = [];
          return;
        }
      } catch (e) {
        if (this.opts.isGone(e)) {
          this.gone = true;
          this.buffer = [];
          return;
        }
        if (++this.tries >= (this.opts.maxTries ?? 3)) {
          // Events are history, not state: never hold the attempt up for them.
          this.opts.logger.warn({ err: (e as Error).message, dropped: batch.length }, 'job events dropped after retries');
          this.buffer.splice(0, batch.length);
          this.tries = 0;
          continue;
        }
        this.opts.logger.debug({ err: (e as Error).message }, 'job events not delivered yet; retrying');
        return;
      }
    }
  }
}
