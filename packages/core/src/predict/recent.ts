/**
 * The last N values of a series and their quantiles. A ring, not a sketch: the models keep a few dozen
 * values per key, where sorting a copy costs about a microsecond and the answer is exact and explainable
 * ("the median of the last 32 runs of this family").
 */
export class Recent {
  private readonly values: number[] = [];
  private next = 0;
  /** The values sorted, kept until the next add: a scheduling pass asks the same groups for every job of its window. */
  private sorted: number[] | null = null;

  constructor(private readonly capacity: number) {}

  get size(): number {
    return this.values.length;
  }

  add(v: number): void {
    this.sorted = null;
    if (this.values.length < this.capacity) this.values.push(v);
    else this.values[this.next] = v;
    this.next = (this.next + 1) % this.capacity;
  }

  /** The q-quantile (0..1) by linear interpolation between order statistics; NaN when empty. */
  quantile(q: number): number {
    return quantileOf(this.ascending(), q);
  }

  /** The mean; NaN when empty. */
  mean(): number {
    let sum = 0;
    for (const v of this.values) sum += v;
    return this.values.length ? sum / this.values.length : Number.NaN;
  }

  /** Several quantiles from one sort. */
  quantiles(qs: readonly number[]): number[] {
    const sorted = this.ascending();
    return qs.map((q) => quantileOf(sorted, q));
  }

  private ascending(): number[] {
    this.sorted ??= [...this.values].sort((a, b) => a - b);
    return this.sorted;
  }
}

/** The q-quantile of an ascending array; NaN when empty. */
export function quantileOf(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const pos = Math.min(1, Math.max(0, q)) * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo] as number;
  const b = sorted[hi] as number;
  return a + (b - a) * (pos - lo);
}

/** A Map that forgets its least recently used keys past `max`: every model's memory is bounded. */
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>();

  constructor(private readonly max: number) {}

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v !== undefined) {
      this.map.delete(key);
      this.map.set(key, v);
    }
    return v;
  }

  /** Read without refreshing the key's place (predictions must not keep cold keys alive). */
  peek(key: K): V | undefined {
    return this.map.get(key);
  }

  getOrCreate(key: K, make: () => V): V {
    let v = this.get(key);
    if (v === undefined) {
      v = make();
      this.map.set(key, v);
      if (this.map.size > this.max) this.map.delete(this.map.keys().next().value as K);
    }
    return v;
  }
}
