/**
 * Inter-region clearing as operators read it (issue 15, GET /v1/federation/balance): per peer and asset, the
 * balance of `clearing:<peer id>` (positive: this region owes the peer; negative: the peer owes this region), the
 * credit line (GPUX_PEER_CREDIT), and the jobs forwarded either way, with those still open. A pair's two balances
 * net to zero once its open jobs have ended.
 *
 * Every current peer has a row, a zero one before any clearing (in usdc, the default asset); a removed peer keeps
 * its rows while it has a balance or jobs, named by its id (its name and region went with it).
 */
import { ASSETS, type ClearingBalanceView, type RegionBalanceResponse } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
export type RegionBalanceDeps = Needs<'config' | 'store'>;

export async function regionBalance(rt: RegionBalanceDeps): Promise<RegionBalanceResponse> {
  const [balances, counts, peers] = await Promise.all([rt.store.clearingBalances(), rt.store.forwardCounts(), rt.store.listPeers()]);
  const peerById = new Map(peers.map((p) => [p.id, p]));
  const countsById = new Map(counts.map((c) => [c.peerId, c]));
  const creditLimit = rt.config.peerCredit;

  const row = (peerId: string, asset: ClearingBalanceView['asset'], balance: number): ClearingBalanceView => {
    const peer = peerById.get(peerId);
    const c = countsById.get(peerId);
    return {
      peerId,
      peer: peer?.name ?? peerId,
      region: peer?.summary?.region ?? null,
      asset,
      balance,
      creditLimit,
      jobsSent: c?.sent ?? 0,
      jobsReceived: c?.received ?? 0,
      open: c?.open ?? 0,
    };
  };

  const rows = balances.map((b) => row(b.peerId, b.asset, b.balance));
  const withRows = new Set(balances.map((b) => b.peerId));
  // A peer with jobs but no clearing account (no market, or nothing charged yet), and every current peer: one zero row.
  for (const peerId of [...counts.map((c) => c.peerId), ...peers.map((p) => p.id)]) {
    if (withRows.has(peerId)) continue;
    withRows.add(peerId);
    rows.push(row(peerId, 'usdc', 0));
  }
  // By peer name, then the assets in their usual order (usdc first).
  rows.sort((a, b) => a.peer.localeCompare(b.peer) || a.peerId.localeCompare(b.peerId) || ASSETS.indexOf(a.asset) - ASSETS.indexOf(b.asset));
  return { region: rt.config.region, balances: rows };
}
