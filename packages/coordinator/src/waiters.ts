import { performance } from 'node:perf_hooks';

/**
 * Long-poll wake-ups by key (a node id for work, a job id for logs). Subscribe before reading the store,
 * then wait: a wake that lands between the read and the wait is not lost.
 */
export interface Subscription {
  /** Resolves on a wake, after `ms`, or when the waiters close; true when woken (or closed). */
  wait(ms: number): Promise<boolean>;
  dispose(): void;
}

const MAX_KEYS = 10_000;

export class Waiters {
  private readonly subs = new Map<string, Set<Sub>>();
  private closed = false;
  /** Wake count at each key's last wake; bounded: when it grows past MAX_KEYS it is cleared and the floor raised. */
  private readonly woken = new Map<string, number>();
  private wakes = 0;
  private wakeFloor = 0;

  /** `announce`: tell the other replicas about a wake here (their long-polls on the key wake too). */
  constructor(private readonly announce?: (key: string) => void) {}

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

  /** Wake the key here and on every other replica. */
  wake(key: string): void {
    this.wakeLocal(key);
    this.announce?.(key);
  }

  /** Wake the key on this replica only (another replica's wake, arriving on the bus). */
  wakeLocal(key: string): void {
    this.wakes++;
    this.woken.set(key, this.wakes);
    if (this.woken.size > MAX_KEYS) {
      // Forget them all, and count every key as woken now: a read taken before is no longer current.
      this.woken.clear();
      this.wakeFloor = this.wakes;
    }
    const set = this.subs.get(key);
    if (!set) return;
    this.subs.delete(key);
    for (const s of set) s.fire();
  }

  /** Wake every key (messages may have been lost): each waiter rereads the store. */
  wakeAll(): void {
    this.woken.clear();
    this.wakeFloor = ++this.wakes;
    const all = [...this.subs.values()];
    this.subs.clear();
    for (const set of all) for (const s of set) s.fire();
  }

  /** End every wait now and every later one at once (server shutdown). */
  close(): void {
    this.closed = true;
    for (const set of this.subs.values()) for (const s of set) s.fire();
    this.subs.clear();
  }

  /**
   * Changes whenever `key` is woken. A store read taken while it had one value is still current as long as
   * it keeps that value: every write a waiter cares about wakes its key after it commits.
   */
  generation(key: string): number {
    return this.woken.get(key) ?? this.wakeFloor;
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

/**
 * Concurrent long-polls per key (a token, a node): a poll takes a slot for as long as it waits, and is
 * refused when `max` are taken, so no caller can park an unbounded number of requests on the coordinator.
 */
export class PollSlots {
  private readonly held = new Map<string, number>();

  /** A release function, or undefined when `max` slots of `key` are taken. Release once (idempotent). */
  take(key: string, max: number): (() => void) | undefined {
    const n = this.held.get(key) ?? 0;
    if (n >= max) return undefined;
    this.held.set(key, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.held.get(key) ?? 1) - 1;
      if (left <= 0) this.held.delete(key);
      else this.held.set(key, left);
    };
  }

  /** Slots taken for `key` (for tests and metrics). */
  count(key: string): number {
    return this.held.get(key) ?? 0;
  }
}

/**
 * One store read shared by every caller of the same key at the same generation (the Waiters generation of
 * what the key reads: it changes on every wake). A caller subscribes, then asks: a read that began at the
 * generation the caller sees now has missed no write the caller could wait for (such a write wakes the
 * key after it commits, which would have changed the generation), so N woken waiters make one read. A
 * settled result is reused for `keepMs` while the generation stays, so readers that arrive a little later
 * at the same cursor read nothing either; kept results are bounded by `maxWeight` (e.g. bytes) in all.
 */
export class SharedReads<T> {
  /** Insertion order = age: expired entries are dropped from the front. */
  private readonly reads = new Map<string, { generation: number; at: number; p: Promise<T>; weight: number | null }>();
  private weight = 0;

  constructor(private readonly opts: { keepMs: number; maxWeight: number; weigh: (v: T) => number }) {}

  read(key: string, generation: number, fn: () => Promise<T>): Promise<T> {
    const now = performance.now();
    this.expire(now);
    const cur = this.reads.get(key);
    if (cur && cur.generation === generation && (cur.weight === null || now - cur.at < this.opts.keepMs)) return cur.p;
    if (cur) this.drop(key);
    const entry: { generation: number; at: number; p: Promise<T>; weight: number | null } = { generation, at: now, p: fn(), weight: null };
    this.reads.set(key, entry);
    entry.p.then(
      (v) => {
        if (this.reads.get(key) !== entry) return;
        const w = Math.max(1, this.opts.weigh(v));
        if (this.weight + w > this.opts.maxWeight) this.reads.delete(key);
        else {
          entry.weight = w;
          this.weight += w;
        }
      },
      () => {
        if (this.reads.get(key) === entry) this.reads.delete(key);
      },
    );
    return entry.p;
  }

  /** Entries held (tests). */
  get size(): number {
    return this.reads.size;
  }

  private drop(key: string): void {
    const e = this.reads.get(key);
    if (!e) return;
    if (e.weight !== null) this.weight -= e.weight;
    this.reads.delete(key);
  }

  private expire(now: number): void {
    for (const [key, e] of this.reads) {
      if (e.weight === null || now - e.at < this.opts.keepMs) break; // in flight, or young: the rest are younger
      this.drop(key);
    }
  }
}
