/**
 * Long-poll wake-ups by key (a node id for work, a job id for logs). Subscribe before reading the store,
 * then wait: a wake that lands between the read and the wait is not lost.
 */
export interface Subscription {
  /** Resolves on a wake, after `ms`, or when the waiters close; true when woken (or closed). */
  wait(ms: number): Promise<boolean>;
  dispose(): void;
}

export class Waiters {
  private readonly subs = new Map<string, Set<Sub>>();
  private closed = false;

  subscribe(key: string): Subscription {
    const sub = new Sub(() => this.remove(key, sub));
    if (this.closed) sub.fire();
    else {
      const set = this.subs.get(key) ?? new Set<Sub>();
      set.add(sub);
      this.subs.set(key, set);
    }
    return sub;
  }

  wake(key: string): void {
    const set = this.subs.get(key);
    if (!set) return;
    this.subs.delete(key);
    for (const s of set) s.fire();
  }

  /** End every wait now and every later one at once (server shutdown). */
  close(): void {
    this.closed = true;
    for (const set of this.subs.values()) for (const s of set) s.fire();
    this.subs.clear();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Number of waiting subscriptions (for tests and metrics). */
  get size(): number {
    let n = 0;
    for (const set of this.subs.values()) n += set.size;
    return n;
  }

  private remove(key: string, sub: Sub): void {
    const set = this.subs.get(key);
    if (!set) return;
    set.delete(sub);
    if (set.size === 0) this.subs.delete(key);
  }
}

class Sub implements Subscription {
  private fired = false;
  private resolve: ((woken: boolean) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly onDispose: () => void) {}

  fire(): void {
    this.fired = true;
    this.finish(true);
  }

  wait(ms: number): Promise<boolean> {
    if (this.fired) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      this.resolve = resolve;
      this.timer = setTimeout(() => this.finish(false), Math.max(0, ms));
    });
  }

  dispose(): void {
    this.finish(false);
    this.onDispose();
  }

  private finish(woken: boolean): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const r = this.resolve;
    this.resolve = undefined;
    r?.(woken);
  }
}
