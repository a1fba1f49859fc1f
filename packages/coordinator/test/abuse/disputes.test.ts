/**
 * Abuse suite, buyers' disputes (issue 11, TRUST.md "false dispute"), against a real coordinator with a
 * market, on SQLite and on PostgreSQL, with a signed fake node:
 * - someone else's job: 404 as if it did not exist; an operator may not post a buyer's bond (403);
 * - a malformed body, or a job still running: 400 / 409;
 * - a bond larger than the wallet: 402 INSUFFICIENT_FUNDS naming the bond; nothing written;
 * - a dispute within the window: the bond moves wallet → bond:<job>, the step is refereeing/disputed and a
 *   referee run is queued; the same dispute again: 409, nothing more taken;
 * - after the window closed: 409 saying when it closed; nothing written.
 * After each, the ledger balances (GET /v1/treasury).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNTS } from '@gpux/core';
import { BillResponse, DisputeResponse, GetJobResponse, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { disputeBond } from '../../src/services/disputes.js';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
/** The bond floor: far above what a short job is charged, so the bond is this and a poor buyer cannot post it. */
const BOND_MIN = 20 * USDC;
const WINDOW_S = 60;

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function disputeAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: disputes: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let agent: TestAgent;
    let beating: NodeJS.Timeout | undefined;
    /** Added to the wall clock: the last test moves past the dispute window. */
    let skewMs = 0;
    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const dispute = (jobId: string, token = buyer, body: unknown = { reason: 'the output is empty; it should hold the answer' }) => post(`/v1/jobs/${jobId}/dispute`, body, token);
    const available = async (token = buyer): Promise<number> => (await get('/v1/wallet', token)).body.balances.find((b: { asset: string }) => b.asset === 'usdc')?.available ?? 0;
    const assertBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };
    const verification = async (jobId: string, token = buyer) => GetJobResponse.parse((await get(`/v1/jobs/${jobId}`, token)).body).job.verification ?? null;

    /** A paid job run by the node; `finish` false leaves it running. */
    async function paidJob(token = buyer, finish = true): Promise<{ jobId: string; attemptId: string }> {
      // No retries: a check run of it holds exactly its escrow from the treasury.
      const sub = await post('/v1/jobs', { spec: spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, maxRetries: 0 }) }, token);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const w = await waitFor(async () => WorkResponse.parse((await agent.work(500)).body).assignments.find((a) => a.jobId === jobId), `the node takes ${jobId}`);
      assert.equal((await agent.start(w.attemptId)).status, 200);
      if (finish) {
        const r = await agent.result(w.attemptId, report('succeeded', { 'out/answer.txt': '' }));
        assert.equal(r.status, 200, JSON.stringify(r.body));
      }
      return { jobId, attemptId: w.attemptId };
    }

    /**
     * A finished job whose result is open to dispute (its verification step is in its window). The treasury
     * starts empty, so no audit can be funded: the job is labelled unaudited and disputable.
     */
    async function disputable(token = buyer): Promise<string> {
      const { jobId } = await paidJob(token);
      await waitFor(async () => (await verification(jobId, token))?.state === 'window', `job ${jobId} reaches its dispute window`).catch(async (e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify((await h.coord.store.listEvents('job', jobId, 100)).map((x) => [x.type, x.data]))}`);
      });
      return jobId;
    }

    before(async () => {
      dbHandle = await database();
      h = await startHarness(
        {
          ...(dbHandle.db ? { db: dbHandle.db } : {}),
          market: true,
          devMint: true,
          schedulePassIntervalMs: 20,
          expiryPassIntervalMs: 50,
          verify: true,
          disputeBondMin: BOND_MIN,
          disputeWindowSeconds: WINDOW_S,
        },
        { clock: { now: () => Date.now() + skewMs } },
      );
      buyer = await h.buyer();
      agent = new TestAgent(h.url);
      assert.equal((await agent.register()).status, 200);
      beating = setInterval(() => void agent.heartbeat([...agent.assignments.keys()]).catch(() => {}), 200);
      assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, h.provider)).status, 201);
      assert.equal((await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: 500 * USDC }, h.provider)).status, 200);
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC })).status, 201);
    });
    after(async () => {
      clearInterval(beating);
      await h?.close();
      await dbHandle?.stop();
    });

    test('the bond: bps of the charge rounded up, never under the floor', () => {
      assert.equal(disputeBond(0, 10_000, 5), 5);
      assert.equal(disputeBond(1_000, 10_000, 5), 1_000);
      assert.equal(disputeBond(1_001, 5_000, 0), 501);
      assert.equal(disputeBond(3, 20_000, 0), 6);
    });

    test("someone else's job is 404, an operator may not post the buyer's bond, bad bodies are 400, a running job is 409: nothing written", async () => {
      const jobId = await disputable();
      const before = await verification(jobId);
      const walletBefore = await available();
      const stranger = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC }, stranger)).status, 201);

      const theirs = await dispute(jobId, stranger);
      assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
      assert.equal(theirs.body.error.code, 'JOB_NOT_FOUND');
      const op = await dispute(jobId, h.operator);
      assert.equal(op.status, 403, JSON.stringify(op.body));
      assert.match(op.body.error.message, /only the buyer/);
      for (const body of [{}, { reason: '' }, { reason: 'x'.repeat(2001) }, { reason: 'fine', bond: 1 }, 'not json']) {
        const res = await dispute(jobId, buyer, body);
        assert.equal(res.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(res.body)}`);
      }
      assert.equal((await dispute('job-does-not-exist')).status, 404);

      const running = await paidJob(buyer, false);
      const early = await dispute(running.jobId);
      assert.equal(early.status, 409, JSON.stringify(early.body));
      assert.match(early.body.error.message, /running; only a job that ended with a result can be disputed/);
      assert.equal((await agent.result(running.attemptId, report('succeeded', { 'out/answer.txt': '42\n' }))).status, 200);
      const runningCharge = BillResponse.parse((await get(`/v1/jobs/${running.jobId}/bill`)).body).charged;

      assert.deepEqual(await verification(jobId), before, 'the step is as it was');
      assert.equal(await available(), walletBefore - runningCharge, 'no bond taken (only the other job was charged)');
      assert.equal(await h.coord.store.getBalance(ACCOUNTS.bond(jobId), 'usdc'), 0);
      assert.equal(await available(stranger), 100 * USDC);
      await assertBalanced();
    });

    test('a bond larger than the wallet: 402 naming the bond; nothing written', async () => {
      const poor = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 5 * USDC }, poor)).status, 201);
      const jobId = await disputable(poor);
      const before = await verification(jobId, poor);
      const walletBefore = await available(poor);
      assert.ok(walletBefore < BOND_MIN);

      const res = await dispute(jobId, poor);
      assert.equal(res.status, 402, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'INSUFFICIENT_FUNDS');
      assert.match(res.body.error.message, /the dispute bond of job \S+ is 20\.000000 USDC/);
      assert.match(res.body.error.message, /gpux wallet deposit/);
      assert.deepEqual(await verification(jobId, poor), before, 'not disputed');
      assert.equal(await available(poor), walletBefore, 'nothing taken');
      assert.equal(await h.coord.store.getBalance(ACCOUNTS.bond(jobId), 'usdc'), 0);
      await assertBalanced();
    });

    test('a dispute in the window holds the bond and queues a referee run; twice is 409 and takes nothing more', async () => {
      const jobId = await disputable();
      // The treasury advances the referee run (paid back by the losing side): fund it with the job's escrow.
      const held = (await h.coord.store.getJob(jobId))?.payment?.held ?? 0;
      await h.coord.store.postTransfer({ kind: 'mint', postings: [{ account: ACCOUNTS.world, asset: 'usdc', amount: -held }, { account: ACCOUNTS.treasury, asset: 'usdc', amount: held }], at: Date.now(), memo: 'test: fund the referee run' });
      const walletBefore = await available();
      const res = await dispute(jobId);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const body = DisputeResponse.parse(res.body);
      assert.equal(body.bond, BOND_MIN, 'a short job is charged less than the floor');
      assert.equal(body.asset, 'usdc');
      assert.equal(body.verification.state, 'refereeing');
      assert.equal(body.verification.label, 'disputed');
      assert.equal(body.verification.dispute?.bond, BOND_MIN);
      assert.equal(body.verification.dispute?.reason, 'the output is empty; it should hold the answer');
      assert.ok(body.verification.checks.some((c) => c.kind === 'referee'), JSON.stringify(body.verification.checks));
      assert.equal(await available(), walletBefore - BOND_MIN);
      assert.equal(await h.coord.store.getBalance(ACCOUNTS.bond(jobId), 'usdc'), BOND_MIN);
      assert.deepEqual((await verification(jobId))?.label, 'disputed');

      const again = await dispute(jobId);
      assert.equal(again.status, 409, JSON.stringify(again.body));
      assert.equal(again.body.error.code, 'CONFLICT');
      assert.match(again.body.error.message, /already/);
      assert.equal(await available(), walletBefore - BOND_MIN, 'no second bond');
      assert.equal(await h.coord.store.getBalance(ACCOUNTS.bond(jobId), 'usdc'), BOND_MIN);
      await assertBalanced();
    });

    test('after the window closed: 409 saying when; nothing written', async () => {
      const jobId = await disputable();
      const v = await verification(jobId);
      assert.ok(v);
      const walletBefore = await available();
      skewMs = v.windowClosesAt - Date.now() + 1000; // the coordinator's clock is now past the window
      const res = await dispute(jobId);
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'CONFLICT');
      assert.ok(res.body.error.message.includes(`closed at ${new Date(v.windowClosesAt).toISOString()}`), res.body.error.message);
      assert.equal(await available(), walletBefore, 'no bond taken');
      assert.equal(await h.coord.store.getBalance(ACCOUNTS.bond(jobId), 'usdc'), 0);
      assert.notEqual((await verification(jobId))?.label, 'disputed');
      await assertBalanced();
    });
  });
}

disputeAbuse('SQLite', async () => ({ stop: async () => {} }));
disputeAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
