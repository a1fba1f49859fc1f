/** A provider's side: its live nodes (index nodes_provider_live) and the pay that reached its wallet, per asset and node. */
import { ACCOUNTS, amountFromDb, type NodeRecord, type ProviderEarningRecord } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import type { StoreContext } from './context.js';
import { nodeFromRow } from './rows.js';

export async function providerNodes(ctx: StoreContext, providerId: string, limit: number): Promise<NodeRecord[]> {
  const rows = await ctx.db
    .selectFrom('nodes')
    .selectAll()
    .where('provider_id', '=', providerId)
    .where('removed_at', 'is', null)
    .orderBy('id')
    .limit(Math.max(1, Math.floor(limit)))
    .execute();
  return rows.map(nodeFromRow);
}

/** Pay kinds: a settlement straight to the wallet (verification off), or held pay released to it. */
const PAY_KINDS = ['settlement', 'pay.release'];

/** Reads the provider's wallet postings (index ledger_postings_account), joined to their transfers by key. */
export async function providerEarnings(ctx: StoreContext, providerId: string): Promise<ProviderEarningRecord[]> {
  const rows = await ctx.db
    .selectFrom('ledger_postings as p')
    .innerJoin('ledger_transfers as t', 't.seq', 'p.transfer_seq')
    .select((eb) => ['p.asset', 't.node_id', eb.fn.sum<number | string>('p.amount').as('paid')])
    .where('p.account', '=', ACCOUNTS.wallet(providerId))
    .where('p.amount', '>', 0)
    .where('t.kind', 'in', PAY_KINDS)
    .groupBy(['p.asset', 't.node_id'])
    .orderBy('p.asset')
    .orderBy('t.node_id')
    .execute();
  return rows.map((r) => ({ asset: r.asset as Asset, nodeId: r.node_id, paid: amountFromDb(r.paid, `pay of ${providerId} in ${r.asset}`) }));
}
