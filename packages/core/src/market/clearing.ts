/**
 * The clearing rule. A provider's ask is what it wants to *earn* per GPU-hour; the network adds its fee on
 * top, so the lowest price a node can be paid is its gross ask, ceil(ask / (1 − fee)). A job's cap is its
 * maxPricePerGpuHour (or the market price when it submitted, see `marketCap`). A placement's lower bound is
 *
 *     low = max(class floor, gross ask)        — or max(class floor, index) for a node without an ask
 *
 * The job may run on the node only when low ≤ cap, and then pays
 *
 *     price = min(cap, max(index, low))
 *
 * per GPU-hour: the class index when both sides accept it, else the nearest bound. So a buyer never pays
 * more than its cap, a provider never earns less than its ask (to the minor unit; see settlement.ts), a
 * node without an ask is paid at least the index, and nothing in a market clears below the class floor
 * (which is > 0, so no placement is free and every placement locks stake).
 */
import { BPS, mulDiv } from './arith.js';

/** The lowest price per unit-hour at which a provider with this ask earns its ask after the fee. */
export function grossAsk(ask: number, feeBps: number): number {
  if (feeBps >= BPS) throw new Error(`invariant: fee ${feeBps} bps leaves nothing for providers`);
  return mulDiv(ask, BPS, BPS - feeBps, 'up');
}

/** What a class trades at now: its index and its floor, per unit-hour. */
export interface ClassQuote {
  index: number;
  floor: number;
}

/** The lowest price a node clears at: the class floor, and its gross ask, or the index when it has no ask. */
export function lowestPrice(q: ClassQuote & { grossAsk: number | undefined }): number {
  return Math.max(q.floor, q.grossAsk ?? q.index);
}

/** The price with a node's gross ask already computed (the capacity index holds gross asks); null: no clearing. */
export function clearAt(q: ClassQuote & { grossAsk: number | undefined; cap: number }): number | null {
  const low = lowestPrice(q);
  if (low > q.cap) return null;
  return Math.min(q.cap, Math.max(q.index, low));
}

/**
 * The price the attempt pays per unit-hour, or null when the node's lower bound is above the job's cap.
 * `ask`: the provider's (net) ask, undefined when it has none for the class.
 */
export function clearingPrice(q: { index: number; floor: number; ask: number | undefined; cap: number; feeBps: number }): number | null {
  return clearAt({ index: q.index, floor: q.floor, cap: q.cap, grossAsk: q.ask === undefined ? undefined : grossAsk(q.ask, q.feeBps) });
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
