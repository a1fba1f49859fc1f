/** `gpux market …`: index prices per GPU class with their change, utilization, supply and demand; price history. */
import { type ClassPrice, formatAmount, type MarketPricesResponse, type PricePoint } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg } from '../context.js';
import { formatDuration, formatTable, formatTime, outputOption, render } from '../output.js';
import { formatBps, money } from '../money-format.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

export const NO_MARKET = 'this coordinator runs without a market: jobs are free\n';

export function formatPrices(p: MarketPricesResponse, wide = false): string {
  if (!p.market) return NO_MARKET;
  let out = `fee ${formatBps(p.feeBps)} of each charge, target utilization ${formatBps(p.targetUtilizationBps)}, prices move at most ${formatBps(p.maxStepBps)} per ${formatDuration(p.epochMs)} epoch\n`;
  if (p.classes.length === 0) return `${out}no prices yet: no class has been priced (no nodes, or the first epoch has not run)\n`;
  out += formatTable(p.classes, [
    { header: 'CLASS', value: (c) => c.class },
    { header: 'PRICE/GPU-HOUR', value: (c) => money(c.price, c.asset), align: 'right' },
    { header: 'CHANGE', value: (c) => (c.previous === null ? 'new' : formatBps(c.changeBps, { signed: true })), align: 'right' },
    { header: 'CHANGE 24H', value: (c) => formatBps(c.change24hBps, { signed: true }), align: 'right' },
    { header: 'UTILIZATION', value: (c) => formatBps(c.utilizationBps), align: 'right' },
    { header: 'SUPPLY', value: (c) => c.supplyUnits, align: 'right' },
    { header: 'DEMAND', value: (c) => c.demandUnits, align: 'right' },
    { header: 'FLOOR', value: (c) => money(c.floor, c.asset), align: 'right' },
    ...(wide
      ? [
          { header: 'PREVIOUS', value: (c: ClassPrice) => (c.previous === null ? null : money(c.previous, c.asset)), align: 'right' as const },
          { header: 'EPOCH', value: (c: ClassPrice) => c.epoch, align: 'right' as const },
          { header: 'PRICED AT', value: (c: ClassPrice) => formatTime(c.at) },
        ]
      : []),
  ]);
  if (p.classes.some((c) => c.class === 'cpu')) out += 'cpu is priced per job-hour\n';
  return out;
}

/** Points carry no asset; both assets have 6 decimals, so the number reads the same in either. */
export function formatPriceHistory(points: readonly PricePoint[]): string {
  if (points.length === 0) return 'no price history yet\n';
  return formatTable(points, [
    { header: 'TIME', value: (pt) => formatTime(pt.at) },
    { header: 'CLASS', value: (pt) => pt.class },
    { header: 'EPOCH', value: (pt) => pt.epoch, align: 'right' },
    { header: 'PRICE/GPU-HOUR', value: (pt) => formatAmount(pt.price, 'usdc', { symbol: false }), align: 'right' },
    { header: 'UTILIZATION', value: (pt) => formatBps(pt.utilizationBps), align: 'right' },
    { header: 'SUPPLY', value: (pt) => pt.supplyUnits, align: 'right' },
    { header: 'DEMAND', value: (pt) => pt.demandUnits, align: 'right' },
  ]);
}

export function registerMarket(program: Command, io: Io): void {
  const market = program.command('market').description('GPU prices: the index per class, set each epoch by supply and demand');

  outputOption(connectionOptions(market.command('prices').description('index price per GPU class, its change, utilization, supply, demand and floor'))).action(async (flags: Flags) => {
    const res = await clientFor(io, flags, 'buyer').marketPrices();
    render(io, flags, res, (wide) => formatPrices(res, wide));
  });

  outputOption(
    connectionOptions(
      market
        .command('history')
        .description('index prices per epoch, oldest first')
        .option('--class <class>', 'one class, e.g. nvidia-h100-80gb or cpu (default: all)')
        .option('--limit <n>', 'at most this many points (1-5000)', intArg('--limit', 1, 5000), 500),
    ),
  ).action(async (flags: Flags & { class?: string; limit: number }) => {
    const res = await clientFor(io, flags, 'buyer').priceHistory({ class: flags.class, limit: flags.limit });
    render(io, flags, res, () => formatPriceHistory(res.points));
  });
}
