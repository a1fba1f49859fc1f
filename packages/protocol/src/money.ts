/**
 * Money on the wire: assets and amounts. Every amount is an integer count of minor units (6 decimals for
 * both assets: 1 USDC = 1,000,000), a JSON number that must be a safe integer; never a float.
 */
import { z } from 'zod';

export const ASSETS = ['usdc', 'credit'] as const;
export const Asset = z.enum(ASSETS).describe('usdc: a USD stablecoin unit; credit: the network\'s own credit (1 credit prices like 1 USDC)');
export type Asset = z.infer<typeof Asset>;

export const ASSET_DECIMALS: Record<Asset, number> = { usdc: 6, credit: 6 };
export const ASSET_SYMBOL: Record<Asset, string> = { usdc: 'USDC', credit: 'CREDIT' };

/** A non-negative amount in minor units. */
export const Amount = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe('Integer minor units (6 decimals: 1000000 = 1.0)');
/** A signed amount in minor units (ledger postings, wallet history). */
export const SignedAmount = z.number().int().min(-Number.MAX_SAFE_INTEGER).max(Number.MAX_SAFE_INTEGER);

/** 1500000 usdc → "1.500000 USDC" (exact: integer arithmetic, no floats). */
export function formatAmount(minor: number, asset: Asset, opts: { symbol?: boolean } = {}): string {
  const d = ASSET_DECIMALS[asset];
  const neg = minor < 0;
  const digits = BigInt(Math.abs(minor)).toString().padStart(d + 1, '0');
  const text = `${neg ? '-' : ''}${digits.slice(0, -d)}.${digits.slice(-d)}`;
  return opts.symbol === false ? text : `${text} ${ASSET_SYMBOL[asset]}`;
}

/**
 * "1.5" / "1.500000" / "2" → minor units, exactly. Throws an Error whose message says what is wrong
 * (not a number, too many decimals, negative, too large).
 */
export function parseAmount(text: string, asset: Asset): number {
  const d = ASSET_DECIMALS[asset];
  const m = /^\s*(\d+)(?:\.(\d*))?\s*$/.exec(text);
  if (!m) throw new Error(`"${text}" is not an amount: write a non-negative decimal like 12.5`);
  const frac = m[2] ?? '';
  if (frac.length > d) throw new Error(`"${text}" has ${frac.length} decimals; ${ASSET_SYMBOL[asset]} has ${d}`);
  const minor = BigInt(m[1] ?? '0') * 10n ** BigInt(d) + BigInt(frac.padEnd(d, '0') || '0');
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) throw new Error(`"${text}" is too large`);
  return Number(minor);
}
