/**
 * The money commands wired through main() against a canned HTTP server: which route, which token, which body
 * (decimals typed → minor units sent), what is printed; bad input fails before any request.
 */
import assert from 'node:assert/strict';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, type TestContext, test } from 'node:test';
import { main } from '../src/main.js';
import { argv, captureIo, tempDir } from './helpers.js';
import { AT, payout } from './money-fixtures.js';


interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  auth: string | undefined;
  body: unknown;
}

const transfer = (amount: number, account: string, kind: string) => ({
  id: 'tr-1',
  kind,
  at: AT,
  memo: '',
  jobId: null,
  attemptId: null,
  nodeId: null,
  reference: null,
  postings: [
    { account: 'world', asset: 'usdc', amount: -amount, balanceAfter: -amount },
    { account, asset: 'usdc', amount, balanceAfter: amount },
  ],
});
const stake = { nodeId: 'node-1', providerId: 'acc-1', asset: 'usdc', staked: 20_000_000, locked: 0, free: 15_000_000, unbonding: [{ id: 'unb-1', amount: 5_000_000, releaseAt: AT }] };

/** Answers by "METHOD path"; a function gets the request. */
const answers: Record<string, unknown | ((s: Seen) => unknown)> = {
  'GET /v1/wallet': { accountId: 'acc-1', balances: [{ asset: 'usdc', available: 1_500_000, inEscrow: 0, pendingPayout: 0 }] },
  'GET /v1/wallet/history': { entries: [], nextCursor: 'c-2' },
  'POST /v1/wallet/deposits': (s: Seen) => {
    const b = s.body as { amount: number; accountId?: string; reference?: string };
    return { transfer: transfer(b.amount, `wallet:${b.accountId ?? 'acc-1'}`, b.reference ? 'deposit' : 'mint') };
  },
  'POST /v1/wallet/withdrawals': { payout: payout() },
  'GET /v1/payouts': { payouts: [payout()] },
  'POST /v1/payouts/pay-1/complete': { payout: payout({ state: 'completed', reference: 'wire-9' }) },
  'POST /v1/market/asks': { asks: [] },
  'POST /v1/nodes/node-1/unstake': { stake },
  'GET /v1/market/prices': { market: false, feeBps: 0, targetUtilizationBps: 7_000, maxStepBps: 500, epochMs: 60_000, classes: [] },
  'GET /v1/jobs/job-1/bill': { jobId: 'job-1', asset: 'credit', market: true, capPerUnitHour: 1_000_000, held: 2_000_000, charged: 1_000_000, toProviders: 975_000, fee: 25_000, refunded: 1_000_000, inEscrow: 0, lines: [] },
};

