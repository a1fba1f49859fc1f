/**
 * Market quotes the scheduler prices nodes with: per market class, the index price and the floor. Each
 * node of the capacity index points at its class's quote object, so an epoch moving a price updates every
 * node of the class in O(1). Without a source (no market, core tests) a class quotes the catalogue's
 * starting price and floor; the coordinator sets the price book as the source and refreshes after epochs.
 */
import { classPricing } from '../market/classes.js';
import type { ClassQuote } from '../market/clearing.js';

export type QuoteSource = (cls: string) => ClassQuote;

const catalogue: QuoteSource = (cls) => {
  const p = classPricing(cls);
  return { index: p.initial, floor: p.floor };
};

export class QuoteBook {
  private readonly quotes = new Map<string, ClassQuote>();
  private source: QuoteSource = catalogue;

  /** The quote object of a class (shared: it changes in place). */
  of(cls: string): ClassQuote {
    let q = this.quotes.get(cls);
    if (!q) {
      q = { ...this.source(cls) };
      this.quotes.set(cls, q);
    }
    return q;
  }

  /** Take prices from `source` from now on, and re-read every class already quoted. */
  setSource(source: QuoteSource): void {
    this.source = source;
    this.refresh();
  }

  /** Re-read every quoted class from the source (after an epoch moved the index). */
  refresh(): void {
    for (const [cls, q] of this.quotes) Object.assign(q, this.source(cls));
  }
}
