/**
 * The clearing rule. A provider's ask is what it wants to *earn* per GPU-hour; the network adds its fee on
 * top, so the lowest price a node can be paid is its gross ask, ceil(ask / (1 − fee)). A job's cap is its
 * maxPricePerGpuHour (or the market price when it submitted, see `marketCap`). The job may run on a node
 * only when gross ask ≤ cap, and then pays
 *
 *     price = min(cap, max(index, gross ask))
 *
 * per GPU-hour: the class index when both sides accept it, else the nearest bound. So a buyer never pays
 * more than its cap, and a provider never earns less than its ask (to the minor unit; see settlement.ts).
 */
import { BPS, mulDiv } from './arith.js';

/** The lowest price per unit-hour at which a provider with this ask earns its ask after the fee. */
export function grossAsk(ask: number, feeBps: number): number {
  if (feeBps >= BPS) throw new Error(`invariant: fee ${feeBps} bps leaves nothing for providers`);
  return mulDiv(ask, BPS, BPS - feeBps, 'up');
}

/** The price the attempt pays per unit-hour, or null when the node's gross ask is above the job's cap. */
export function clearingPrice(q: { index: number; ask: number; cap: number; feeBps: number }): number | null {
  const floor = grossAsk(q.ask, q.feeBps);
  if (floor > q.cap) return null;
  return Math.min(q.cap, Math.max(q.index, floor));
}

/**
 * The cap of a job that names no maxPricePerGpuHour: the highest index price among the classes it would
 * accept, plus one epoch's largest step, so a job submitted just before a rise still clears. undefined when
 * no class on the network fits the job (the caller asks the buyer to name a cap).
 */
export function marketCap(acceptedIndexPrices: readonly number[], maxStepBps: number): number | undefined {
  if (acceptedIndexPrices.length === 0) return undefined;
  const top = Math.max(...acceptedIndexPrices);
  return top + mulDiv(top, maxStepBps, BPS, 'up');
}
