/**
 * Migration 0003: the market and the ledger. FROZEN once it lands; add 0004-… instead.
 * - jobs.pay_*: what the job may cost (asset, cap per unit-hour, units, escrow held);
 * - attempts.price_* and settled_*: the attempt's clearing price, provider, fee, stake lock, and what it
 *   has settled so far (charge, fee, runtime);
 * - nodes.provider_id: the account that owns the node;
 * - ledger_transfers / ledger_postings / ledger_balances: the double-entry ledger (balances are kept in
 *   the transaction that posts, so "no balance below zero" is one conditional update);
 * - payouts, unbondings, asks, market_prices.
 */
import type { Kysely } from 'kysely';
import type { Migration } from './types.js';

export const migration0003: Migration = {
  name: '0003-market',
  async up(db: Kysely<unknown>, dialect): Promise<void> {
    const s = db.schema;
    const addColumns = async (table: string, cols: [string, 'text' | 'bigint' | 'integer', boolean?][]) => {
      for (const [name, type, zero] of cols) {
        await s
          .alterTable(table)
          .addColumn(name, type, (c) => (zero ? c.notNull().defaultTo(0) : c))
          .execute();
      }
    };
    await addColumns('jobs', [
      ['pay_asset', 'text'],
      ['pay_cap', 'bigint'],
      ['pay_units', 'integer'],
      ['pay_held', 'bigint'],
    ]);
    await addColumns('attempts', [
      ['price_asset', 'text'],
      ['price_per_unit_hour', 'bigint'],
      ['price_units', 'integer'],
      ['price_fee_bps', 'integer'],
      ['price_provider_id', 'text'],
      ['price_stake_lock', 'bigint'],
      ['price_class', 'text'],
      ['settled_charged', 'bigint', true],
      ['settled_fee', 'bigint', true],
      ['settled_ms', 'bigint', true],
    ]);
    await addColumns('nodes', [['provider_id', 'text']]);

    const serial = (t: ReturnType<typeof s.createTable>, col: string) =>
      dialect === 'postgres'
        ? t.addColumn(col, 'bigint', (c) => c.primaryKey().generatedByDefaultAsIdentity())
        : t.addColumn(col, 'integer', (c) => c.primaryKey().autoIncrement());

    await serial(s.createTable('ledger_transfers'), 'seq')
      .addColumn('id', 'text', (c) => c.notNull().unique())
      .addColumn('kind', 'text', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('memo', 'text', (c) => c.notNull())
      .addColumn('job_id', 'text')
      .addColumn('attempt_id', 'text')
      .addColumn('node_id', 'text')
      .addColumn('reference', 'text')
      .execute();
    await s.createIndex('ledger_transfers_job').on('ledger_transfers').columns(['job_id', 'seq']).execute();

    await serial(s.createTable('ledger_postings'), 'id')
      .addColumn('transfer_seq', 'bigint', (c) => c.notNull())
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('balance_after', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('ledger_postings_account').on('ledger_postings').columns(['account', 'asset', 'id']).execute();
    await s.createIndex('ledger_postings_transfer').on('ledger_postings').columns(['transfer_seq']).execute();

    await s
      .createTable('ledger_balances')
      .addColumn('account', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('balance', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('ledger_balances_pk', ['account', 'asset'])
      .execute();

    await s
      .createTable('payouts')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('account_id', 'text', (c) => c.notNull())
      .addColumn('asset', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('destination', 'text', (c) => c.notNull())
      .addColumn('adapter', 'text', (c) => c.notNull())
      .addColumn('state', 'text', (c) => c.notNull())
      .addColumn('reference', 'text')
      .addColumn('reason', 'text')
      .addColumn('created_at', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .execute();
    await s.createIndex('payouts_account').on('payouts').columns(['account_id', 'created_at']).execute();
    await s.createIndex('payouts_state').on('payouts').columns(['state', 'created_at']).execute();

    await s
      .createTable('unbondings')
      .addColumn('id', 'text', (c) => c.primaryKey())
      .addColumn('node_id', 'text', (c) => c.notNull())
      .addColumn('provider_id', 'text', (c) => c.notNull())
      .addColumn('amount', 'bigint', (c) => c.notNull())
      .addColumn('release_at', 'bigint', (c) => c.notNull())
      .addColumn('released_at', 'bigint')
      .execute();
    await s.createIndex('unbondings_due').on('unbondings').columns(['released_at', 'release_at']).execute();
    await s.createIndex('unbondings_node').on('unbondings').columns(['node_id']).execute();

    await s
      .createTable('asks')
      .addColumn('provider_id', 'text', (c) => c.notNull())
      .addColumn('market_class', 'text', (c) => c.notNull())
      .addColumn('price', 'bigint', (c) => c.notNull())
      .addColumn('updated_at', 'bigint', (c) => c.notNull())
      .addPrimaryKeyConstraint('asks_pk', ['provider_id', 'market_class'])
      .execute();

    await s
      .createTable('market_prices')
      .addColumn('market_class', 'text', (c) => c.notNull())
      .addColumn('epoch', 'bigint', (c) => c.notNull())
      .addColumn('at', 'bigint', (c) => c.notNull())
      .addColumn('price', 'bigint', (c) => c.notNull())
      .addColumn('utilization_bps', 'integer', (c) => c.notNull())
      .addColumn('supply_units', 'integer', (c) => c.notNull())
      .addColumn('demand_units', 'integer', (c) => c.notNull())
      .addPrimaryKeyConstraint('market_prices_pk', ['market_class', 'epoch'])
      .execute();
    await s.createIndex('market_prices_at').on('market_prices').columns(['at']).execute();
  },
};
