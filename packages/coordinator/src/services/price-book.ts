/**
 * The price book: the market's in-memory view, a cache of the store like the capacity index. Index price
 * per class (the latest epoch, or the catalogue's starting price for a class with no epoch yet), each
 * class's points of the last day (for the change figures, so a polled price page reads no history), and
 * every provider's asks. Rebuilt from the store at start; the epoch loop and the ask route keep it current.
 */
import { type AskRecord, CPU_CLASS, classPricing, grossAsk, marketClassOf, type PricePointRecord } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';

export const DAY_MS = 24 * 3_600_000;

export class PriceBook {
  private readonly latest = new Map<string, PricePointRecord>();
  /** Per class, its points of the last DAY_MS before its latest, oldest first. */
  private readonly day = new Map<string, PricePointRecord[]>();
  private readonly asks = new Map<string, Map<string, number>>();
  /** The last epoch recorded (0 before the first). */
  epoch = 0;

  constructor(readonly feeBps: number) {}

  load(points: readonly PricePointRecord[], asks: readonly AskRecord[]): void {
    for (const p of points) this.note(p);
    for (const a of asks) this.setAsk(a.providerId, a.marketClass, a.pricePerGpuHour);
  }

  /** A new point (points of one class arrive in epoch order; one already held is ignored). */
  note(p: PricePointRecord): void {
    const last = this.latest.get(p.marketClass);
    if (last && last.epoch >= p.epoch) return;
    this.latest.set(p.marketClass, p);
    this.epoch = Math.max(this.epoch, p.epoch);
    const day = this.day.get(p.marketClass) ?? [];
    day.push(p);
    while ((day[0] as PricePointRecord).at < p.at - DAY_MS) day.shift();
    this.day.set(p.marketClass, day);
  }

  /** The latest point of every class with the one before it and the oldest within a day of it. */
  points(): { latest: PricePointRecord; previous: PricePointRecord | null; dayAgo: PricePointRecord | null }[] {
    return this.classes().map((cls) => {
      const day = this.day.get(cls) ?? [];
      const latest = this.latest.get(cls) as PricePointRecord;
      return { latest, previous: day.length > 1 ? (day[day.length - 2] as PricePointRecord) : null, dayAgo: day.length > 1 ? (day[0] as PricePointRecord) : null };
    });
  }

  /** Index price per unit-hour of a class now. */
  price(cls: string): number {
    return this.latest.get(cls)?.price ?? classPricing(cls).initial;
  }

  floor(cls: string): number {
    return classPricing(cls).floor;
  }

  /** Classes with a recorded epoch. */
  classes(): string[] {
    return [...this.latest.keys()].sort();
  }

  setAsk(providerId: string, cls: string, price: number | null): void {
    let m = this.asks.get(providerId);
    if (!m) {
      m = new Map();
      this.asks.set(providerId, m);
    }
    if (price === null) m.delete(cls);
    else m.set(cls, price);
  }

  ask(providerId: string | null, cls: string): number | undefined {
    return providerId === null ? undefined : this.asks.get(providerId)?.get(cls);
  }

  /** The node's gross asks (what the capacity index filters on): its GPU class per GPU-hour, and cpu per job-hour. */
  grossAsks(providerId: string | null, gpus: readonly GpuDevice[]): { gpu: number | undefined; cpu: number | undefined } {
    const first = gpus[0];
    const gpu = first ? this.ask(providerId, marketClassOf(first)) : undefined;
    const cpu = this.ask(providerId, CPU_CLASS);
    return { gpu: gpu === undefined ? undefined : grossAsk(gpu, this.feeBps), cpu: cpu === undefined ? undefined : grossAsk(cpu, this.feeBps) };
  }
}
