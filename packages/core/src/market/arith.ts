/**
 * Exact integer arithmetic for money: products go through BigInt, results must be safe integers. Every
 * amount the ledger holds is at most MAX_AMOUNT (2^53 − 1 minor units), so a product of amounts, prices,
 * counts and durations is never formed in floating point: it is a BigInt until it is checked.
 */

/** The largest amount of money anywhere (a balance, a total, a charge): 2^53 − 1 minor units. */
export const MAX_AMOUNT = Number.MAX_SAFE_INTEGER;
const MAX_BIG = BigInt(MAX_AMOUNT);

/** ∏ factors / d, exactly, rounded toward −∞ ('down') or +∞ ('up'), as a BigInt (unchecked). Inputs are safe integers. */
export function mulDivBig(factors: readonly number[], d: number, round: 'down' | 'up' = 'down'): bigint {
  if (d <= 0 || !Number.isSafeInteger(d)) throw new Error(`invariant: mulDiv by ${d}`);
  let num = 1n;
  for (const f of factors) {
    if (!Number.isSafeInteger(f)) throw new Error(`invariant: money factor ${f} is not a safe integer`);
    num *= BigInt(f);
  }
  const den = BigInt(d);
  let q = num / den;
  const r = num % den;
  if (r !== 0n && (round === 'up') === num > 0n) q += num > 0n ? 1n : -1n;
  return q;
}

/** ∏ factors / d rounded down or up, exactly; throws if the result is not a safe integer. */
export function mulDivMany(factors: readonly number[], d: number, round: 'down' | 'up' = 'down'): number {
  return toSafe(mulDivBig(factors, d, round));
}

/** a × b / d rounded down or up, exactly; throws if the result is not a safe integer. Inputs are safe integers. */
export function mulDiv(a: number, b: number, d: number, round: 'down' | 'up' = 'down'): number {
  return mulDivMany([a, b], d, round);
}

/** a + b, or a throw when the sum is not a safe integer. */
export function checkedAdd(a: number, b: number): number {
  return toSafe(BigInt(a) + BigInt(b));
}

export function toSafe(v: bigint): number {
  if (v > MAX_BIG || v < -MAX_BIG) throw new Error(`invariant: amount ${v} exceeds 2^53`);
  return Number(v);
}

/**
 * An integer read back from a database sum or column: a JS number, a bigint, or a decimal string
 * (PostgreSQL's sum(bigint) is numeric). Exact, or a throw: a total beyond 2^53 never reads as a wrong number.
 */
export function amountFromDb(v: number | bigint | string | null | undefined, what: string): number {
  if (v === null || v === undefined) return 0;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) throw new Error(`invariant: ${what} read as ${v}, not a safe integer (beyond 2^53 − 1 minor units)`);
    return v;
  }
  const big = typeof v === 'bigint' ? v : /^-?\d+$/.test(v.trim()) ? BigInt(v.trim()) : null;
  if (big === null) throw new Error(`invariant: ${what} read as "${v}", not an integer`);
  if (big > MAX_BIG || big < -MAX_BIG) throw new Error(`invariant: ${what} is ${big}, beyond 2^53 − 1 minor units`);
  return Number(big);
}

/** Throws unless n is a safe integer (and, unless `signed`, not negative). */
export function assertAmount(n: number, what: string, signed = false): void {
  if (!Number.isSafeInteger(n) || (!signed && n < 0)) throw new Error(`invariant: ${what} must be a${signed ? '' : ' non-negative'} safe integer, got ${n}`);
}

export const BPS = 10_000;
export const HOUR_MS = 3_600_000;
