/**
 * `gpux region list` and `gpux region peer add|remove` (issue 15, operator token): this coordinator's region and
 * the peer regions it exchanges signed summaries with: status, round trip, last seen, and each one's free GPUs,
 * price index, queue depth and placement wait. `gpux region balance`: region-balance.ts.
 */
import { formatAmount, type ListPeersResponse, type PeerView, type RegionSummary, shortFingerprint } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { type Column, formatAge, formatDuration, formatTable, outputOption, render, toJson } from '../output.js';
import { registerRegionBalance } from './region-balance.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

const price = (minor: number) => formatAmount(minor, 'usdc', { symbol: false });

/** "nvidia-h100-80gb 3/4" per class with GPUs (free/total). */
export const freeGpus = (s: RegionSummary | null): string =>
  s === null
    ? '-'
    : s.classes
        .filter((c) => c.totalGpus > 0)
        .map((c) => `${c.class} ${c.freeGpus}/${c.totalGpus}`)
        .join(', ') || 'none';

/** "nvidia-h100-80gb 2.500000" per class with GPUs (per GPU-hour, USDC). */
export const prices = (s: RegionSummary | null): string =>
  s === null
    ? '-'
    : s.classes
        .filter((c) => c.totalGpus > 0)
        .map((c) => `${c.class} ${price(c.priceIndex)}`)
        .join(', ') || '-';

const wait = (s: RegionSummary | null): string => (s === null || s.placementWaitP50Ms === null ? '-' : formatDuration(s.placementWaitP50Ms));

export function formatRegions(res: ListPeersResponse, wide: boolean, now = Date.now()): string {
  const self = res.self;
  let out = `region ${self.region}  key ${self.keyFingerprint}\n`;
  out += `  free GPUs: ${freeGpus(self.summary)}; price index: ${prices(self.summary)}; queued ${self.summary.queueDepth}; placement wait p50 ${wait(self.summary)}\n`;
  if (res.peers.length === 0) return `${out}no peers: add one with gpux region peer add URL --key KEY\n`;
  const columns: Column<PeerView>[] = [
    ...(wide ? [{ header: 'ID', value: (p: PeerView) => p.id }] : []),
    { header: 'NAME', value: (p) => p.name },
    ...(wide ? [{ header: 'REGION', value: (p: PeerView) => p.summary?.region }] : []),
    { header: 'URL', value: (p) => p.url },
    { header: 'KEY', value: (p) => (wide ? p.keyFingerprint : shortFingerprint(p.keyFingerprint)) },
    { header: 'STATUS', value: (p) => p.status },
    { header: 'RTT', value: (p) => (p.rttMs === null ? null : `${p.rttMs}ms`), align: 'right' },
    { header: 'LAST SEEN', value: (p) => formatAge(p.lastSeenAt, now) },
    { header: 'FREE GPUS', value: (p) => freeGpus(p.summary) },
    { header: 'PRICE/GPU-HOUR', value: (p) => prices(p.summary) },
    { header: 'QUEUED', value: (p) => p.summary?.queueDepth, align: 'right' },
    { header: 'WAIT P50', value: (p) => wait(p.summary), align: 'right' },
    ...(wide
      ? [
          { header: 'FAILURES', value: (p: PeerView) => p.failures, align: 'right' as const },
          { header: 'SUMMARY AGE', value: (p: PeerView) => formatAge(p.summaryAt, now) },
        ]
      : []),
  ];
  out += `\n${formatTable(res.peers, columns)}`;
  for (const p of res.peers) if (p.lastError && p.status !== 'ok') out += `${p.name}: ${p.status}: ${p.lastError}\n`;
  return out;
}

/** A peer id, or its URL (as added, a trailing slash ignored) → the id. */
function peerIdOf(res: ListPeersResponse, idOrUrl: string): string {
  const byId = res.peers.find((p) => p.id === idOrUrl);
  if (byId) return byId.id;
  const url = idOrUrl.trim().replace(/\/+$/, '');
  const byUrl = res.peers.find((p) => p.url === url);
  if (byUrl) return byUrl.id;
  throw usageError(`no peer with the id or URL "${idOrUrl}": gpux region list shows them`);
}

export function registerRegion(program: Command, io: Io): void {
  const region = program.command('region').description('federation: this coordinator is a region; peer regions exchange signed summaries, run each other\'s jobs and keep clearing balances (operator token)');

  outputOption(connectionOptions(region.command('list').description('this region and its peers: status, round trip, last seen, free GPUs, prices, queue, wait'))).action(
    async (flags: Flags) => {
      const res = await clientFor(io, flags, 'operator').regionPeers();
      render(io, flags, res, (wide) => formatRegions(res, wide));
    },
  );

  registerRegionBalance(region, io);

  const peer = region.command('peer').description('add or remove a peer region');

  jsonOption(
    connectionOptions(
      peer
        .command('add')
        .description("peer with another region's coordinator; it must add this one too (gpux coordinator key show prints a key)")
        .argument('<url>', "the peer coordinator's base URL, e.g. https://eu.gpux.example")
        .requiredOption('--key <key>', "the peer's coordinator key: its fingerprint (64 hex) or public key (base64)")
        .option('--name <name>', 'a name for it (default: its host:port)'),
    ),
  ).action(async (url: string, flags: Flags & { key: string; name?: string }) => {
    const res = await clientFor(io, flags, 'operator').addPeer({ url, key: flags.key, ...(flags.name ? { name: flags.name } : {}) });
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`added peer ${res.peer.id} (${res.peer.name}) at ${res.peer.url}, key ${res.peer.keyFingerprint}; summaries are exchanged from the next pass\n`);
  });

  jsonOption(
    connectionOptions(peer.command('remove').description('stop peering: its summaries are refused from now on').argument('<id-or-url>', 'the peer id or URL (gpux region list)')),
  ).action(async (idOrUrl: string, flags: Flags) => {
    const client = clientFor(io, flags, 'operator');
    const id = peerIdOf(await client.regionPeers(), idOrUrl);
    const res = await client.removePeer(id);
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(`removed peer ${res.peer.id} (${res.peer.name}) at ${res.peer.url}\n`);
  });
}
