/**
 * Recent waits from submission to first placement, for the quote's expected wait (services/quote.ts). The
 * scheduling pass notes each job it places for the first time; a ring of the last MAX_WAITS, read within WINDOW_MS.
 * In memory, on the replica that schedules (a replica that does not lead has none: the quote says "unknown").
 */
import type { RecentWaits } from '@gpux/core';

const MAX_WAITS = 200;
const WINDOW_MS = 3_600_000;

export class PlacementWaits {
  private readonly at: number[] = [];
  private readonly waited: number[] = [];
  private next = 0;

  /** A job placed at `at` after waiting `waitedMs` since its submission. */
  note(at: number, waitedMs: number): void {
    if (!Number.isFinite(waitedMs) || waitedMs < 0) return;
    if (this.at.length < MAX_WAITS) {
      this.at.push(at);
      this.waited.push(waitedMs);
      return;
    }
    this.at[this.next] = at;
    this.waited[this.next] = waitedMs;
    this.next = (this.next + 1) % MAX_WAITS;
  }

  /** The waits noted within the window before `now`, or null when there are none. */
  recent(now: number): RecentWaits | null {
    const w: number[] = [];
    for (let i = 0; i < this.at.length; i++) if ((this.at[i] as number) > now - WINDOW_MS) w.push(this.waited[i] as number);
    if (w.length === 0) return null;
    w.sort((a, b) => a - b);
    const q = (f: number) => w[Math.min(w.length - 1, Math.floor(f * w.length))] as number;
    return { count: w.length, windowMs: WINDOW_MS, medianMs: q(0.5), p90Ms: q(0.9) };
  }
}
