/** `gpux offers`: what the network offers now (issue 16), like a marketplace search: GPU class, GPUs, price, region, reliability, proof. */
import { type OffersResponse, type OfferView, readAmountWithAsset } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg } from '../context.js';
import { usageError } from '../errors.js';
import { formatTable, type OutputFlags, outputOption, render } from '../output.js';
import { formatBps, money } from '../money-format.js';
import { NO_MARKET } from './market.js';

interface Flags extends OutputFlags {
  gpu?: string;
  count?: number;
  maxPrice?: string;
  region?: string;
  proven?: boolean;
  all?: boolean;
  limit: number;
  coordinator?: string;
  token?: string;
}

/** --max-price: "3", "2.5" or "2.5 USDC" → minor units (prices are quoted in USDC; credit prices alike). */
export function parseMaxPrice(text: string): number {
  const r = readAmountWithAsset(text, 'usdc');
  if (!r.ok) throw usageError(`--max-price ${r.message}`);
  return r.minor;
}

const yesNo = (b: boolean) => (b ? 'yes' : 'no');
const gpus = (o: OfferView) => (o.gpusPerNode === 0 ? '0 (cpu)' : `${o.freeGpus}/${o.gpusPerNode}`);

export function formatOffers(res: OffersResponse, wide = false): string {
  const head = res.market ? `prices per GPU-hour (cpu: per job-hour) as a job pays them, the network fee of ${formatBps(res.feeBps)} included\n` : NO_MARKET;
  if (res.offers.length === 0) return `${head}no offers match: no node that can take a job now fits these filters (--all lists the others too)\n`;
  const rows = formatTable(res.offers, [
    { header: 'CLASS', value: (o) => o.class },
    { header: 'GPUS FREE/TOTAL', value: gpus, align: 'right' },
    { header: 'NODES', value: (o) => o.nodes, align: 'right' },
    { header: `PRICE (${res.asset.toUpperCase()})`, value: (o) => (o.price === null ? null : money(o.price, res.asset, false)), align: 'right' },
    { header: 'REGION', value: (o) => o.region },
    { header: 'RELIABILITY', value: (o) => o.reliability.toFixed(2), align: 'right' },
    { header: 'PROVEN', value: (o) => yesNo(o.proven) },
    { header: 'ONLINE', value: (o) => yesNo(o.online) },
    ...(wide
      ? [
          { header: 'MODEL', value: (o: OfferView) => (o.model === null ? null : `${o.vendor} ${o.model}${o.vramGb === null ? '' : ` ${o.vramGb} GB`}`) },
          { header: 'CPU', value: (o: OfferView) => o.cpuCores, align: 'right' as const },
          { header: 'MEMORY', value: (o: OfferView) => `${o.memoryGb} GB`, align: 'right' as const },
          { header: 'TIER', value: (o: OfferView) => o.tier },
          { header: 'LOWEST CAP', value: (o: OfferView) => (o.lowestCap === null ? null : money(o.lowestCap, res.asset, false)), align: 'right' as const },
          { header: 'AVAILABLE', value: (o: OfferView) => (o.available ? 'yes' : `no: ${o.unavailable}`) },
        ]
      : []),
  ]);
  const more = res.truncated ? `${res.offers.length} of ${res.total} offers shown (--limit for more)\n` : '';
  const cap = res.market && wide ? 'a job whose cap is between LOWEST CAP and PRICE still runs there, at its cap\n' : '';
  return `${head}${rows}${more}${cap}`;
}

export function registerOffers(program: Command, io: Io): void {
  outputOption(
    connectionOptions(
      program
        .command('offers')
        .description('what the network offers now: GPU class, GPUs per node (free/total), price, region, reliability, proven; cheapest first')
        .option('--gpu <class>', 'a GPU class or model, e.g. H100, rtx4090 or nvidia-h100-80gb (cpu: CPU-only nodes)')
        .option('--count <n>', 'at least this many GPUs per node', intArg('--count', 0, 1024))
        .option('--max-price <price>', 'price at most this per GPU-hour, e.g. 3 or "3 USDC"')
        .option('--region <region>', 'only nodes in this region')
        .option('--proven', 'only nodes proven by the proof-of-hardware challenge')
        .option('--all', 'also nodes that cannot take a job now (offline, cordoned, not proven, no free stake), with the reason')
        .option('--limit <n>', 'at most this many rows (1-500)', intArg('--limit', 1, 500), 50),
    ),
  ).action(async (flags: Flags) => {
    const maxPrice = flags.maxPrice === undefined ? undefined : parseMaxPrice(flags.maxPrice);
    const res = await clientFor(io, flags, 'buyer').offers({
      ...(flags.gpu !== undefined ? { gpu: flags.gpu } : {}),
      ...(flags.count !== undefined ? { count: flags.count } : {}),
      ...(maxPrice !== undefined ? { maxPrice } : {}),
      ...(flags.region !== undefined ? { region: flags.region } : {}),
      ...(flags.proven ? { proven: true } : {}),
      ...(flags.all ? { all: true } : {}),
      limit: flags.limit,
    });
    render(io, flags, res, (wide) => formatOffers(res, wide));
  });
}
