/** GET /v1/provider/status: a provider's own side in one answer (issue 16): nodes with their stake, asks, earnings. */
import { z } from 'zod';
import { AskView, StakeView } from './market-api.js';
import { Amount, Asset } from './money.js';
import { NodeView } from './node.js';

/** The most nodes one status answer lists (more: `truncated`); a provider holds at most GPUX_MAX_NODES_PER_PROVIDER live ones. */
export const PROVIDER_STATUS_MAX_NODES = 1000;

export const ProviderStatusQuery = z.object({
  accountId: z.string().min(1).max(128).optional().describe('Operators: the provider account to show (default: your own); others may name only their own'),
});
export type ProviderStatusQuery = z.input<typeof ProviderStatusQuery>;

export const ProviderNodeStatus = z.object({
  node: NodeView,
  stake: StakeView,
  paid: z.array(z.object({ asset: Asset, amount: Amount })).describe('Pay that reached your wallet for this node\'s work, per asset'),
});
export type ProviderNodeStatus = z.infer<typeof ProviderNodeStatus>;

export const ProviderEarnings = z.object({
  asset: Asset,
  paid: Amount.describe('Pay that reached your wallet: settlements paid at once and held pay released (before withdrawals)'),
  held: Amount.describe("Pay earned but held until each job's verification passes or its dispute window closes"),
  heldJobs: z.number().int().min(0),
  nextWindowClosesAt: z.number().int().nullable().describe('The soonest dispute window among the held jobs closes then (epoch ms)'),
  available: Amount.describe('Your wallet now (withdrawable; stake comes from it)'),
});
export type ProviderEarnings = z.infer<typeof ProviderEarnings>;

export const ProviderStatusResponse = z.object({
  accountId: z.string(),
  market: z.boolean().describe('false: this coordinator runs without a market (no stake, asks or pay)'),
  nodes: z.array(ProviderNodeStatus).describe('Your nodes that are not removed, by id'),
  truncated: z.boolean().describe(`true: you have more than ${PROVIDER_STATUS_MAX_NODES} nodes and only the first are listed`),
  asks: z.array(AskView),
  earnings: z.array(ProviderEarnings).describe('Per asset'),
});
export type ProviderStatusResponse = z.infer<typeof ProviderStatusResponse>;
