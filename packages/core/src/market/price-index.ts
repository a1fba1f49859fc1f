/**
 * The price index: each class's price per GPU-hour moves once per epoch with utilization against a target,
 * by at most `maxStepBps` (as EIP-1559's base fee moves at most 12.5% a block with block fullness), and
 * never below the class floor. Utilization counts demand, not only use: GPUs busy plus GPUs wanted by
 * queued jobs, over GPUs online. At the target the price holds; with no supply and no demand it holds.
 * Queued demand is bounded per buyer (`buyerDemandCap`), so one buyer's backlog cannot fill a class alone.
 */
import { BPS, mulDiv } from './arith.js';

export interface PricePolicy {
  /** Utilization the index steers to, basis points (8000 = 80%). */
  targetUtilizationBps: number;
  /** Most the price moves in one epoch, basis points (1250 = 12.5%). */
  maxStepBps: number;
}

/**
 * The index never rises above the largest cap a job may name (1,000,000.0 per GPU-hour, the spec's bound on
 * maxPricePerGpuHour): past it no job could clear anyway, and a class kept full for months would otherwise
 * climb 12.5% an epoch until its money products left the safe-integer range.
 */
export const MAX_INDEX_PRICE = 1_000_000_000_000;

export const DEFAULT_PRICE_POLICY: PricePolicy = { targetUtilizationBps: 8000, maxStepBps: 1250 };

/** Share of a class's supply one buyer's queued jobs may count as demand: half (basis points). */
export const BUYER_DEMAND_SHARE_BPS = 5000;

/**
 * The most queued demand one buyer counts for in a class: `shareBps` of the class's supply, rounded up, at
 * least 1 unit. GPUs the buyer is running on count in full as busy units; this bounds only what waits.
 */
export function buyerDemandCap(supplyUnits: number, shareBps = BUYER_DEMAND_SHARE_BPS): number {
  return Math.max(1, mulDiv(Math.max(0, Math.floor(supplyUnits)), shareBps, BPS, 'up'));
}

/** Demand over supply in basis points, capped at 2× the target (a class with demand and no supply counts as full). */
export function utilizationBps(demandUnits: number, supplyUnits: number, policy: PricePolicy = DEFAULT_PRICE_POLICY): number {
  const cap = 2 * policy.targetUtilizationBps;
  if (supplyUnits <= 0) return demandUnits > 0 ? cap : policy.targetUtilizationBps;
  return Math.min(cap, Math.round((demandUnits * BPS) / supplyUnits));
}

/**
 * The next epoch's price: price × (1 + maxStep × (u − target) / target), the fraction clamped to ±1.
 * A rise is at least 1 minor unit (so a tiny price can still climb), the floor holds, and MAX_INDEX_PRICE caps it.
 */
export function nextPrice(price: number, utilBps: number, floor: number, policy: PricePolicy = DEFAULT_PRICE_POLICY): number {
  const target = policy.targetUtilizationBps;
  const gap = Math.max(-target, Math.min(target, utilBps - target));
  if (gap === 0) return Math.max(price, floor);
  let delta = mulDiv(price, policy.maxStepBps * Math.abs(gap), BPS * target, 'down');
  if (gap > 0 && delta === 0) delta = 1;
  return Math.min(Math.max(floor, MAX_INDEX_PRICE), Math.max(floor, gap > 0 ? price + delta : price - delta));
}

/** Change between two prices in basis points (0 when there was no previous price). */
export function changeBps(previous: number | null, price: number): number {
  if (previous === null || previous === 0) return 0;
  return Math.round(((price - previous) * BPS) / previous);
}
