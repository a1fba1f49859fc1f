/**
 * The price book: the market's in-memory view, a cache of the store like the capacity index. Index price
 * per class (the latest epoch, or the catalogue's starting price for a class with no epoch yet) and every
 * provider's asks. Rebuilt from the store at start; the epoch loop and the ask route keep it current.
 */
import { type AskRecord, CPU_CLASS, classPricing, grossAsk, marketClassOf, type PricePointRecord } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';

export class PriceBook {
  private readonly latest = new Map<string, PricePointRecord>();
  private readonly asks = new Map<string, Map<string, number>>();
  /** The last epoch recorded (0 before the first). */
  epoch = 0;

  constructor(readonly feeBps: number) {}

  load(points: readonly PricePointRecord[], asks: readonly AskRecord[]): void {
    for (const p of points) this.note(p);
    for (const a of asks) this.setAsk(a.providerId, a.marketClass, a.pricePerGpuHour);
  }

  note(p: PricePointRecord): void {
    this.latest.set(p.marketClass, p);
    this.epoch = Math.max(this.epoch, p.epoch);
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
