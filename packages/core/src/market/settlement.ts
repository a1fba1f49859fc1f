/**
 * What money a job and its attempts move. Units: a GPU job pays per GPU-hour for each GPU on each node; a
 * CPU-only job pays per job-hour (class `cpu`) on each node. Every product is exact (BigInt, arith.ts) and
 * every result a checked safe integer.
 *
 * - Hold at submission: cap × units × nodes × timeout, rounded up, so the hold covers the longest run. A cap
 *   whose hold (or the stake it needs) would pass 2^53 − 1 minor units is SPEC_INVALID, naming the largest
 *   cap that fits (`maxCapFor`).
 * - Charge of an attempt that has run `ms`: floor(price × units × ms / 1 h), capped at its timeout. Chunks
 *   are settled as differences of this cumulative charge, so settling in many chunks never charges more
 *   than settling once.
 * - Fee: the treasury's share carries its remainder per (provider, asset): a chunk charging c at f bps
 *   pays floor((c × f + carry) / 10000) and leaves the remainder as the new carry (< 10000). So a
 *   provider's fees over any sequence of charges are exactly floor(Σ c × f / 10000): many small charges pay
 *   what one large one would, the treasury never loses to rounding, and the provider keeps
 *   Σ c − floor(Σ c × f) ≥ Σ c × (1 − f), at least its ask (clearing.ts).
 * - Stake an attempt locks on its node: `stakeMultiple` (20; an integer 1..1000) × the attempt's longest charge.
 */
import { type JobSpec, priceUnit, unitsPhrase } from '@gpux/protocol';
import { GpuxError } from '../errors.js';
import { BPS, HOUR_MS, MAX_AMOUNT, mulDivBig, mulDivMany, toSafe } from './arith.js';

export const STAKE_MULTIPLE = 20;
/**
 * How long a node has to stop an attempt after its job's cancel is requested (GPUX_CANCEL_GRACE_MS): the
 * attempt is charged up to the cancel plus this, and ends then whether or not the node answers.
 */
export const CANCEL_GRACE_MS = 30_000;
export const MAX_STAKE_MULTIPLE = 1000;

/** Priced units per node: GPUs, or 1 for a CPU-only job. */
export function unitsOf(spec: Pick<JobSpec, 'resources'>): number {
  return Math.max(1, spec.resources.gpu.count);
}

export function nodesOf(spec: Pick<JobSpec, 'nodes'>): number {
  return spec.nodes ?? 1;
}

/** Throws unless the stake multiple is an integer from 1 to MAX_STAKE_MULTIPLE. */
export function checkStakeMultiple(multiple: number): number {
  if (!Number.isInteger(multiple) || multiple < 1 || multiple > MAX_STAKE_MULTIPLE) {
    throw new Error(`invariant: the stake multiple must be an integer from 1 to ${MAX_STAKE_MULTIPLE}, got ${multiple}`);
  }
  return multiple;
}

type HoldSpec = Pick<JobSpec, 'resources' | 'nodes' | 'timeoutSeconds'>;

/**
 * The largest cap per unit-hour whose escrow hold (cap × units × nodes × timeout) and whose stake lock
 * (multiple × cap × units × timeout) both stay within MAX_AMOUNT (itself at most MAX_AMOUNT).
 */
export function maxCapFor(spec: HoldSpec, multiple = STAKE_MULTIPLE): number {
  const units = BigInt(unitsOf(spec));
  const ms = BigInt(spec.timeoutSeconds) * 1000n;
  const max = BigInt(MAX_AMOUNT);
  const byHold = (max * BigInt(HOUR_MS)) / (units * BigInt(nodesOf(spec)) * ms);
  const byStake = ((max / BigInt(checkStakeMultiple(multiple))) * BigInt(HOUR_MS)) / (units * ms);
  const most = byHold < byStake ? byHold : byStake;
  return most > max ? MAX_AMOUNT : Number(most);
}

/**
 * The escrow a job holds: cap × units × nodes × timeout (rounded up). SPEC_INVALID (400) on
 * maxPricePerGpuHour when the hold or the stake the job needs would pass MAX_AMOUNT.
 */
