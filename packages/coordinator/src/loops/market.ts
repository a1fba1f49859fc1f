/**
 * The market's clocks: every epoch the price index moves (services/market.ts runEpoch); every settlement
 * chunk running attempts pay their providers so far (a provider is never owed more than one chunk) and
 * unbonded stake that is due returns to its provider. Off entirely when the coordinator runs without a market.
 */
import type { Needs } from '../runtime.js';
import { runEpoch } from '../services/market.js';
import { PeriodicTask } from './periodic.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type MarketDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'index' | 'leads' | 'logger' | 'store'>;

const SETTLE_BATCH = 1000;

export async function marketEpoch(rt: MarketDeps): Promise<void> {
  const points = await runEpoch(rt, rt.clock.now());
  rt.bus.publish({ t: 'prices' });
  rt.logger.debug({ epoch: rt.book.epoch, classes: points.length }, 'price index moved');
}

export async function settlementPass(rt: MarketDeps): Promise<void> {
  const now = rt.clock.now();
  while ((await rt.store.settleRunning(now, rt.config.settleChunkMs, SETTLE_BATCH)) === SETTLE_BATCH);
  while ((await rt.store.releaseUnbonded(now, SETTLE_BATCH)) === SETTLE_BATCH);
}

export function marketTasks(rt: MarketDeps): PeriodicTask[] {
  const enabled = rt.config.market;
  return [
    new PeriodicTask(rt, { what: 'market epoch', everyMs: rt.config.marketEpochMs, enabled, pass: () => marketEpoch(rt) }),
    // Check at a fraction of the chunk, so no attempt waits much more than one chunk to be paid.
    new PeriodicTask(rt, { what: 'settlement pass', everyMs: Math.max(50, Math.floor(rt.config.settleChunkMs / 4)), enabled, pass: () => settlementPass(rt) }),
  ];
}
