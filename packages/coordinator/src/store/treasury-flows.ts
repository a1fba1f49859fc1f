/**
 * The treasury's running in/out totals per (asset, transfer kind) (migration 0014), and the audit budget
 * read from them (core trust/audit-budget.ts). postTransferIn counts every posting to the treasury in the
 * transfer's own transaction, right after it moved the treasury's balance row: every writer of an asset's
 * flow rows holds that balance row first, so a reader that locked it (treasuryCanFund) reads them stable.
 */
import { ACCOUNTS, type AuditBudget, amountFromDb, auditBudgetOf, DEFAULT_AUDIT_BUDGET_BPS, type Posting, type TransferKind, type TreasuryFlow } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { Database } from './schema.js';

/** Add the transfer's treasury postings (already summed per account and asset) to the flow totals. */
export async function countTreasuryFlowsIn(trx: Kysely<Database>, kind: TransferKind, postings: readonly Posting[]): Promise<void> {
  for (const p of postings) {
    if (p.account !== ACCOUNTS.treasury || p.amount === 0) continue;
    const amountIn = Math.max(0, p.amount);
    const amountOut = Math.max(0, -p.amount);
    await trx
      .insertInto('treasury_flows')
      .values({ asset: p.asset, kind, amount_in: amountIn, amount_out: amountOut })
      .onConflict((oc) =>
        oc.columns(['asset', 'kind']).doUpdateSet((eb) => ({
          amount_in: eb('treasury_flows.amount_in', '+', eb.ref('excluded.amount_in')),
          amount_out: eb('treasury_flows.amount_out', '+', eb.ref('excluded.amount_out')),
        })),
      )
      .execute();
  }
}

async function flowsIn(db: Kysely<Database>, asset?: Asset): Promise<TreasuryFlow[]> {
  const rows = await db
    .selectFrom('treasury_flows')
    .selectAll()
    .$if(asset !== undefined, (qb) => qb.where('asset', '=', asset as Asset))
    .orderBy('asset')
    .orderBy('kind')
    .execute();
  return rows.map((r) => ({
    asset: r.asset as Asset,
    kind: r.kind as TransferKind,
    in: amountFromDb(r.amount_in, `treasury inflow ${r.kind} of ${r.asset}`),
    out: amountFromDb(r.amount_out, `treasury outflow ${r.kind} of ${r.asset}`),
  }));
}

export function treasuryFlows(ctx: StoreContext): Promise<TreasuryFlow[]> {
  return flowsIn(ctx.db);
}

/** The audit budget of `asset` inside the caller's transaction (the caller holds the treasury's balance row). */
export async function auditBudgetIn(trx: Kysely<Database>, ctx: StoreContext, asset: Asset): Promise<AuditBudget> {
  return auditBudgetOf(asset, await flowsIn(trx, asset), auditBudgetBpsOf(ctx));
}

/** The share in force (StorePolicies.auditBudgetBps; all of the fee income by default). */
export function auditBudgetBpsOf(ctx: StoreContext): number {
  return ctx.auditBudgetBps ?? DEFAULT_AUDIT_BUDGET_BPS;
}