export function holdFor(spec: HoldSpec, capPerUnitHour: number): number {
  const units = unitsOf(spec);
  const nodes = nodesOf(spec);
  const hold = mulDivBig([capPerUnitHour, units, nodes, spec.timeoutSeconds, 1000], HOUR_MS, 'up');
  const stake = BigInt(STAKE_MULTIPLE) * mulDivBig([capPerUnitHour, units, spec.timeoutSeconds, 1000], HOUR_MS, 'up');
  if (hold > BigInt(MAX_AMOUNT) || stake > BigInt(MAX_AMOUNT)) {
    const most = maxCapFor(spec);
    const what = hold > BigInt(MAX_AMOUNT) ? `its escrow hold (${hold} minor units)` : `the stake it needs on a node (${stake} minor units)`;
    throw new GpuxError('SPEC_INVALID', `a cap of ${capPerUnitHour} per ${priceUnit(spec.resources.gpu.count)} for ${unitsPhrase(spec.resources.gpu.count, units, nodes)} × ${spec.timeoutSeconds} s makes ${what} pass the largest amount, ${MAX_AMOUNT} minor units`, {
      problems: [
        {
          path: 'maxPricePerGpuHour',
          message: `must be at most ${most} (minor units) for this job's GPUs, nodes and timeoutSeconds; lower it, or ask for fewer GPUs, fewer nodes or a shorter timeout`,
        },
      ],
    });
  }
  return toSafe(hold);
}

/** Cumulative charge of one attempt after `ms` of running, never beyond its timeout. */
export function chargeFor(pricePerUnitHour: number, units: number, ms: number, timeoutSeconds: number): number {
  const billable = Math.max(0, Math.min(ms, timeoutSeconds * 1000));
  return mulDivMany([pricePerUnitHour, units, billable], HOUR_MS, 'down');
}

/** The treasury's part of a charge, alone (no carry): floor(charge × fee). */
export function feeOf(charge: number, feeBps: number): number {
  return mulDivMany([charge, feeBps], BPS, 'down');
}

/**
 * The fee of one charge with the provider's carried remainder: floor((charge × fee + carry) / 10000), and
 * the remainder to carry on (0 ≤ carry < 10000). Never more than the charge while feeBps ≤ 10000.
 */
export function feeWithCarry(charge: number, feeBps: number, carry: number): { fee: number; carry: number } {
  if (!Number.isInteger(carry) || carry < 0 || carry >= BPS) throw new Error(`invariant: fee carry ${carry} is not in [0, ${BPS})`);
  if (!Number.isInteger(feeBps) || feeBps < 0 || feeBps > BPS) throw new Error(`invariant: fee ${feeBps} bps is not in [0, ${BPS}]`);
  const num = BigInt(charge) * BigInt(feeBps) + BigInt(carry);
  return { fee: toSafe(num / BigInt(BPS)), carry: Number(num % BigInt(BPS)) };
}

/** The longest charge of one attempt (its whole timeout), rounded up. */
export function maxAttemptCharge(pricePerUnitHour: number, units: number, timeoutSeconds: number): number {
  return mulDivMany([pricePerUnitHour, units, timeoutSeconds, 1000], HOUR_MS, 'up');
}

export function stakeToLock(pricePerUnitHour: number, units: number, timeoutSeconds: number, multiple = STAKE_MULTIPLE): number {
  return toSafe(BigInt(checkStakeMultiple(multiple)) * BigInt(maxAttemptCharge(pricePerUnitHour, units, timeoutSeconds)));
}

export interface SettlementStep {
  /** Moved from the job's escrow in this step (what the buyer pays). */
  charge: number;
  /** Of which to the treasury. */
  fee: number;
  /** Of which to the provider. */
  provider: number;
  /** The provider's fee remainder after this step (feeWithCarry). */
  carry: number;
}

/**
 * The next chunk of an attempt: from what was already charged to the cumulative charge at `ms` of runtime,
 * limited to what the escrow still holds; its fee with the provider's carried remainder `carry`.
 */
export function settlementStep(
  q: { pricePerUnitHour: number; units: number; timeoutSeconds: number; feeBps: number },
  already: { charged: number; fee: number },
  ms: number,
  escrowLeft: number,
  carry = 0,
): SettlementStep {
  const total = Math.min(chargeFor(q.pricePerUnitHour, q.units, ms, q.timeoutSeconds), already.charged + Math.max(0, escrowLeft));
  const charge = Math.max(0, total - already.charged);
  if (charge === 0) return { charge: 0, fee: 0, provider: 0, carry };
  const f = feeWithCarry(charge, q.feeBps, carry);
  return { charge, fee: f.fee, provider: charge - f.fee, carry: f.carry };
}