async function coordinator(t: TestContext) {
  const seen: Seen[] = [];
  const server = createServer(async (req, res) => {
    let text = '';
    for await (const c of req) text += c;
    const url = new URL(req.url ?? '/', 'http://x');
    const s: Seen = { method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), auth: (req.headers as IncomingHttpHeaders).authorization, body: text ? JSON.parse(text) : undefined };
    seen.push(s);
    const a = answers[`${s.method} ${s.path}`];
    res.writeHead(a === undefined ? 404 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(a === undefined ? { error: { code: 'NOT_FOUND', message: 'no route' } } : typeof a === 'function' ? a(s) : a));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const env = { GPUX_HOME: tempDir(t), GPUX_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, GPUX_TOKEN: 'buyer-tok', GPUX_OPERATOR_TOKEN: 'op-tok' };
  const run = async (...args: string[]) => {
    const io = captureIo(env);
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  return { seen, run };
}

describe('gpux wallet', () => {
  test('deposit: a buyer mints to itself; --reference/--account use the operator token; decimals become minor units', async (t) => {
    const { seen, run } = await coordinator(t);
    const mint = await run('wallet', 'deposit', '12.5');
    assert.equal(mint.code, 0, mint.err);
    assert.deepEqual(seen[0], { method: 'POST', path: '/v1/wallet/deposits', query: {}, auth: 'Bearer buyer-tok', body: { asset: 'usdc', amount: 12_500_000 } });
    assert.equal(mint.out, 'minted 12.500000 USDC to account acc-1; balance now 12.500000 USDC (transfer tr-1)\n');

    const dep = await run('wallet', 'deposit', '0.000001', '--asset', 'credit', '--reference', 'wire-1', '--account', 'acc-2');
    assert.equal(dep.code, 0, dep.err);
    assert.equal(seen[1]?.auth, 'Bearer op-tok');
    assert.deepEqual(seen[1]?.body, { asset: 'credit', amount: 1, reference: 'wire-1', accountId: 'acc-2' });
    assert.match(dep.out, /^deposited 0\.000001 USDC to account acc-2/);
  });

  test('bad amounts and assets exit 2 before any request', async (t) => {
    const { seen, run } = await coordinator(t);
    const cases: [string[], RegExp][] = [
      [['wallet', 'deposit', '1.2345678'], /^error: AMOUNT "1\.2345678" has 7 decimals but USDC has 6: round it to at most 6 decimals\n$/],
      [['wallet', 'deposit', '-5'], /^error: AMOUNT must not be negative/],
      [['wallet', 'withdraw', 'ten', '--to', 'x'], /^error: AMOUNT "ten" is not a number/],
      [['wallet', 'deposit', '5', '--asset', 'eur'], /^error: --asset must be usdc or credit/],
      [['node', 'stake', 'add', 'node-1', '0'], /^error: AMOUNT must be more than 0/],
      [['node', 'price', 'set', 'cpu', '1,5'], /^error: PRICE "1,5" is not a number/],
      [['payout', 'list', '--state', 'paid'], /^error: --state must be pending, completed or rejected/],
    ];
    for (const [args, pattern] of cases) {
      const r = await run(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.match(r.err, pattern, args.join(' '));
      assert.equal(r.out, '');
    }
    assert.equal(seen.length, 0);
  });

  test('withdraw shows the pending payout; balance and history print tables and the next page', async (t) => {
    const { seen, run } = await coordinator(t);
    const w = await run('wallet', 'withdraw', '12.5', '--to', 'iban:DE00');
    assert.equal(w.code, 0, w.err);
    assert.deepEqual(seen[0]?.body, { asset: 'usdc', amount: 12_500_000, destination: 'iban:DE00' });
    assert.match(w.out, /^payout pay-1 pending: 12\.500000 USDC to iban:DE00 through the manual adapter\n/);

    const b = await run('wallet', 'balance');
    assert.equal(b.out, 'ASSET  AVAILABLE  IN ESCROW  PENDING PAYOUT\nUSDC    1.500000   0.000000        0.000000\n');
    const bj = await run('wallet', 'balance', '--json');
    assert.equal(JSON.parse(bj.out).balances[0].available, 1_500_000, '--json keeps the API’s minor units');

    const h = await run('wallet', 'history', '--asset', 'usdc', '--limit', '5');
    assert.deepEqual(seen.at(-1)?.query, { asset: 'usdc', limit: '5' });
    assert.equal(h.out, 'no wallet entries\nmore: gpux wallet history --cursor c-2 --asset usdc\n');
  });
});

describe('gpux node price / stake, market, payout, job bill', () => {
  test('node price set sends minor units or null; stake withdraw prints the release', async (t) => {
    const { seen, run } = await coordinator(t);
    const set = await run('node', 'price', 'set', 'nvidia-h100-80gb', '2.5');
    assert.equal(set.code, 0, set.err);
    assert.deepEqual(seen[0]?.body, { class: 'nvidia-h100-80gb', pricePerGpuHour: 2_500_000 });
    assert.equal(seen[0]?.auth, 'Bearer buyer-tok');
    assert.match(set.out, /^ask for nvidia-h100-80gb: 2\.500000 per GPU-hour after the fee/);
    await run('node', 'price', 'set', 'cpu', 'none');
    assert.deepEqual(seen[1]?.body, { class: 'cpu', pricePerGpuHour: null });

    const un = await run('node', 'stake', 'withdraw', 'node-1', '5');
    assert.equal(un.code, 0, un.err);
    assert.deepEqual(seen[2]?.body, { amount: 5_000_000 });
    assert.match(un.out, /^unbonding 5\.000000 USDC from node node-1: it returns to your wallet at 2024-01-02 03:04:05Z \(due\); 15\.000000 USDC stays free\n$/);
    // Issue 16: CPU-only work is priced per job-hour, not per GPU-hour.
    const cpu = await run('node', 'price', 'set', 'cpu', '0.05');
    assert.match(cpu.out, /^ask for cpu: 0\.050000 per job-hour after the fee, for CPU-only jobs on your nodes\n/);
  });

  test('market prices without a market; payout complete with the operator token; job bill', async (t) => {
    const { seen, run } = await coordinator(t);
    assert.equal((await run('market', 'prices')).out, 'this coordinator runs without a market: jobs are free\n');

    const done = await run('payout', 'complete', 'pay-1', '--reference', 'wire-9');
    assert.equal(done.code, 0, done.err);
    assert.equal(seen[1]?.auth, 'Bearer op-tok');
    assert.deepEqual(seen[1]?.body, { reference: 'wire-9' });
    assert.match(done.out, /completed, reference wire-9\n$/);

    const bill = await run('job', 'bill', 'job-1');
    assert.equal(bill.code, 0, bill.err);
    assert.match(bill.out, /^job: +job-1\nasset: +CREDIT\n/);
    assert.match(bill.out, /\n {2}fee: +0\.025000 CREDIT\n/);
  });
});
