/**
 * Load generators, both bounded in count and time: a closed loop (a fixed number of jobs pushed by a few
 * concurrent submitters) and an open loop (a fixed offered rate for a fixed time, whatever the system does).
 */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Submits job `i`; resolves when the system has accepted it. `submitter`: which of the closed loop's concurrent
 * submitters sends it (0..concurrency-1); the open loop has no fixed submitters, so there it is `i`.
 */
export type SubmitFn = (i: number, submitter: number) => Promise<void>;

export interface LoadResult {
  submitted: number;
  failed: number;
  firstError: string | null;
  /** Wall time the generator itself took, ms. */
  elapsedMs: number;
  /** Open loop only: jobs sent more than 50 ms after their slot (the generator could not keep up). */
  late: number;
}

/** `count` jobs through `concurrency` submitters; stops early at `deadline` (epoch ms). */
export async function closedLoop(count: number, concurrency: number, deadline: number, submit: SubmitFn): Promise<LoadResult> {
  const t0 = Date.now();
  let next = 0;
  let failed = 0;
  let firstError: string | null = null;
  const worker = async (submitter: number) => {
    while (next < count && Date.now() < deadline) {
      const i = next++;
      try {
        await submit(i, submitter);
      } catch (err) {
        failed++;
        firstError ??= String(err);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, submitter) => worker(submitter)));
  return { submitted: next - failed, failed, firstError, elapsedMs: Date.now() - t0, late: 0 };
}

/**
 * Offer `rate` jobs/s for `seconds`: job i is due at t0 + i/rate and is sent when due, without waiting for
 * earlier ones (at most `maxInFlight` outstanding, beyond which the generator counts the job late and waits).
 */
export async function openLoop(rate: number, seconds: number, maxInFlight: number, submit: SubmitFn): Promise<LoadResult> {
  const total = Math.round(rate * seconds);
  const t0 = Date.now();
  let sent = 0;
  let failed = 0;
  let late = 0;
  let inFlight = 0;
  let firstError: string | null = null;
  const pending = new Set<Promise<void>>();
  const hardStop = t0 + seconds * 1000 + 30_000;
  while (sent < total && Date.now() < hardStop) {
    const due = t0 + (sent * 1000) / rate;
    const now = Date.now();
    if (now < due) {
      await sleep(Math.min(due - now, 5));
      continue;
    }
    if (inFlight >= maxInFlight) {
      await Promise.race(pending);
      continue;
    }
    if (now - due > 50) late++;
    const i = sent++;
    inFlight++;
    const p: Promise<void> = submit(i, i)
      .catch((err) => {
        failed++;
        firstError ??= String(err);
      })
      .finally(() => {
        inFlight--;
        pending.delete(p);
      });
    pending.add(p);
  }
  await Promise.all(pending);
  return { submitted: sent - failed, failed, firstError, elapsedMs: Date.now() - t0, late };
}

/** Polls `ready` every `everyMs` until it holds (true) or `deadline` passes (false). */
export async function waitUntil(ready: () => boolean | Promise<boolean>, deadline: number, everyMs = 20): Promise<boolean> {
  for (;;) {
    if (await ready()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(everyMs);
  }
}
