/**
 * The market over HTTP, on a coordinator with a market and a signed fake agent: 402 with the shortfall,
 * test funds, stake gating placement, the clearing price, settlement to provider and treasury, the bill
 * line by line, refunds, payouts through the manual adapter, unbonding, the price index, and the ledger
 * invariants after it all. On SQLite and on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CLASS_CATALOGUE, chargeFor, feeOf, grossAsk, holdFor, stakeToLock } from '@gpux/core';
import { BillResponse, JobSpec, type JobSpecInput, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const USDC = 1_000_000;
const FEE_BPS = 500;

interface Database {
  /** A database URL; none: the harness's SQLite file. */
  db?: string;
  stop(): Promise<void>;
}

function marketOverHttp(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`market and ledger over HTTP: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let provider: string;
    let providerId: string;
    let agent: TestAgent;
    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const job = (over: Partial<JobSpecInput> = {}) => spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, ...over });

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), market: true, devMint: true, treasuryFeeBps: FEE_BPS, marketEpochMs: 100, settleChunkMs: 2000, unbondDelayMs: 200 });
      buyer = await h.buyer();
      provider = await h.buyer();
      providerId = (await get('/v1/whoami', provider)).body.accountId;
      agent = new TestAgent(h.url);
      const reg = await agent.register(undefined, provider);
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    test('a node registered with a provider token belongs to that provider; an unknown token is refused', async () => {
      const node = await get(`/v1/nodes/${agent.nodeId}`, h.operator);
      assert.equal(node.body.node.providerId, providerId);
      const stranger = new TestAgent(h.url);
      const bad = await stranger.register(undefined, 'gpux_not-a-real-token');
      assert.equal(bad.status, 401);
      // Since issue 10 item 2 a node registers with an enrollment token; an account token is refused either way.
      assert.match(bad.body.error.message, /provider token is unknown|enrollment/);
    });

    test('submitting without funds is 402 with the shortfall, and writes nothing', async () => {
      const res = await post('/v1/jobs', { spec: job() });
      assert.equal(res.status, 402, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'INSUFFICIENT_FUNDS');
      const held = holdFor(JobSpec.parse(job()), 3 * USDC);
      assert.match(res.body.error.message, new RegExp(`holds ${(held / USDC).toFixed(6)} USDC`));
      assert.match(res.body.error.message, /short 0\.500000 USDC|short \d+\.\d{6} USDC/);
      assert.match(res.body.error.message, /gpux wallet deposit/);
      assert.match(res.body.error.message, /\(cap 3\.000000 USDC per GPU-hour × 1 GPU × 1 node × 600 s\)/, 'singular units (issue 16)');
      assert.deepEqual((await get('/v1/jobs')).body.jobs, []);
      assert.equal((await get('/v1/ledger', h.operator)).body.transfers.length, 0);
    });

    test('minting needs a dev network or an operator with a reference; others are told why', async () => {
      const other = await post('/v1/wallet/deposits', { amount: 5, accountId: providerId });
      assert.equal(other.status, 403);
      assert.match(other.body.error.message, /only operators deposit into another account/);
      const bad = await post('/v1/wallet/deposits', { amount: -1 });
      assert.equal(bad.status, 400);
      assert.deepEqual(bad.body.error.problems?.[0]?.path, 'amount');
    });

    test('a paid job: hold, stake gate, clearing price, settlement, bill, refund', async () => {
      assert.equal((await post('/v1/wallet/deposits', { amount: 10 * USDC })).status, 201);
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC }, provider)).status, 201);
      const typo = await post('/v1/market/asks', { class: 'nvidia-h100-80g', pricePerGpuHour: 1 * USDC }, provider);
    assert.equal(typo.status, 400);
    assert.match(typo.body.error.problems[0].message, /did you mean nvidia-h100-80gb/);
    assert.equal((await post('/v1/market/asks', { class: 'nvidia-h100-80gb', pricePerGpuHour: 1 * USDC }, provider)).status, 200);

      const sub = await post('/v1/jobs', { spec: job() });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const held = holdFor(JobSpec.parse(job()), 3 * USDC);
      assert.deepEqual(sub.body.job.payment, { asset: 'usdc', capPerUnitHour: 3 * USDC, units: 1, held });
      const w1 = (await get('/v1/wallet')).body.balances.find((b: { asset: string }) => b.asset === 'usdc');
      assert.deepEqual(w1, { asset: 'usdc', available: 10 * USDC - held, inEscrow: held, pendingPayout: 0, heldForVerification: 0, heldJobs: 0, nextWindowClosesAt: null });

      // No stake yet: the node does not take it, and explain says why.
      assert.equal(WorkResponse.parse((await agent.work(300)).body).assignments.length, 0);
      const why = await get(`/v1/jobs/${jobId}/explain`);
      assert.ok(why.body.filters.some((f: { name: string; rejected: number }) => f.name === 'stake' && f.rejected === 1), JSON.stringify(why.body));

      const lock = stakeToLock(3 * USDC, 1, 600);
      const short = await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: 200 * USDC }, provider);
      assert.equal(short.status, 402, 'staking more than the wallet holds');
      const staked = await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: lock }, provider);
      assert.equal(staked.status, 200, JSON.stringify(staked.body));
      assert.equal(staked.body.stake.staked, lock);
      assert.equal((await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: 1 }, buyer)).status, 403, 'only the provider stakes its node');

      const work = await waitFor(async () => {
        const w = WorkResponse.parse((await agent.work(500)).body);
        return w.assignments.length > 0 ? w : undefined;
      }, 'the staked node takes the job');
      const attemptId = work.assignments[0]!.attemptId;
      // The lock follows the attempt's clearing price (not the cap): the staked lock at the cap covers it with room to spare.
      const placed = (await get(`/v1/jobs/${jobId}`)).body.attempts[0].price;
      const realLock = stakeToLock(placed.pricePerUnitHour, 1, 600);
      assert.ok(realLock > 0 && realLock <= lock);
      const stake = (await get(`/v1/nodes/${agent.nodeId}/stake`, provider)).body.stake;
      assert.deepEqual([stake.locked, stake.free], [realLock, lock - realLock]);
      const unstakeLocked = await post(`/v1/nodes/${agent.nodeId}/unstake`, { amount: lock - realLock + 1 }, provider);
      assert.equal(unstakeLocked.status, 402, 'locked stake does not unbond');

      assert.equal((await agent.start(attemptId)).status, 200);
      await new Promise((r) => setTimeout(r, 120));
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);

      const detail = (await get(`/v1/jobs/${jobId}`)).body;
      assert.equal(detail.job.state, 'succeeded');
      const a = detail.attempts[0];
      // The index moves every 100 ms here (down while the GPU idles, up while this job waits), so the price is the index of the
      // placement's epoch, bounded by the provider's gross ask and the buyer's cap.
      const price: number = a.price.pricePerUnitHour;
      assert.deepEqual([a.price.marketClass, a.price.providerId, a.price.units], ['nvidia-h100-80gb', providerId, 1]);
      assert.ok(price >= grossAsk(1 * USDC, FEE_BPS) && price <= 3 * USDC, `price ${price}`);
      const charge = chargeFor(price, 1, a.finishedAt - a.startedAt, 600);
      assert.equal(a.price.charged, charge);
      assert.ok(charge > 0);
      const fee = feeOf(charge, FEE_BPS);

      const bill = BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body);
      assert.deepEqual(
        { held: bill.held, charged: bill.charged, fee: bill.fee, toProviders: bill.toProviders, refunded: bill.refunded, inEscrow: bill.inEscrow },
        { held, charged: charge, fee, toProviders: charge - fee, refunded: held - charge, inEscrow: 0 },
      );
      assert.deepEqual(
        bill.lines.map((l) => [l.kind, l.account, l.amount]),
        [
          ['escrow.hold', `wallet:${bill.lines[0]?.account.slice(7)}`, -held],
          ['settlement', 'treasury', -fee],
          ['settlement', `wallet:${providerId}`, -(charge - fee)],
          ['escrow.release', bill.lines[0]?.account, held - charge],
        ].sort((x, y) => (x[0] === y[0] ? 0 : 0)),
      );
      const buyerWallet = (await get('/v1/wallet')).body.balances.find((b: { asset: string }) => b.asset === 'usdc');
      assert.deepEqual([buyerWallet.available, buyerWallet.inEscrow], [10 * USDC - charge, 0]);
      const providerWallet = (await get('/v1/wallet', provider)).body.balances.find((b: { asset: string }) => b.asset === 'usdc');
      assert.equal(providerWallet.available, 100 * USDC - lock + (charge - fee));
      const t = (await get('/v1/treasury', h.operator)).body.assets.find((x: { asset: string }) => x.asset === 'usdc');
      assert.deepEqual([t.treasury, t.minted, t.balanced], [fee, 110 * USDC, true]);
    });

    test('cancelling a queued job returns all of its hold', async () => {
      const before = (await get('/v1/wallet')).body.balances[0].available;
      const sub = await post('/v1/jobs', { spec: job({ resources: { gpu: { count: 4 } } }) });
      assert.equal(sub.status, 201);
      assert.equal((await get('/v1/wallet')).body.balances[0].available, before - sub.body.job.payment.held);
      assert.equal((await post(`/v1/jobs/${sub.body.job.id}/cancel`, {})).status, 200);
      assert.equal((await get('/v1/wallet')).body.balances[0].available, before);
      const bill = BillResponse.parse((await get(`/v1/jobs/${sub.body.job.id}/bill`)).body);
      assert.deepEqual([bill.held, bill.charged, bill.refunded, bill.inEscrow], [sub.body.job.payment.held, 0, sub.body.job.payment.held, 0]);
    });

    test('a job without a cap takes the market price; one that matches no class on the network is told to name a cap', async () => {
      const none = await post('/v1/jobs', { spec: spec({ resources: { gpu: { count: 1, models: ['MI300X'] } } }) });
      assert.equal(none.status, 400, JSON.stringify(none.body));
      assert.equal(none.body.error.code, 'SPEC_INVALID');
      assert.equal(none.body.error.problems[0].path, 'maxPricePerGpuHour');
      // Two GPUs: no node here has them, so it stays queued (and is cancelled below).
      const twoGpus = spec({ resources: { gpu: { count: 2 } }, timeoutSeconds: 60 });
      const market = await post('/v1/jobs', { spec: twoGpus });
      assert.equal(market.status, 201, JSON.stringify(market.body));
      const pay = market.body.job.payment;
      const floor = CLASS_CATALOGUE['nvidia-h100-80gb']!.floor;
      assert.ok(pay.capPerUnitHour >= floor + Math.ceil((floor * 1250) / 10_000), 'the cap is an index of the class plus one step');
      assert.equal(pay.held, holdFor(JobSpec.parse(twoGpus), pay.capPerUnitHour));
      assert.equal((await post(`/v1/jobs/${market.body.job.id}/cancel`, {})).status, 200);
    });

    test('a job paid in network credit settles in credit', async () => {
      assert.equal((await post('/v1/wallet/deposits', { asset: 'credit', amount: 5 * USDC })).status, 201);
      const sub = await post('/v1/jobs', { spec: job({ asset: 'credit' }) });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const work = await waitFor(async () => {
        await agent.heartbeat(); // the node is online only while it heartbeats (the index follows the store)
        const w = WorkResponse.parse((await agent.work(500)).body);
        return w.assignments.find((a) => a.jobId === jobId);
      }, 'the node takes the credit job');
      await agent.start(work.attemptId);
      await new Promise((r) => setTimeout(r, 50));
      await agent.result(work.attemptId, report('succeeded'));
      const bill = BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body);
      assert.equal(bill.asset, 'credit');
      assert.ok(bill.charged > 0 && bill.held === bill.charged + bill.refunded);
      const credit = (await get('/v1/wallet', provider)).body.balances.find((b: { asset: string }) => b.asset === 'credit');
      assert.equal(credit.available, bill.toProviders, 'the provider earned credit');
    });

    test('withdrawals wait at the manual adapter until the operator completes or rejects them', async () => {
      const w = await post('/v1/wallet/withdrawals', { amount: 2 * USDC, destination: 'iban:DE00 1234' }, provider);
      assert.equal(w.status, 201, JSON.stringify(w.body));
      assert.equal(w.body.payout.state, 'pending');
      const tooMuch = await post('/v1/wallet/withdrawals', { amount: 1000 * USDC, destination: 'x' }, provider);
      assert.equal(tooMuch.status, 402);
      assert.equal((await get('/v1/payouts?state=pending', h.operator)).body.payouts.length, 1);
      assert.equal((await post(`/v1/payouts/${w.body.payout.id}/complete`, { reference: 'bank-tx-1' }, provider)).status, 403);
      const done = await post(`/v1/payouts/${w.body.payout.id}/complete`, { reference: 'bank-tx-1' }, h.operator);
      assert.equal(done.body.payout.state, 'completed');
      assert.equal((await post(`/v1/payouts/${w.body.payout.id}/complete`, { reference: 'again' }, h.operator)).status, 409);
      const t = (await get('/v1/treasury', h.operator)).body.assets.find((x: { asset: string }) => x.asset === 'usdc');
      assert.deepEqual([t.minted, t.balanced], [108 * USDC, true]);
    });

    test('free stake unbonds and returns after the delay', async () => {
      assert.equal((await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: 3 * USDC }, provider)).status, 200);
      const un = await post(`/v1/nodes/${agent.nodeId}/unstake`, { amount: 3 * USDC }, provider);
      assert.equal(un.status, 200, JSON.stringify(un.body));
      assert.equal(un.body.stake.unbonding.length, 1);
      const before = (await get('/v1/wallet', provider)).body.balances[0].available;
      await waitFor(async () => ((await get(`/v1/nodes/${agent.nodeId}/stake`, provider)).body.stake.unbonding.length === 0 ? true : undefined), 'unbonding released');
      assert.equal((await get('/v1/wallet', provider)).body.balances[0].available, before + 3 * USDC);
    });

    test('the index moves each epoch and shows supply, demand and history', async () => {
      const prices = await waitFor(async () => {
        await agent.heartbeat(); // an offline node is no supply
        const r = (await get('/v1/market/prices')).body;
        return r.classes.some((c: { class: string; epoch: number }) => c.class === 'nvidia-h100-80gb' && c.epoch >= 2) ? r : undefined;
      }, 'two epochs of prices');
      const h100 = prices.classes.find((c: { class: string }) => c.class === 'nvidia-h100-80gb');
      assert.equal(h100.supplyUnits, 1);
      assert.ok(h100.price >= h100.floor);
      assert.equal(prices.feeBps, FEE_BPS);
      assert.equal(prices.market, true);
      const hist = (await get('/v1/market/history?class=nvidia-h100-80gb')).body.points;
      assert.ok(hist.length >= 2);
      assert.ok(hist.every((p: { class: string }) => p.class === 'nvidia-h100-80gb'));
      // Idle supply: utilization 0 below the target, so each epoch lowers the price by the full step.
      const [p1, p2] = hist.slice(-2);
      assert.equal(p2.price, Math.max(h100.floor, p1.price - Math.floor((p1.price * 1250) / 10_000)));
    });

    test('after it all the ledger balances', async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    });
  });
}

marketOverHttp('SQLite', async () => ({ stop: async () => {} }));
marketOverHttp(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
