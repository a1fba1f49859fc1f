import type { AskRecord, PricePointRecord } from '../market/records.js';

/** Market: provider asks and the price index. */
export interface MarketPort {
  /** Set (price) or remove (null) a provider's ask for a class. Returns the provider's asks. */
  setAsk(providerId: string, marketClass: string, pricePerGpuHour: number | null, now: number): Promise<AskRecord[]>;
  listAsks(providerId?: string): Promise<AskRecord[]>;
  /** Append one epoch of index prices. */
  recordPrices(points: PricePointRecord[]): Promise<void>;
  /** The latest point of every class. */
  latestPrices(): Promise<PricePointRecord[]>;
  /** Points oldest first: of one class or all, at or after `sinceAt`, the newest `limit`. */
  priceHistory(q: { marketClass?: string; sinceAt?: number; limit: number }): Promise<PricePointRecord[]>;
}
