/**
 * Batches one attempt's log output to the coordinator: seq from 0, flush every 250 ms or 64 KiB, 10 MiB cap
 * per attempt. Output longer than the protocol's entry limit is split into several entries. It stops when the
 * coordinator says the attempt's log budget is spent (`truncated`), the attempt is gone (404/409/410), or
 * refuses a batch outright (400/413: dropped, never retried forever).
 */
import type { Clock, Logger } from '@gpux/core';
import { LOG_ENTRY_MAX_BYTES, type LogBatchResponse, type LogEntry, type LogStream, type Seal } from '@gpux/protocol';
import { CoordinatorApiError } from '../coordinator-client.js';
import { drainUntil } from './backoff.js';

export interface LogShipperOptions {
  send(entries: LogEntry[]): Promise<LogBatchResponse>;
  /** The coordinator said the job was cancelled, with its sealed cancel order: the owner checks the seal before stopping. */
  onCancel(seal: Seal | undefined): void;
  /** The coordinator no longer takes logs for the attempt (404/409/410): stop shipping. */
  isGone(e: unknown): boolean;
  clock: Clock;
  logger: Logger;
  flushIntervalMs?: number;
  flushBytes?: number;
  maxBytes?: number;
  /**
   * An encrypted job (issue 13): each entry's data is this of its text (at most `encryptMaxBytes` UTF-8 bytes, longer
   * text is split first), so the coordinator stores ciphertext only. `maxBytes` still counts the plaintext.
   */
  encrypt?: (text: string, seq: number, stream: LogStream) => string;
  encryptMaxBytes?: number;
}

const MAX_BATCH_ENTRIES = 1000; // LogBatch schema limit
const MAX_BATCH_BYTES = 512 * 1024;
export const TRUNCATED_MESSAGE = '[logs truncated]';

/** Split `data` into pieces of at most `max` UTF-8 bytes, never inside a character. */
export function splitUtf8(data: string, max: number = LOG_ENTRY_MAX_BYTES): string[] {
  if (data.length * 3 <= max) return [data];
  const out: string[] = [];
  let start = 0;
  let bytes = 0;
  for (let i = 0; i < data.length; ) {
    const c = data.charCodeAt(i);
    let width = 3;
    let units = 1;
    if (c < 0x80) width = 1;
    else if (c < 0x800) width = 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < data.length && (data.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      width = 4;
      units = 2;
    }
    if (bytes + width > max) {
      out.push(data.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += width;
    i += units;
  }
  out.push(data.slice(start));
  return out;
}

/** The coordinator refused the batch itself (malformed or too large): sending it again cannot help. */
const isRefused = (e: unknown) => e instanceof CoordinatorApiError && (e.status === 400 || e.status === 413);

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
    const max = this.opts.encrypt ? (this.opts.encryptMaxBytes ?? LOG_ENTRY_MAX_BYTES) : LOG_ENTRY_MAX_BYTES;
    if (bytes <= max) this.append(stream, data, bytes);
    else for (const piece of splitUtf8(data, max)) this.append(stream, piece, Buffer.byteLength(piece));
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

  private append(stream: LogStream, text: string, textBytes: number): void {
    const seq = this.seq++;
    const data = this.opts.encrypt ? this.opts.encrypt(text, seq, stream) : text;
    const bytes = this.opts.encrypt ? data.length : textBytes; // base64: one byte per character
    this.buffer.push({ entry: { seq, stream, data, at: this.opts.clock.now() }, bytes });
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
        if (res.cancel) this.opts.onCancel(res.cancelSeal);
        if (res.truncated) {
          // The coordinator stored its own "log limit reached" marker; anything more would be dropped there.
          this.truncated = true;
          this.gone = true;
          this.buffer = [];
          this.bufferedBytes = 0;
          return;
        }
      } catch (e) {
        if (isRefused(e)) {
          this.opts.logger.warn({ err: (e as Error).message, dropped: n }, 'log batch refused by the coordinator; dropped');
          this.buffer.splice(0, n);
          this.bufferedBytes -= size;
          continue;
        }
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
