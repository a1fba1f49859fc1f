/** Exponential backoff with jitter (0.5 s → 30 s) and an abortable sleep. */
import { randomBytes } from 'node:crypto';
import type { Random } from '@gpux/core';

export class Backoff {
  private failures = 0;
  constructor(
    private readonly random: Random,
    private readonly minMs = 500,
    private readonly maxMs = 30_000,
  ) {}

  /** The next delay: half the exponential step fixed, half random ("equal jitter"), so nodes spread out after an outage. */
  next(): number {
    const step = Math.min(this.maxMs, this.minMs * 2 ** Math.min(this.failures, 30));
    this.failures++;
    return Math.round(step / 2 + this.random.next() * (step / 2));
  }

  reset(): void {
    this.failures = 0;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. Never rejects. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const systemRandom: Random = {
  next: () => Math.random(),
  bytes: (n) => new Uint8Array(randomBytes(n)),
};

/**
 * The close of a shipper (logs, events): flush until nothing is pending, the attempt is gone, or `deadline`
 * (clock ms) passes, backing off between tries. Returns whether something is left undelivered.
 */
export async function drainUntil(
  deadline: number,
  s: { flush(): Promise<void>; pending(): boolean; gone(): boolean; now(): number; maxBackoffMs: number },
): Promise<boolean> {
  const backoff = new Backoff(systemRandom, 250, s.maxBackoffMs);
  while (s.pending() && !s.gone() && s.now() < deadline) {
    await s.flush();
    if (s.pending()) await sleep(Math.min(backoff.next(), Math.max(0, deadline - s.now())));
  }
  return s.pending() && !s.gone();
}
