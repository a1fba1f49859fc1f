/** Batches one attempt's log output to the coordinator: seq from 0, flush every 250 ms or 64 KiB, 10 MiB cap per attempt. */
import type { Clock, Logger } from '@gpux/core';
import type { LogBatchResponse, LogEntry, LogStream } from '@gpux/protocol';
import { drainUntil } from './backoff.js';

export interface LogShipperOptions {
  send(entries: LogEntry[]): Promise<LogBatchResponse>;
  /** The coordinator said the job was cancelled. */
  onCancel(): void;
  /** The coordinator no longer knows the attempt (404/409): stop shipping. */
  isGone(e: unknown): boolean;
  clock: Clock;
  logger: Logger;
  flushIntervalMs?: number;
  flushBytes?: number;
  maxBytes?: number;
}

const MAX_BATCH_ENTRIES = 1000; // LogBatch schema limit
const MAX_BATCH_BYTES = 512 * 1024;
export const TRUNCATED_MESSAGE = '[logs truncated]';

export class LogShipper {
  private seq = 0;
  private buffer: { entry: LogEntry; bytes: number }[] = [];
  private bufferedBytes = 0;
  private totalBytes = 0;
  private truncated = false;
  private gone = false;
  private sending: Promise<void> | null = null;
  private readonly timer: NodeJS.Timeout;
  private readonly flushBytes: number;
  private readonly maxBytes: number;

  constructor(private readonly opts: LogShipperOptions) {
    this.flushBytes = opts.flushBytes ?? 64 * 1024;
    this.maxBytes = opts.maxBytes ?? 10 * 1024 * 1024;
    this.timer = setInterval(() => void this.flush(), opts.flushIntervalMs ?? 250);
    this.timer.unref();
  }

  get metrics(): { logBytes: number; logsTruncated: boolean } {
    return { logBytes: this.totalBytes, logsTruncated: this.truncated };
  }

  push(stream: LogStream, data: string): void {
    if (this.truncated || this.gone || data.length === 0) return;
    const bytes = Buffer.byteLength(data);
    if (this.totalBytes + bytes > this.maxBytes) {
      this.truncated = true;
      this.append('system', `${TRUNCATED_MESSAGE}\n`, 0);
      return;
    }
    this.totalBytes += bytes;
    this.append(stream, data, bytes);
    if (this.bufferedBytes >= this.flushBytes) void this.flush();
  }

  /** Sends what is buffered; one batch in flight at a time; a failed batch stays buffered for the next tick. */
  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => {
      this.sending = null;
    });
    return this.sending;
  }

  /** Stops the timer and delivers the rest, retrying until `deadline` (clock ms). */
  async close(deadline: number): Promise<void> {
    clearInterval(this.timer);
    const left = await drainUntil(deadline, {
      flush: () => this.flush(),
      pending: () => this.buffer.length > 0,
      gone: () => this.gone,
      now: () => this.opts.clock.now(),
      maxBackoffMs: 5000,
    });
    if (left) this.opts.logger.warn({ undelivered: this.buffer.length }, 'log entries could not be delivered');
  }

  private append(stream: LogStream, data: string, bytes: number): void {
    this.buffer.push({ entry: { seq: this.seq++, stream, data, at: this.opts.clock.now() }, bytes });
    this.bufferedBytes += bytes;
  }

  private async sendAll(): Promise<void> {
    while (this.buffer.length > 0 && !this.gone) {
      let n = 0;
      let size = 0;
      while (n < this.buffer.length && n < MAX_BATCH_ENTRIES && (n === 0 || size + (this.buffer[n]?.bytes ?? 0) <= MAX_BATCH_BYTES)) {
        size += this.buffer[n]?.bytes ?? 0;
        n++;
      }
      const batch = this.buffer.slice(0, n);
      try {
        const res = await this.opts.send(batch.map((b) => b.entry));
        this.buffer.splice(0, n);
        this.bufferedBytes -= size;
        if (res.cancel) this.opts.onCancel();
      } catch (e) {
        if (this.opts.isGone(e)) {
          this.gone = true;
          this.buffer = [];
          this.bufferedBytes = 0;
          return;
        }
        this.opts.logger.debug({ err: (e as Error).message }, 'log batch not delivered; will retry');
        return;
      }
    }
  }
}
