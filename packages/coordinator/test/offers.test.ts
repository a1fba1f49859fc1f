/**
 * Prices before launch (issue 16) on a real coordinator over SQLite and PostgreSQL: GET /v1/offers groups live,
 * staked nodes into rows priced as a placement would clear (the provider's ask plus the fee), filters them and
 * never names a node; POST /v1/jobs/quote checks a spec as submit does and answers the hold, the price range, the
 * nodes that fit and the expected wait, with no job, hold or ledger row written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { grossAsk, holdFor } from '@gpux/core';
import { JobSpec, type OffersResponse, type QuoteJobResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const USDC = 1_000_000;
const H100 = 'nvidia-h100-80gb';
const ASK = 2.5 * USDC;

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function offersSuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`offers and quotes: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    const agents: TestAgent[] = [];

    before(async () => {
      dbHandle = await database();
      // A long epoch: the index stays at the catalogue's price while the test runs.
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), market: true, devMint: true, marketEpochMs: 3_600_000 });
      buyer = await h.buyer();
      assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 100 * USDC } })).status, 201);
      assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: h.provider, body: { amount: 1000 * USDC } })).status, 201);
      for (const [host, region, stake] of [['rig-1', 'eu', 200], ['rig-2', 'eu', 200], ['rig-3', 'eu', 0]] as const) {
        const a = new TestAgent(h.url, { ...gpuAd(host, 8), region });
        assert.equal((await a.register()).status, 200);
        if (stake) assert.equal((await call(h.url, 'POST', `/v1/nodes/${a.nodeId}/stake`, { token: h.provider, body: { amount: stake * USDC } })).status, 200);
        agents.push(a);
      }
      assert.equal((await call(h.url, 'POST', '/v1/market/asks', { token: h.provider, body: { class: H100, pricePerGpuHour: ASK } })).status, 200);
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    const offers = async (query = '', token = buyer) => {
      const res = await call(h.url, 'GET', `/v1/offers${query}`, { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return res.body as OffersResponse;
    };
    const quote = (s: unknown, token = buyer) => call(h.url, 'POST', '/v1/jobs/quote', { token, body: { spec: s } });

    test('two identical staked nodes are one row at the ask plus the fee; the unstaked one only with all=true; no node is named', async () => {
      const res = await offers();
      assert.equal(res.market, true);
      const price = grossAsk(ASK, res.feeBps);
      assert.deepEqual(
        res.offers.map((o) => [o.class, o.gpusPerNode, o.freeGpus, o.nodes, o.region, o.price, o.lowestCap, o.available, o.proven, o.online]),
        [[H100, 8, 8, 2, 'eu', price, price, true, false, true]],
      );
      assert.equal(res.truncated, false);
      const text = JSON.stringify(res);
      for (const a of agents) assert.ok(!text.includes(a.nodeId) && !text.includes(a.ad.hostname), 'an offer names no node or host');
      const all = await offers('?all=true');
      assert.deepEqual(
        all.offers.filter((o) => !o.available).map((o) => [o.nodes, o.unavailable]),
        [[1, 'no free stake']],
      );
    });

    test('filters: gpu, count, maxPrice, region, proven; operators may read too', async () => {
      const price = grossAsk(ASK, (await offers()).feeBps);
      assert.equal((await offers('?gpu=H100&count=8')).offers.length, 1);
      assert.equal((await offers('?gpu=a100')).offers.length, 0);
      assert.equal((await offers('?count=9')).offers.length, 0);
      assert.equal((await offers(`?maxPrice=${price}`)).offers.length, 1);
      assert.equal((await offers(`?maxPrice=${price - 1}`)).offers.length, 0);
      assert.equal((await offers('?region=us')).offers.length, 0);
      assert.equal((await offers('?proven=true')).offers.length, 0, 'no node here passed the challenge (it is off)');
      assert.equal((await offers('', h.operator)).offers.length, 1);
      assert.equal((await call(h.url, 'GET', '/v1/offers')).status, 401);
    });

    test('quote: the hold, the funds, the price range, the nodes that fit, a wait of none; nothing written', async () => {
      const before = await snapshot();
      const s = spec({ resources: { gpu: { count: 2 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC });
      const res = await quote(s);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const q = res.body as QuoteJobResponse;
      const price = grossAsk(ASK, (await offers()).feeBps);
      assert.deepEqual(q.payment, { asset: 'usdc', capPerUnitHour: 3 * USDC, units: 2, held: holdFor(JobSpec.parse(s), 3 * USDC) });
      assert.equal(q.payment?.held, 1 * USDC, '3 USDC × 2 GPUs × 600 s');
      assert.equal(q.holdTotal, 1 * USDC);
      assert.equal(q.available, 100 * USDC);
      assert.equal(q.enoughFunds, true);
      assert.deepEqual([q.priceLow, q.priceHigh, q.unit], [price, price, 'GPU-hour']);
      assert.deepEqual([q.nodesNeeded, q.nodesFitting, q.nodesBusy, q.nodesTotal], [1, 2, 0, 3]);
      assert.equal(q.wait.kind, 'now');
      assert.match(q.wait.basis, /2 nodes fit and are free now/);
      assert.deepEqual(q.suggestions, []);
      // Without a cap the market cap is held, as submit would.
      const open = (await quote(spec({ resources: { gpu: { count: 1 } } }))).body as QuoteJobResponse;
      assert.ok(open.payment && open.payment.capPerUnitHour > 0 && open.holdTotal === open.payment.held);
      assert.deepEqual(await snapshot(), before, 'no job, hold or ledger row');
    });

    test('quote refuses what submit refuses, with the same words; a gang no fleet can hold waits never, with what to change', async () => {
      const cases = [spec({ image: undefined as unknown as string }), spec({ resources: { gpu: { count: 1 } }, maxPricePerGpuHour: 1 })];
      for (const s of cases) {
        const q = await quote(s);
        const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: s } });
        assert.equal(q.status, 400, JSON.stringify(q.body));
        assert.equal(sub.status, 400);
        assert.equal(q.body.error.code, 'SPEC_INVALID');
        assert.deepEqual(q.body.error, sub.body.error);
      }
      const gang = (await quote(spec({ nodes: 3, resources: { gpu: { count: 8 } }, maxPricePerGpuHour: 3 * USDC }))).body as QuoteJobResponse;
      assert.equal(gang.wait.kind, 'never');
      assert.equal(gang.wait.seconds, null);
      assert.ok(gang.suggestions.length > 0, JSON.stringify(gang));
      const poor = await h.buyer();
      const broke = (await quote(spec({ resources: { gpu: { count: 1 } }, maxPricePerGpuHour: 3 * USDC }), poor)).body as QuoteJobResponse;
      assert.deepEqual([broke.available, broke.enoughFunds], [0, false]);
    });

    test('every fitting node busy: the wait is the median of recent placements once there are 3; the offers show no free GPUs (last: it fills the fleet)', async () => {
      const s = (gpus: number) => spec({ resources: { gpu: { count: gpus } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC });
      const ids: string[] = [];
      for (const gpus of [1, 7, 8]) {
        const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: s(gpus) } });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        ids.push(sub.body.job.id);
      }
      await waitFor(async () => {
        const states = await Promise.all(ids.map(async (id) => (await call(h.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body.job.state));
        return states.every((st) => st === 'assigned');
      }, 'the three jobs placed');
      const q = (await quote(s(1))).body as QuoteJobResponse;
      assert.deepEqual([q.nodesFitting, q.nodesBusy], [0, 2]);
      assert.equal(q.wait.kind, 'recent', q.wait.basis);
      assert.match(q.wait.basis, /every node that fits is busy \(2\): the median wait from submission to placement of the last 3 jobs placed/);
      assert.deepEqual((await offers('?gpu=h100')).offers.map((o) => [o.freeGpus, o.nodes]), [[0, 2]]);
    });

    /** What a quote must not change: the jobs, the buyer's wallet and the ledger. */
    async function snapshot() {
      const jobs = await call(h.url, 'GET', '/v1/jobs', { token: buyer });
      const wallet = await call(h.url, 'GET', '/v1/wallet', { token: buyer });
      const ledger = await call(h.url, 'GET', '/v1/ledger?limit=500', { token: h.operator });
      return { jobs: jobs.body.jobs.length, wallet: wallet.body.balances, transfers: ledger.body.transfers.length };
    }
  });
}

offersSuite('SQLite', async () => ({ stop: async () => {} }));
offersSuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
