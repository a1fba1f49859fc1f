/**
 * The CLI's money helpers, shared by the wallet, market, payout, node and job commands: asset and amount
 * parsing with usage errors that say how to write them, amounts with and without sign, basis points.
 */
import { ASSET_DECIMALS, ASSET_SYMBOL, ASSETS, type Asset, formatAmount, readAmount } from '@gpux/protocol';
import { usageError } from './errors.js';

export const ASSET_OPTION_HELP = `usdc or credit (default usdc)`;

/** --asset: usdc or credit (any case); a usage error otherwise. */
export function parseAssetOption(raw: string | undefined, flag = '--asset'): Asset {
  if (raw === undefined) return 'usdc';
  const a = raw.trim().toLowerCase();
  if (!(ASSETS as readonly string[]).includes(a)) throw usageError(`${flag} must be ${ASSETS.join(' or ')}, got "${raw}"`);
  return a as Asset;
}

/**
 * A decimal amount typed by a person ("12.5") → minor units, or a usage error that says what is wrong and
 * how to write it (protocol's readAmount: the rules spec files use too). `label` names the argument (AMOUNT,
 * PRICE). Zero is refused unless `allowZero`.
 */
export function parseAmountArg(label: string, text: string, asset: Asset, opts: { allowZero?: boolean } = {}): number {
  const r = readAmount(text, asset);
  if (!r.ok) throw usageError(`${label} ${r.message}`);
  if (r.minor === 0 && !opts.allowZero) throw usageError(`${label} must be more than 0, got "${text}": write a positive amount like 12.5 (${ASSET_SYMBOL[asset]}, at most ${ASSET_DECIMALS[asset]} decimals)`);
  return r.minor;
}

/** "12.500000 USDC"; `symbol: false` drops the symbol for columns whose header names the asset. */
export const money = (minor: number, asset: Asset, symbol = true): string => formatAmount(minor, asset, { symbol });

/** An amount with its sign always shown: "+12.500000", "-0.250000", "0.000000". */
export function signedMoney(minor: number, asset: Asset, symbol = false): string {
  return `${minor > 0 ? '+' : ''}${formatAmount(minor, asset, { symbol })}`;
}

/** Basis points as a percentage with two decimals, exactly: 8250 → "82.50%"; `signed` adds "+" to gains. */
export function formatBps(bps: number, opts: { signed?: boolean } = {}): string {
  const abs = Math.abs(bps);
  const sign = bps < 0 ? '-' : opts.signed && bps > 0 ? '+' : '';
  return `${sign}${Math.trunc(abs / 100)}.${String(abs % 100).padStart(2, '0')}%`;
}
