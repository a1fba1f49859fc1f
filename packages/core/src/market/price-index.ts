/**
 * The price index: each class's price per GPU-hour moves once per epoch with utilization against a target,
 * by at most `maxStepBps` (as EIP-1559's base fee moves at most 12.5% a block with block fullness), and
 * never below the class floor. Utilization counts demand, not only use: GPUs busy plus GPUs wanted by
 * queued jobs, over GPUs online. At the target the price holds; with no supply and no demand it holds.
 */
import { BPS, mulDiv } from './arith.js';

export interface PricePolicy {
  /** Utilization the index steers to, basis points (8000 = 80%). */
  targetUtilizationBps: number;
  /** Most the price moves in one epoch, basis points (1250 = 12.5%). */
  maxStepBps: number;
}

export const DEFAULT_PRICE_POLICY: PricePolicy = { targetUtilizationBps: 8000, maxStepBps: 1250 };

/** Demand over supply in basis points, capped at 2× the target (a class with demand and no supply counts as full). */
export function utilizationBps(demandUnits: number, supplyUnits: number, policy: PricePolicy = DEFAULT_PRICE_POLICY): number {
  const cap = 2 * policy.targetUtilizationBps;
  if (supplyUnits <= 0) return demandUnits > 0 ? cap : policy.targetUtilizationBps;
  return Math.min(cap, Math.round((demandUnits * BPS) / supplyUnits));
}

/**
 * The next epoch's price: price × (1 + maxStep × (u − target) / target), the fraction clamped to ±1.
 * A rise is at least 1 minor unit (so a tiny price can still climb), and the floor holds.
 */
export function nextPrice(price: number, utilBps: number, floor: number, policy: PricePolicy = DEFAULT_PRICE_POLICY): number {
  const target = policy.targetUtilizationBps;
  const gap = Math.max(-target, Math.min(target, utilBps - target));
  if (gap === 0) return Math.max(price, floor);
  let delta = mulDiv(price, policy.maxStepBps * Math.abs(gap), BPS * target, 'down');
  if (gap > 0 && delta === 0) delta = 1;
  return Math.max(floor, gap > 0 ? price + delta : price - delta);
}

/** Change between two prices in basis points (0 when there was no previous price). */
export function changeBps(previous: number | null, price: number): number {
  if (previous === null || previous === 0) return 0;
  return Math.round(((price - previous) * BPS) / previous);
}
