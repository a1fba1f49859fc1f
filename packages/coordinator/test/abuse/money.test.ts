/**
 * Abuse suite, money (issue 10 items 8, 13, 15), against a real coordinator with a market, on SQLite and
 * on PostgreSQL, with a signed fake node:
 * - cancel keeps billing: the node keeps heartbeating after a cancel and never stops or reports; the charge
 *   stops at cancel + grace, the job ends cancelled, the escrow returns, the stake lock is released;
 * - arithmetic: a job whose hold would pass 2^53 is 400 SPEC_INVALID naming the largest cap that fits, a
 *   cap above 10^12 or a deposit above 10^15 is 400, and a deposit that would take the network past 2^53
 *   is 400 with the limit; nothing is held or stored;
 * - fees that round away: many tiny paid jobs put floor(Σ charges × fee) in the treasury, not 0.
 * After each, the ledger balances (GET /v1/treasury).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { chargeFor, feeOf, maxCapFor } from '@gpux/core';
import { BillResponse, JobSpec, type JobSpecInput, MAX_REQUEST_AMOUNT, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
const FEE_BPS = 500;
const GRACE_MS = 1_500;
const TIMEOUT = 600;

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function moneyAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: money: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let agent: TestAgent;
    let beating: NodeJS.Timeout | undefined;
    /** The attempts the fake node says it runs in each heartbeat. */
    let claimed: string[] = [];
    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const job = (over: Partial<JobSpecInput> = {}) => spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: TIMEOUT, maxPricePerGpuHour: 3 * USDC, ...over });
    const usdcWallet = async (token = buyer) => (await get('/v1/wallet', token)).body.balances.find((b: { asset: string }) => b.asset === 'usdc');
    const treasury = async () => (await get('/v1/treasury', h.operator)).body.assets.find((a: { asset: string }) => a.asset === 'usdc');
    const assertBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };

    /** Submit a paid job and have the node take and start it; returns ids. */
    async function runPaid(over: Partial<JobSpecInput> = {}): Promise<{ jobId: string; attemptId: string }> {
      const sub = await post('/v1/jobs', { spec: job(over) });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const work = await waitFor(async () => {
        const w = WorkResponse.parse((await agent.work(500)).body);
        return w.assignments.find((a) => a.jobId === jobId);
      }, `the node takes ${jobId}`);
      assert.equal((await agent.start(work.attemptId)).status, 200);
      return { jobId, attemptId: work.attemptId };
    }

    before(async () => {
      dbHandle = await database();
      h = await startHarness({
        ...(dbHandle.db ? { db: dbHandle.db } : {}),
        market: true,
        devMint: true,
        treasuryFeeBps: FEE_BPS,
        heartbeatIntervalMs: 500,
        expiryPassIntervalMs: 50,
        schedulePassIntervalMs: 20,
        settleChunkMs: 100,
        cancelGraceMs: GRACE_MS,
      });
      buyer = await h.buyer();
      agent = new TestAgent(h.url);
      const reg = await agent.register();
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      // The attacker's node: heartbeats forever, claiming its attempts still run, whatever it is told.
      beating = setInterval(() => void agent.heartbeat(claimed).catch(() => {}), 100);
      assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, h.provider)).status, 201);
      const staked = await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: 500 * USDC }, h.provider);
      assert.equal(staked.status, 200, JSON.stringify(staked.body));
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC })).status, 201);
    });
    after(async () => {
      clearInterval(beating);
      await h?.close();
      await dbHandle?.stop();
    });

    test('cancel keeps billing: a node that heartbeats on and never stops is charged only to cancel + grace, and the job ends cancelled', async () => {
      const { jobId, attemptId } = await runPaid();
      claimed = [attemptId];
      await new Promise((r) => setTimeout(r, 300)); // it runs (and settles in chunks) a little
      const cancel = await post(`/v1/jobs/${jobId}/cancel`, {});
      assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
      // No node report: the coordinator ends it when the grace runs out.
      await waitFor(async () => (await get(`/v1/jobs/${jobId}`)).body.job.state === 'cancelled', 'the job ends cancelled without a node report');
      const events = await h.coord.store.listEvents('job', jobId, 1000);
      const stopBy = events.find((e) => e.type === 'job.cancel_requested')?.data.stopBy as number;
      const cancelledAt = events.find((e) => e.type === 'job.cancel_requested')?.at as number;
      assert.equal(stopBy, cancelledAt + GRACE_MS);
      assert.ok(events.some((e) => e.type === 'attempt.cancelled'), JSON.stringify(events.map((e) => [e.type, e.data])));
      const a = await h.coord.store.getAttempt(attemptId);
      assert.ok(a?.price && a.startedAt !== null);
      assert.equal(a.state, 'cancelled');
      const expected = chargeFor(a.price.pricePerUnitHour, a.price.units, stopBy - a.startedAt, TIMEOUT);
      const bill = BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body);
      assert.equal(bill.charged, expected, 'charged exactly up to cancel + grace');
      assert.equal(bill.inEscrow, 0);
      assert.equal(bill.refunded, bill.held - bill.charged, 'the escrow remainder went back');
      // The node heartbeats on: nothing more is charged, and the stake lock is gone.
      await new Promise((r) => setTimeout(r, 400));
      assert.equal(BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body).charged, expected);
      const stake = (await get(`/v1/nodes/${agent.nodeId}/stake`, h.provider)).body.stake;
      assert.equal(stake.locked, 0);
      claimed = [];
      assert.equal((await usdcWallet()).inEscrow, 0);
      const hb = await agent.heartbeat([attemptId]);
      assert.equal(hb.status, 200);
      // A late report: the same end is accepted as a repeat, another end is a conflict; nothing moves.
      assert.equal((await agent.result(attemptId, report('cancelled', {}, null))).status, 200);
      const late = await agent.result(attemptId, report('succeeded'));
      assert.equal(late.status, 409, JSON.stringify(late.body));
      assert.equal(late.body.error.code, 'CONFLICT');
      assert.equal(BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body).charged, expected);
      await assertBalanced();
    });

    test('an oversized job is 400 SPEC_INVALID naming the largest cap that fits, and holds nothing', async () => {
      const before = await usdcWallet();
      const transfers = (await get('/v1/ledger?limit=500', h.operator)).body.transfers.length;
      const huge = job({ resources: { gpu: { count: 8 } }, nodes: 64, timeoutSeconds: 7 * 24 * 3600, maxPricePerGpuHour: 1_000_000_000_000 });
      const res = await post('/v1/jobs', { spec: huge });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'SPEC_INVALID');
      const most = maxCapFor(JobSpec.parse(huge));
      assert.equal(res.body.error.problems[0].path, 'maxPricePerGpuHour');
      assert.match(res.body.error.problems[0].message, new RegExp(`at most ${most}\\b`));
      const over = await post('/v1/jobs', { spec: job({ maxPricePerGpuHour: 1_000_000_000_001 }) });
      assert.equal(over.status, 400);
      assert.equal(over.body.error.code, 'SPEC_INVALID');
      assert.equal(over.body.error.problems[0].path, 'maxPricePerGpuHour');
      assert.deepEqual(await usdcWallet(), before, 'nothing held');
      assert.equal((await get('/v1/ledger?limit=500', h.operator)).body.transfers.length, transfers, 'no transfer');
      await assertBalanced();
    });

    test('fees that round away: many tiny paid jobs pay the fee of their summed charges', async () => {
      const t0 = (await treasury()).treasury;
      const jobs: string[] = [];
      for (let i = 0; i < 40; i++) {
        const { jobId, attemptId } = await runPaid();
        assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
        jobs.push(jobId);
      }
      let charged = 0;
      let fees = 0;
      let roundedAlone = 0;
      for (const id of jobs) {
        const bill = BillResponse.parse((await get(`/v1/jobs/${id}/bill`)).body);
        charged += bill.charged;
        fees += bill.fee;
        roundedAlone += feeOf(bill.charged, FEE_BPS);
      }
      assert.ok(charged > 0);
      // One provider, whose carry the cancelled job above already moved: within one unit of the exact fee.
      const exact = feeOf(charged, FEE_BPS);
      assert.ok(fees >= exact && fees <= exact + 1, `fees ${fees} for charges ${charged}: floor(Σ × 5%) = ${exact} (each rounded alone: ${roundedAlone})`);
      assert.ok(fees >= roundedAlone);
      assert.equal((await treasury()).treasury - t0, fees, 'the treasury got them');
      await assertBalanced();
    });

    test('amounts past the limits: 400 with the limit, nothing stored', async () => {
      const big = await post('/v1/wallet/deposits', { amount: Number.MAX_SAFE_INTEGER });
      assert.equal(big.status, 400);
      assert.equal(big.body.error.problems[0].path, 'amount');
      assert.match(big.body.error.problems[0].message, new RegExp(`at most ${MAX_REQUEST_AMOUNT}`));
      const stakeBig = await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: MAX_REQUEST_AMOUNT + 1 }, h.provider);
      assert.equal(stakeBig.status, 400);
      const withdrawBig = await post('/v1/wallet/withdrawals', { amount: MAX_REQUEST_AMOUNT + 1, destination: 'x' });
      assert.equal(withdrawBig.status, 400);
      // Fill the network up to 2^53 − 1 minor units, then one more deposit: refused with the limit.
      let minted = (await treasury()).minted;
      while (minted + MAX_REQUEST_AMOUNT <= Number.MAX_SAFE_INTEGER) {
        assert.equal((await post('/v1/wallet/deposits', { amount: MAX_REQUEST_AMOUNT })).status, 201);
        minted += MAX_REQUEST_AMOUNT;
      }
      const before = await usdcWallet();
      const res = await post('/v1/wallet/deposits', { amount: MAX_REQUEST_AMOUNT });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'REQUEST_INVALID');
      assert.match(res.body.error.message, /largest amount, 9007199254\.740991 USDC/);
      assert.equal(res.body.error.problems[0].path, 'amount');
      assert.deepEqual(await usdcWallet(), before, 'nothing credited');
      const t = await treasury();
      assert.equal(t.minted, minted, 'the totals are exact');
      assert.ok(t.minted <= Number.MAX_SAFE_INTEGER);
      await assertBalanced();
    });
  });
}

moneyAbuse('SQLite', async () => ({ stop: async () => {} }));
moneyAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
