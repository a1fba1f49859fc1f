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
  const r = readAmount(text, asset);
  if (!r.ok) throw new Error(r.message);
  return r.minor;
}

/** `reason` tells a caller with its own wording which rule failed ('format': not a plain decimal). */
export type AmountReading = { ok: true; minor: number } | { ok: false; message: string; reason: 'format' | 'negative' | 'decimals' | 'range' | 'asset' };

/**
 * A decimal amount a person wrote ("12.5", "7.", ".25") → minor units of `asset`, exactly (BigInt, never a
 * float), or what is wrong and how to write it. The one set of rules for every amount the CLI and spec files
 * read; messages start with the text or "must", so a caller can put the argument's name in front.
 */
export function readAmount(text: string, asset: Asset): AmountReading {
  const d = ASSET_DECIMALS[asset];
  const sym = ASSET_SYMBOL[asset];
  const example = `like 12.5 (${sym}, at most ${d} decimals)`;
  const t = text.trim().replace(/^\./, '0.');
  if (/^[-−]/.test(t)) return { ok: false, reason: 'negative', message: `must not be negative, got "${text}": write a positive amount ${example}` };
  const m = /^(\d+)(?:\.(\d*))?$/.exec(t);
  if (!m) return { ok: false, reason: 'format', message: `"${text}" is not a number: write a decimal amount ${example}; use a dot for decimals, no thousands separators or units` };
  const frac = m[2] ?? '';
  if (frac.length > d) return { ok: false, reason: 'decimals', message: `"${text}" has ${frac.length} decimals but ${sym} has ${d}: round it to at most ${d} decimals` };
  const minor = BigInt(m[1] ?? '0') * 10n ** BigInt(d) + BigInt(frac.padEnd(d, '0') || '0');
  if (minor > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false, reason: 'range', message: `"${text}" is too large: at most ${formatAmount(Number.MAX_SAFE_INTEGER, asset)}` };
  return { ok: true, minor: Number(minor) };
}

/**
 * An amount that may name its asset: "2.5", "2.5 USDC", "2.5 credit". A named asset must be `asset` (the one
 * that pays); the number is read by readAmount.
 */
export function readAmountWithAsset(text: string, asset: Asset): AmountReading {
  const named = /^(.*?)\s*([A-Za-z]+)\s*$/.exec(text);
  if (!named) return readAmount(text, asset);
  const symbol = (named[2] ?? '').toLowerCase();
  const other = ASSETS.find((a) => a === symbol || ASSET_SYMBOL[a].toLowerCase() === symbol);
  if (other === undefined) return { ok: false, reason: 'asset', message: `"${text}" names "${named[2]}", which is not an asset: write a decimal like 2.5 or 2.5 ${ASSET_SYMBOL[asset]} (assets: ${ASSETS.map((a) => ASSET_SYMBOL[a]).join(', ')})` };
  if (other !== asset) return { ok: false, reason: 'asset', message: `"${text}" is in ${ASSET_SYMBOL[other]} but the job pays in ${ASSET_SYMBOL[asset]}: set asset: ${other}, or write the amount in ${ASSET_SYMBOL[asset]}` };
  return readAmount(named[1] ?? '', asset);
}

/** What a price is per: a GPU-hour, or a job-hour for a CPU-only job (its one priced unit is the job). */
export const priceUnit = (gpus: number): string => (gpus > 0 ? 'GPU-hour' : 'job-hour');

/** A count with its noun, singular or plural: plural(1, 'node') → "1 node", plural(2, 'GPU') → "2 GPUs". */
export const plural = (n: number, one: string, many = `${one}s`): string => `${n} ${n === 1 ? one : many}`;

/**
 * The priced units of a hold or charge for a memo: "2 GPUs × 1 node" (a CPU-only job has one unit, the job,
 * so only its nodes are named).
 */
export const unitsPhrase = (gpus: number, units: number, nodes?: number): string =>
  [gpus > 0 ? plural(units, 'GPU') : null, nodes === undefined ? null : plural(nodes, 'node')].filter((s) => s !== null).join(' × ') || plural(units, 'job');
