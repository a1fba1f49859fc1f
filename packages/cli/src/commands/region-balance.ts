/**
 * `gpux region balance` (issue 15, operator token): inter-region clearing per peer and asset (GET
 * /v1/federation/balance). Positive: this region owes the peer (jobs the peer ran for it); negative: the peer owes
 * this region. Each balance nets to zero with the peer's own balance for this region once the open jobs end.
 */
import { ASSET_SYMBOL, type ClearingBalanceView, type RegionBalanceResponse } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io } from '../context.js';
import { money } from '../money-format.js';
import { type Column, formatTable, outputOption, render } from '../output.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

export const BALANCE_MEANING = 'positive: this region owes the peer (it ran jobs for this region); negative: the peer owes this region (this region ran jobs for it)';

/** What the peer may still draw on its credit line here: the limit less what it owes already. */
const creditLeft = (b: ClearingBalanceView): number => Math.max(0, b.creditLimit + Math.min(0, b.balance));

export function formatRegionBalance(res: RegionBalanceResponse, wide: boolean): string {
  if (res.balances.length === 0) return `region ${res.region}: no peers and no clearing: add a peer with gpux region peer add URL --key KEY\n`;
  const columns: Column<ClearingBalanceView>[] = [
    ...(wide ? [{ header: 'PEER ID', value: (b: ClearingBalanceView) => b.peerId }] : []),
    { header: 'PEER', value: (b) => b.peer },
    { header: 'REGION', value: (b) => b.region },
    { header: 'ASSET', value: (b) => ASSET_SYMBOL[b.asset] },
    { header: 'BALANCE', value: (b) => money(b.balance, b.asset, false), align: 'right' },
    { header: 'CREDIT LIMIT', value: (b) => money(b.creditLimit, b.asset, false), align: 'right' },
    ...(wide ? [{ header: 'CREDIT LEFT', value: (b: ClearingBalanceView) => money(creditLeft(b), b.asset, false), align: 'right' as const }] : []),
    { header: 'SENT', value: (b) => b.jobsSent, align: 'right' },
    { header: 'RECEIVED', value: (b) => b.jobsReceived, align: 'right' },
    { header: 'OPEN', value: (b) => b.open, align: 'right' },
  ];
  let out = `region ${res.region}: clearing with each peer\n\n${formatTable(res.balances, columns)}\n`;
  out += `${BALANCE_MEANING}.\n`;
  out += "Each balance nets to zero with the peer's own balance once open jobs end";
  // Counts are per peer, repeated on each of its asset rows: count each peer once.
  const perPeer = new Map(res.balances.map((b) => [b.peerId, b]));
  const open = [...perPeer.values()].reduce((n, b) => n + b.open, 0);
  const jobs = [...perPeer.values()].reduce((n, b) => n + b.jobsSent + b.jobsReceived, 0);
  if (jobs === 0) out += '.\nno clearing yet: no job has been forwarded either way\n';
  else out += open > 0 ? ` (${open} forwarded job${open === 1 ? '' : 's'} still open).\n` : ' (none open now).\n';
  return out;
}

export function registerRegionBalance(region: Command, io: Io): void {
  outputOption(
    connectionOptions(region.command('balance').description("inter-region clearing: what this region owes each peer (or is owed), per asset, with jobs sent, received and open")),
  ).action(async (flags: Flags) => {
    const res = await clientFor(io, flags, 'operator').regionBalance();
    render(io, flags, res, (wide) => formatRegionBalance(res, wide));
  });
}
