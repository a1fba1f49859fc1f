/**
 * GET /v1/provider/status (issue 16): what a provider needs at a glance, for its own account only: its nodes
 * (status, proof, GPUs, stake, pay per node), its asks, and its earnings paid and held per asset.
 */
import { ACCOUNTS, GpuxError } from '@gpux/core';
import { ASSETS, PROVIDER_STATUS_MAX_NODES, type ProviderStatusResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { nodeView, reputationView } from '../views.js';
import { stakeView } from './stake.js';

type ProviderDeps = Needs<'clock' | 'config' | 'index' | 'store'>;

/** `accountId`: an operator may read any provider's (the dashboard's node page shows its provider's asks and pay). */
export async function providerStatus(rt: ProviderDeps, p: Principal, accountId?: string): Promise<ProviderStatusResponse> {
  if (accountId !== undefined && accountId !== p.accountId && p.role !== 'operator') {
    throw new GpuxError('FORBIDDEN', `only operators read another account's provider status; drop accountId to read your own (${p.accountId})`);
  }
  const account = accountId ?? p.accountId;
  const found = await rt.store.providerNodes(account, PROVIDER_STATUS_MAX_NODES + 1);
  const nodes = found.slice(0, PROVIDER_STATUS_MAX_NODES);
  const [reps, earned, held, asks] = await Promise.all([
    rt.store.getReputations(nodes.map((n) => n.id)),
    rt.store.providerEarnings(account),
    rt.store.pendingPayOf(account),
    rt.store.listAsks(account),
  ]);
  const repOf = new Map(reps.map((r) => [r.nodeId, r]));
  const now = rt.clock.now();
  // One stake read per node: bounded by PROVIDER_STATUS_MAX_NODES (and GPUX_MAX_NODES_PER_PROVIDER).
  const stakes = await Promise.all(nodes.map((n) => rt.store.getStake(n.id)));
  const earnings = await Promise.all(
    ASSETS.map(async (asset) => {
      const h = held.find((x) => x.asset === asset);
      return {
        asset,
        paid: earned.filter((e) => e.asset === asset).reduce((sum, e) => sum + e.paid, 0),
        held: h?.amount ?? 0,
        heldJobs: h?.jobs ?? 0,
        nextWindowClosesAt: h?.nextWindowClosesAt ?? null,
        available: await rt.store.getBalance(ACCOUNTS.wallet(account), asset),
      };
    }),
  );
  return {
    accountId: account,
    market: rt.config.market,
    nodes: nodes.map((n, i) => ({
      node: nodeView(n, rt.index, reputationView(repOf.get(n.id), now)),
      stake: stakeView(stakes[i] as NonNullable<(typeof stakes)[number]>),
      paid: earned.filter((e) => e.nodeId === n.id && e.paid > 0).map((e) => ({ asset: e.asset, amount: e.paid })),
    })),
    truncated: found.length > nodes.length,
    asks: asks.map((a) => ({ providerId: a.providerId, class: a.marketClass, pricePerGpuHour: a.pricePerGpuHour, updatedAt: a.updatedAt })),
    earnings,
  };
}
