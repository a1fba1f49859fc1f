/**
 * The market's clocks: every epoch the price index moves (services/market.ts runEpoch); every settlement
 * chunk running attempts pay their providers so far (a provider is never owed more than one chunk) and
 * unbonded stake that is due returns to its provider. Off entirely when the coordinator runs without a market.
 */
import type { Runtime } from '../runtime.js';
import { runEpoch } from '../services/market.js';

const SETTLE_BATCH = 1000;

export class MarketLoop {
  private timers: NodeJS.Timeout[] = [];
  private running = new Set<Promise<void>>();

  constructor(private readonly rt: Runtime) {}

  start(): void {
    if (!this.rt.config.market || this.timers.length > 0) return;
    this.every(this.rt.config.marketEpochMs, 'market epoch failed', () => this.epoch());
    // Check at a fraction of the chunk, so no attempt waits much more than one chunk to be paid.
    this.every(Math.max(50, Math.floor(this.rt.config.settleChunkMs / 4)), 'settlement pass failed', () => this.settle());
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.all(this.running);
  }

  async epoch(): Promise<void> {
    const points = await runEpoch(this.rt, this.rt.clock.now());
    this.rt.bus.publish({ t: 'prices' });
    this.rt.logger.debug({ epoch: this.rt.book.epoch, classes: points.length }, 'price index moved');
  }

  async settle(): Promise<void> {
    const { store, clock, config } = this.rt;
    const now = clock.now();
    while ((await store.settleRunning(now, config.settleChunkMs, SETTLE_BATCH)) === SETTLE_BATCH);
    while ((await store.releaseUnbonded(now, SETTLE_BATCH)) === SETTLE_BATCH);
  }

  /** One at a time per kind: a slow pass is not started twice. */
  private every(ms: number, failure: string, fn: () => Promise<void>): void {
    let busy = false;
    const t = setInterval(() => {
      if (busy) return;
      busy = true;
      const p = fn()
        .catch((err) => this.rt.logger.error({ err }, failure))
        .finally(() => {
          busy = false;
          this.running.delete(p);
        });
      this.running.add(p);
    }, ms);
    t.unref();
    this.timers.push(t);
  }
}
