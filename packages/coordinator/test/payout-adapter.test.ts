/**
 * Withdrawals through a settlement adapter: the payout is durably pending before the adapter sees it; an
 * adapter that pays at once completes it, one that refuses returns the money, one that fails leaves it
 * pending for an operator. The ledger balances after each.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PayoutRecord, SettlementAdapter } from '@gpux/core';
import { call, type Harness, startHarness } from './helpers.js';

const USDC = 1_000_000;

describe('settlement adapters', () => {
  let h: Harness;
  let buyer: string;
  const seen: PayoutRecord[] = [];
  // A test adapter (the real ones pay a bank or a chain): the destination says what it does.
  const adapter: SettlementAdapter = {
    name: 'test-instant',
    submit: async (p) => {
      seen.push(p);
      if (p.destination.startsWith('ok:')) return { state: 'completed', reference: `paid-${p.id}` };
      if (p.destination.startsWith('bad:')) return { state: 'rejected', reason: 'unknown account' };
      throw new Error('the payment network is down');
    },
  };
  const available = async () => (await call(h.url, 'GET', '/v1/wallet', { token: buyer })).body.balances[0].available;
  const withdraw = (destination: string) => call(h.url, 'POST', '/v1/wallet/withdrawals', { token: buyer, body: { amount: USDC, destination } });

  before(async () => {
    h = await startHarness({ market: true, devMint: true }, { settlementAdapter: adapter });
    buyer = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 10 * USDC } })).status, 201);
  });
  after(() => h.close());

  test('an adapter that pays at once completes the payout with its reference', async () => {
    const r = await withdraw('ok:alice');
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.deepEqual([r.body.payout.state, r.body.payout.adapter, r.body.payout.reference], ['completed', 'test-instant', `paid-${r.body.payout.id}`]);
    assert.equal(seen.at(-1)?.state, 'pending', 'the adapter sees a payout that is already durable and pending');
    assert.equal(await available(), 9 * USDC);
  });

  test('a refusal returns the amount to the wallet', async () => {
    const r = await withdraw('bad:nobody');
    assert.deepEqual([r.body.payout.state, r.body.payout.reason], ['rejected', 'unknown account']);
    assert.equal(await available(), 9 * USDC);
  });

  test('an adapter failure leaves the payout pending; the operator settles it', async () => {
    const r = await withdraw('boom:x');
    assert.equal(r.status, 201);
    assert.equal(r.body.payout.state, 'pending');
    assert.equal(await available(), 8 * USDC);
    const done = await call(h.url, 'POST', `/v1/payouts/${r.body.payout.id}/reject`, { token: h.operator, body: { reason: 'network down, retry later' } });
    assert.equal(done.body.payout.state, 'rejected');
    assert.equal(await available(), 9 * USDC);
    const t = (await call(h.url, 'GET', '/v1/treasury', { token: h.operator })).body.assets[0];
    assert.deepEqual([t.minted, t.balanced], [9 * USDC, true]);
  });
});
