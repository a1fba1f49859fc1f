/** The money routes of GpuxClient against the fake server: request shape (method, path, query, body) and parsing. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuxApiError, GpuxClient, GpuxClientError, GpuxResponseError } from '../src/index.js';
import { json, type RecordedRequest, startFakeServer } from './fake-server.js';

const AT = 1_700_000_000_000;

const payout = (o: Record<string, unknown> = {}) => ({
  id: 'pay-1',
  accountId: 'acc-1',
  asset: 'usdc',
  amount: 12_500_000,
  destination: 'iban:DE00',
  adapter: 'manual',
  state: 'pending',
  reference: null,
  reason: null,
  createdAt: AT,
  updatedAt: AT,
  ...o,
});
const stake = (o: Record<string, unknown> = {}) => ({
  nodeId: 'node-1',
  providerId: 'acc-1',
  asset: 'usdc',
  staked: 50_000_000,
  locked: 10_000_000,
  free: 40_000_000,
  unbonding: [{ id: 'unb-1', amount: 5_000_000, releaseAt: AT + 86_400_000 }],
  ...o,
});
const transfer = (o: Record<string, unknown> = {}) => ({
  id: 'tr-1',
  kind: 'mint',
  at: AT,
  memo: 'test funds',
  jobId: null,
  attemptId: null,
  nodeId: null,
  reference: null,
  postings: [
    { account: 'world', asset: 'usdc', amount: -100_000_000, balanceAfter: -100_000_000 },
    { account: 'wallet:acc-1', asset: 'usdc', amount: 100_000_000, balanceAfter: 100_000_000 },
  ],
  ...o,
});
const classPrice = {
  class: 'nvidia-h100-80gb',
  asset: 'usdc',
  price: 2_100_000,
  previous: 2_000_000,
  changeBps: 500,
  change24hBps: -120,
  floor: 500_000,
  utilizationBps: 8_250,
  supplyUnits: 8,
  demandUnits: 7,
  epoch: 42,
  at: AT,
};
const ask = { providerId: 'acc-1', class: 'nvidia-h100-80gb', pricePerGpuHour: 1_750_000, updatedAt: AT };

/** Canned answers by "METHOD path". */
const answers: Record<string, unknown> = {
  'GET /v1/wallet': { accountId: 'acc-1', balances: [{ asset: 'usdc', available: 87_500_000, inEscrow: 10_000_000, pendingPayout: 2_500_000 }] },
  'GET /v1/wallet/history': {
    entries: [{ transferId: 'tr-2', at: AT, kind: 'escrow.hold', asset: 'usdc', amount: -10_000_000, balanceAfter: 90_000_000, jobId: 'job-1', nodeId: null, memo: 'hold' }],
    nextCursor: 'c2',
  },
  'POST /v1/wallet/deposits': { transfer: transfer() },
  'POST /v1/wallet/withdrawals': { payout: payout() },
  'GET /v1/wallet/payouts': { payouts: [payout()] },
  'GET /v1/payouts': { payouts: [payout(), payout({ id: 'pay-2', accountId: 'acc-2' })] },
  'POST /v1/payouts/pay-1/complete': { payout: payout({ state: 'completed', reference: 'wire-77' }) },
  'POST /v1/payouts/pay-1/reject': { payout: payout({ state: 'rejected', reason: 'bad iban' }) },
  'GET /v1/nodes/node-1/stake': { stake: stake() },
  'POST /v1/nodes/node-1/stake': { stake: stake({ staked: 60_000_000, free: 50_000_000 }) },
  'POST /v1/nodes/node-1/unstake': { stake: stake() },
  'GET /v1/market/prices': { market: true, feeBps: 250, targetUtilizationBps: 7_000, maxStepBps: 500, epochMs: 60_000, classes: [classPrice] },
  'GET /v1/market/history': { points: [{ class: 'cpu', epoch: 1, at: AT, price: 100_000, utilizationBps: 0, supplyUnits: 2, demandUnits: 0 }] },
  'GET /v1/market/asks': { asks: [ask] },
  'POST /v1/market/asks': { asks: [] },
  'GET /v1/jobs/job-1/bill': {
    jobId: 'job-1',
    asset: 'usdc',
    market: true,
    capPerUnitHour: 3_000_000,
    held: 10_000_000,
    charged: 2_000_000,
    toProviders: 1_950_000,
    fee: 50_000,
    refunded: 8_000_000,
    inEscrow: 0,
    lines: [{ at: AT, kind: 'escrow.hold', transferId: 'tr-2', attemptId: null, nodeId: null, account: 'escrow:job-1', amount: -10_000_000, memo: 'hold' }],
  },
  'GET /v1/treasury': {
    feeBps: 250,
    assets: [{ asset: 'usdc', minted: 100_000_000, treasury: 50_000, wallets: 89_950_000, escrow: 0, stake: 10_000_000, pendingPayouts: 0, balanced: true }],
  },
  'GET /v1/ledger': { transfers: [transfer()], nextCursor: null },
};

