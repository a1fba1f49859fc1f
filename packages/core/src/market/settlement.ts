/**
 * What money a job and its attempts move. Units: a GPU job pays per GPU-hour for each GPU on each node; a
 * CPU-only job pays per job-hour (class `cpu`) on each node.
 *
 * - Hold at submission: cap × units × nodes × timeout, rounded up, so the hold covers the longest run.
 * - Charge of an attempt that has run `ms`: floor(price × units × ms / 1 h), capped at its timeout. Chunks
 *   are settled as differences of this cumulative charge, and the fee as differences of
 *   floor(charge × fee), so settling in many chunks never pays or charges more than settling once.
 * - Stake an attempt locks on its node: `stakeMultiple` (20) × the attempt's longest charge.
 */
import type { JobSpec } from '@gpux/protocol';
import { BPS, HOUR_MS, mulDiv } from './arith.js';

export const STAKE_MULTIPLE = 20;

/** Priced units per node: GPUs, or 1 for a CPU-only job. */
export function unitsOf(spec: Pick<JobSpec, 'resources'>): number {
  return Math.max(1, spec.resources.gpu.count);
}

export function nodesOf(spec: Pick<JobSpec, 'nodes'>): number {
  return spec.nodes ?? 1;
}

/** The escrow a job holds: cap × units × nodes × timeout (rounded up). */
export function holdFor(spec: Pick<JobSpec, 'resources' | 'nodes' | 'timeoutSeconds'>, capPerUnitHour: number): number {
  return mulDiv(capPerUnitHour * unitsOf(spec) * nodesOf(spec), spec.timeoutSeconds * 1000, HOUR_MS, 'up');
}

/** Cumulative charge of one attempt after `ms` of running, never beyond its timeout. */
export function chargeFor(pricePerUnitHour: number, units: number, ms: number, timeoutSeconds: number): number {
  const billable = Math.max(0, Math.min(ms, timeoutSeconds * 1000));
  return mulDiv(pricePerUnitHour * units, billable, HOUR_MS, 'down');
}

/** The treasury's part of a cumulative charge. */
export function feeOf(charge: number, feeBps: number): number {
  return mulDiv(charge, feeBps, BPS, 'down');
}

/** The longest charge of one attempt (its whole timeout), rounded up. */
export function maxAttemptCharge(pricePerUnitHour: number, units: number, timeoutSeconds: number): number {
  return mulDiv(pricePerUnitHour * units, timeoutSeconds * 1000, HOUR_MS, 'up');
}

export function stakeToLock(pricePerUnitHour: number, units: number, timeoutSeconds: number, multiple = STAKE_MULTIPLE): number {
  return multiple * maxAttemptCharge(pricePerUnitHour, units, timeoutSeconds);
}

export interface SettlementStep {
  /** Moved from the job's escrow in this step (what the buyer pays). */
  charge: number;
  /** Of which to the treasury. */
  fee: number;
  /** Of which to the provider. */
  provider: number;
}

/**
 * The next chunk of an attempt: from what was already charged (and fee taken) to the cumulative totals at
 * `ms` of runtime, limited to what the escrow still holds.
 */
export function settlementStep(
  q: { pricePerUnitHour: number; units: number; timeoutSeconds: number; feeBps: number },
  already: { charged: number; fee: number },
  ms: number,
  escrowLeft: number,
): SettlementStep {
  const total = Math.min(chargeFor(q.pricePerUnitHour, q.units, ms, q.timeoutSeconds), already.charged + Math.max(0, escrowLeft));
  const charge = Math.max(0, total - already.charged);
  const fee = Math.max(0, Math.min(charge, feeOf(total, q.feeBps) - already.fee));
  return { charge, fee, provider: charge - fee };
}
