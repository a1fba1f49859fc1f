/**
 * The bench's job and what the market needs to carry it: its price cap, and the stake a node must bond to
 * hold as many of these at once as its CPU allows (core market/settlement.ts stakeToLock).
 */
import { stakeToLock, unitsOf } from '@gpux/core';
import { JobSpec, type JobSpecInput } from '@gpux/protocol';

/** CPU cores a bench job takes: small, so one agent holds hundreds at once. */
const NOOP_CPU = 0.01;

/**
 * Most a bench job pays per job-hour (CPU-only jobs are priced per job-hour): 0.10 USDC, twice the `cpu`
 * class's catalogue price, so every placement clears at the index without the cap following the market.
 */
export const NOOP_CAP = 100_000;

/**
 * A job that does nothing. 0.01 CPU core each, so one agent (which advertises its host's cores) can hold
 * hundreds at once and the scheduler never runs out of capacity: the bench measures dispatch, not packing.
 * The cap is explicit so a market run holds the same escrow and locks the same stake on every machine.
 */
export const NOOP_SPEC: JobSpecInput = {
  name: 'noop',
  image: 'bench/noop',
  command: ['true'],
  resources: { cpuCores: NOOP_CPU },
  maxPricePerGpuHour: NOOP_CAP,
};

/** Margin over the stake a node's full load of bench jobs locks: the bench must never wait for stake. */
const STAKE_MARGIN = 2;

/** Stake (USDC minor units) a node with `cpuCores` bonds so it can hold every bench job it has room for. */
export function noopStakePerNode(cpuCores: number): number {
  const spec = JobSpec.parse(NOOP_SPEC);
  const perAttempt = stakeToLock(NOOP_CAP, unitsOf(spec), spec.timeoutSeconds);
  return perAttempt * Math.ceil(cpuCores / NOOP_CPU) * STAKE_MARGIN;
}

/** A buyer's deposit: 1,000,000 USDC, far beyond the escrow of any run (each job holds its cap for its timeout). */
export const BUYER_FUNDS = 1_000_000_000_000;
