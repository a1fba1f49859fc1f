/**
 * Migration 0014: the audit budget and held pay (issue 11; TRUST.md "Who pays for verification"). FROZEN
 * once it lands.
 * - treasury_flows: per (asset, transfer kind) the treasury's lifetime money in and out (minor units, both
 *   ≥ 0), updated by postTransferIn in the transaction of every transfer that posts to the treasury; core
 *   trust/audit-budget.ts reads fee income, funding and audit spending from it without scanning the
 *   ledger. Backfilled here from the treasury's existing postings.
 * - ledger_balances_held_pay: a partial index of the pending:<attempt> balances above zero, so a
 *   provider's held pay (pendingPayOf) reads only the pay held now, never every attempt that ever held pay.
 */
import { type Kysely, sql } from 'kysely';
import type { Migration } from './types.js';

export const migration0014: Migration = {
  name: '0014-audit-budget',
  async up(db: Kysely<unknown>, _dialect): Promise<void> {
    await db.schema
      .createTable('treasury_flows')
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('amount_in', 'bigint', (c) => c.notNull().defaultTo(0))
      .addColumn('amount_out', 'bigint', (c) => c.notNull().defaultTo(0))
      .addPrimaryKeyConstraint('treasury_flows_pk', ['asset', 'kind'])
      .execute();
    await sql`
      insert into treasury_flows (asset, kind, amount_in, amount_out)
      select p.asset, t.kind,
        sum(case when p.amount > 0 then p.amount else 0 end),
        sum(case when p.amount < 0 then 0 - p.amount else 0 end)
      from ledger_postings p join ledger_transfers t on t.seq = p.transfer_seq
      where p.account = 'treasury'
      group by p.asset, t.kind`.execute(db);
    // The same literal terms as store/wallet.ts HELD_PAY: SQLite uses a partial index only when the query
    // repeats its WHERE terms. LIKE, not a range: PostgreSQL's collation may not order ':' before ';'.
    await sql`create index ledger_balances_held_pay on ledger_balances (account, asset) where balance > 0 and account like 'pending:%'`.execute(db);
  },
};
