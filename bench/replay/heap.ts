/** A binary min-heap of timed events: the replay's clock. Ties keep insertion order. */
export interface Timed {
  t: number;
  seq?: number;
}

export class EventHeap<E extends Timed> {
  private readonly items: E[] = [];
  private seq = 0;

  get size(): number {
    return this.items.length;
  }

  push(e: E): void {
    e.seq = this.seq++;
    const a = this.items;
    a.push(e);
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!this.less(a[i] as E, a[p] as E)) break;
      [a[i], a[p]] = [a[p] as E, a[i] as E];
      i = p;
    }
  }

  pop(): E | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0 && last !== undefined) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && this.less(a[l] as E, a[m] as E)) m = l;
        if (r < a.length && this.less(a[r] as E, a[m] as E)) m = r;
        if (m === i) break;
        [a[i], a[m]] = [a[m] as E, a[i] as E];
        i = m;
      }
    }
    return top;
  }

  private less(x: E, y: E): boolean {
    return x.t < y.t || (x.t === y.t && (x.seq ?? 0) < (y.seq ?? 0));
  }
}