async function fake(t: { after(fn: () => Promise<void>): void }) {
  const srv = await startFakeServer((req, res) => {
    const body = answers[`${req.method} ${req.url.pathname}`];
    if (body === undefined) return json(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.pathname}` } });
    json(res, 200, body);
  });
  t.after(() => srv.close());
  return { srv, client: new GpuxClient({ url: srv.url, token: 'tok' }) };
}

const last = (requests: RecordedRequest[]) => requests[requests.length - 1]!;
const query = (r: RecordedRequest) => Object.fromEntries(r.url.searchParams);

describe('money routes: wallet and payouts', () => {
  test('wallet and walletHistory: GET with only the given query parameters', async (t) => {
    const { srv, client } = await fake(t);
    const w = await client.wallet();
    assert.deepEqual(w.balances[0], { asset: 'usdc', available: 87_500_000, inEscrow: 10_000_000, pendingPayout: 2_500_000 });
    assert.equal(last(srv.requests).headers.authorization, 'Bearer tok');

    const h = await client.walletHistory({ asset: 'usdc', limit: 20 });
    assert.equal(h.entries[0]?.amount, -10_000_000);
    assert.equal(h.nextCursor, 'c2');
    assert.deepEqual(query(last(srv.requests)), { asset: 'usdc', limit: '20' });
    await client.walletHistory({ cursor: 'c2' });
    assert.deepEqual(query(last(srv.requests)), { cursor: 'c2' });
  });

  test('deposit and withdraw POST their body as given, amounts in minor units', async (t) => {
    const { srv, client } = await fake(t);
    const d = await client.deposit({ amount: 100_000_000, asset: 'credit', reference: 'wire-1', accountId: 'acc-2' });
    assert.equal(d.transfer.postings[1]?.amount, 100_000_000);
    assert.equal(last(srv.requests).method, 'POST');
    assert.deepEqual(last(srv.requests).body, { amount: 100_000_000, asset: 'credit', reference: 'wire-1', accountId: 'acc-2' });
    assert.equal(last(srv.requests).headers['content-type'], 'application/json');

    const w = await client.withdraw({ amount: 12_500_000, destination: 'iban:DE00' });
    assert.equal(w.payout.id, 'pay-1');
    assert.equal(w.payout.state, 'pending');
    assert.deepEqual(last(srv.requests).body, { amount: 12_500_000, destination: 'iban:DE00' });
  });

  test('payout listings and the manual adapter', async (t) => {
    const { srv, client } = await fake(t);
    assert.equal((await client.myPayouts()).payouts.length, 1);
    assert.deepEqual(query(last(srv.requests)), {});
    const all = await client.listPayouts({ state: 'pending', limit: 10 });
    assert.deepEqual(
      all.payouts.map((p) => p.accountId),
      ['acc-1', 'acc-2'],
    );
    assert.equal(last(srv.requests).url.pathname, '/v1/payouts');
    assert.deepEqual(query(last(srv.requests)), { state: 'pending', limit: '10' });

    const done = await client.completePayout('pay-1', 'wire-77');
    assert.equal(done.payout.reference, 'wire-77');
    assert.deepEqual(last(srv.requests).body, { reference: 'wire-77' });
    const rej = await client.rejectPayout('pay-1', 'bad iban');
    assert.equal(rej.payout.reason, 'bad iban');
    assert.deepEqual(last(srv.requests).body, { reason: 'bad iban' });
  });
});

describe('money routes: stake, market, bills, treasury, ledger', () => {
  test('stake: show, add and unstake by node id', async (t) => {
    const { srv, client } = await fake(t);
    const s = await client.nodeStake('node-1');
    assert.equal(s.stake.free, 40_000_000);
    assert.equal(s.stake.unbonding[0]?.releaseAt, AT + 86_400_000);
    assert.equal((await client.addStake('node-1', 10_000_000)).stake.staked, 60_000_000);
    assert.deepEqual(last(srv.requests).body, { amount: 10_000_000 });
    await client.unstake('node-1', 5_000_000);
    assert.equal(last(srv.requests).url.pathname, '/v1/nodes/node-1/unstake');
    assert.deepEqual(last(srv.requests).body, { amount: 5_000_000 });
  });

  test('prices, history and asks', async (t) => {
    const { srv, client } = await fake(t);
    const p = await client.marketPrices();
    assert.equal(p.market, true);
    assert.deepEqual(p.classes[0], classPrice);
    const h = await client.priceHistory({ class: 'cpu', limit: 3 });
    assert.equal(h.points[0]?.price, 100_000);
    assert.deepEqual(query(last(srv.requests)), { class: 'cpu', limit: '3' });
    assert.deepEqual((await client.myAsks()).asks, [ask]);

    await client.setAsk('nvidia-h100-80gb', 1_750_000);
    assert.deepEqual(last(srv.requests).body, { class: 'nvidia-h100-80gb', pricePerGpuHour: 1_750_000 });
    const removed = await client.setAsk('cpu', null);
    assert.deepEqual(removed.asks, []);
    assert.deepEqual(last(srv.requests).body, { class: 'cpu', pricePerGpuHour: null }, 'null is sent: it removes the ask');
  });

  test('job bill, treasury and ledger', async (t) => {
    const { srv, client } = await fake(t);
    const b = await client.jobBill('job-1');
    assert.equal(b.charged, b.toProviders + b.fee);
    assert.equal(b.lines[0]?.amount, -10_000_000);
    const tr = await client.treasury();
    assert.equal(tr.assets[0]?.balanced, true);
    const l = await client.ledger({ jobId: 'job-1', account: 'escrow:job-1', limit: 5 });
    assert.equal(l.transfers[0]?.postings.reduce((sum, p) => sum + p.amount, 0), 0);
    assert.deepEqual(query(last(srv.requests)), { limit: '5', jobId: 'job-1', account: 'escrow:job-1' });
  });
});

describe('money routes: errors', () => {
  test('a fractional, negative or unsafe amount fails before any request', async (t) => {
    const { srv, client } = await fake(t);
    await assert.rejects(client.deposit({ amount: 12.5 }), (e: unknown) => e instanceof GpuxClientError && /minor units.*got 12\.5.*parseAmount/.test(e.message));
    await assert.rejects(client.withdraw({ amount: -1, destination: 'x' }), GpuxClientError);
    await assert.rejects(client.addStake('node-1', 2 ** 53), GpuxClientError);
    await assert.rejects(client.unstake('node-1', Number.NaN), GpuxClientError);
    await assert.rejects(client.setAsk('cpu', 0.1), GpuxClientError);
    assert.equal(srv.requests.length, 0);
  });

  test('INSUFFICIENT_FUNDS comes back as a GpuxApiError; a float amount in a response breaks the protocol', async (t) => {
    const srv = await startFakeServer((req, res) => {
      if (req.url.pathname === '/v1/wallet/withdrawals') return json(res, 409, { error: { code: 'INSUFFICIENT_FUNDS', message: 'wallet has 1.000000 USDC available, 2.000000 USDC needed' } });
      json(res, 200, { accountId: 'acc-1', balances: [{ asset: 'usdc', available: 1.5, inEscrow: 0, pendingPayout: 0 }] });
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 't' });
    const err = await client.withdraw({ amount: 2_000_000, destination: 'x' }).catch((e: unknown) => e);
    assert.ok(err instanceof GpuxApiError);
    assert.equal(err.code, 'INSUFFICIENT_FUNDS');
    assert.equal(srv.requests.length, 1, 'a withdrawal is never retried');
    const bad = await client.wallet().catch((e: unknown) => e);
    assert.ok(bad instanceof GpuxResponseError);
    assert.deepEqual(
      bad.problems.map((p) => p.path),
      ['balances.0.available'],
    );
  });
});
