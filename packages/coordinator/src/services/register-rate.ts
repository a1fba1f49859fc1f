/**
 * Registrations per provider account: a token bucket in memory (issue 10 item 2). Each account may
 * register `perMinute` nodes per minute, in a burst of as many; re-registrations count too. Buckets that
 * are full again are forgotten, so the map holds only accounts that registered in the last minute.
 */
export class RegisterRate {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private lastSweep = 0;

  constructor(private readonly perMinute: number) {}

  /** 0 when a registration may go ahead now (and is counted); else the milliseconds until one may. */
  take(key: string, now: number): number {
    const b = this.refill(key, now);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return this.waitFor(b);
  }

  private refill(key: string, now: number): { tokens: number; at: number } {
    this.sweep(now);
    const b = this.buckets.get(key) ?? { tokens: this.perMinute, at: now };
    b.tokens = Math.min(this.perMinute, b.tokens + Math.max(0, now - b.at) * (this.perMinute / 60_000));
    b.at = now;
    this.buckets.set(key, b);
    return b;
  }

  private waitFor(b: { tokens: number }): number {
    return Math.ceil((1 - b.tokens) / (this.perMinute / 60_000));
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [k, b] of this.buckets) if (now - b.at >= 60_000) this.buckets.delete(k);
  }
}
