/** Exact integer arithmetic for money: products go through BigInt, results must be safe integers. */

/** a × b / d rounded down or up, exactly; throws if the result is not a safe integer. Inputs are safe integers. */
export function mulDiv(a: number, b: number, d: number, round: 'down' | 'up' = 'down'): number {
  if (d <= 0) throw new Error(`invariant: mulDiv by ${d}`);
  const num = BigInt(a) * BigInt(b);
  const den = BigInt(d);
  let q = num / den;
  const r = num % den;
  if (r !== 0n && (round === 'up') === num > 0n) q += num > 0n ? 1n : -1n;
  return toSafe(q);
}

export function toSafe(v: bigint): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`invariant: amount ${v} exceeds 2^53`);
  return Number(v);
}

/** Throws unless n is a safe integer (and, unless `signed`, not negative). */
export function assertAmount(n: number, what: string, signed = false): void {
  if (!Number.isSafeInteger(n) || (!signed && n < 0)) throw new Error(`invariant: ${what} must be a${signed ? '' : ' non-negative'} safe integer, got ${n}`);
}

export const BPS = 10_000;
export const HOUR_MS = 3_600_000;
