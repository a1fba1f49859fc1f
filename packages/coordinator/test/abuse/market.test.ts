/**
 * Abuse suite, issue 10 items 1, 3 and 4: the market cannot be gamed. On a coordinator with a market and
 * no dev minting (funds arrive as operator deposits with a reference), with fake signed node agents, on
 * SQLite and on PostgreSQL:
 * - free compute: a cap of 0 or 1 minor unit is 400 SPEC_INVALID naming the class floor, from an empty or a
 *   funded wallet, with nothing stored or held; a node without an ask runs a job at no less than the index;
 *   a node with no stake never gets a market job; a cap under the index finds no ask-less node and times out;
 * - dead supply: a node that stops heartbeating leaves the supply at the next epoch, and a node without
 *   stake never was supply;
 * - phantom demand: a burst of jobs no node can run (16 GPUs where nodes have 8) moves no demand and no
 *   price, and fails after its queue timeout with the reason and the escrow back; one buyer's burst of jobs
 *   that could run counts at most half the class's supply.
 * Each GPU class below belongs to one test, so their supply and demand figures do not mix.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buyerDemandCap, CLASS_CATALOGUE, stakeToLock } from '@gpux/core';
import { type NodeAdvertisementInput, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
const H100 = 'nvidia-h100-80gb';
const A100 = 'nvidia-a100-80gb';
const L40S = 'nvidia-l40s-48gb';
const RTX = 'nvidia-rtx4090-24gb';
const MODELS: Record<string, [string, number]> = {
  [H100]: ['NVIDIA H100 80GB HBM3', 81920],
  [A100]: ['NVIDIA A100-SXM4-80GB', 81920],
  [L40S]: ['NVIDIA L40S', 49152],
  [RTX]: ['NVIDIA GeForce RTX 4090', 24576],
};
const floorOf = (cls: string) => CLASS_CATALOGUE[cls]!.floor;

let serial = 0;
function ad(cls: string, gpus: number): NodeAdvertisementInput {
  const [model, vramMb] = MODELS[cls]!;
  const host = `abuse-${cls}-${++serial}`;
  return {
    hostname: host,
    agentVersion: '0.0.0-test',
    os: 'linux',
    arch: 'x64',
    cpuCores: 64,
    memoryMb: 512 * 1024,
    gpus: Array.from({ length: gpus }, (_, i) => ({ index: i, uuid: `GPU-${host}-${i}-${process.pid}`, vendor: 'nvidia' as const, model, vramMb })),
    docker: { available: false },
    executors: ['process'],
  };
}

/** A fake node that heartbeats (listing the attempts it holds) until stopped: online as long as it does. */
class LiveAgent extends TestAgent {
  held = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  beat(): void {
    this.timer = setInterval(() => void this.heartbeat([...this.held]).catch(() => undefined), 200);
  }
  stop(): void {
    clearInterval(this.timer);
  }
  /** Long-poll for work; what arrives is held (and heartbeated) from then on. */
  async take(waitMs = 300) {
    const w = WorkResponse.parse((await this.work(waitMs)).body);
    for (const a of w.assignments) this.held.add(a.attemptId);
    return w.assignments;
  }
}

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function marketAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: market integrity (${name})`, opts, () => {
    let h: Harness;
    let dbh: Database | undefined;
    const agents: LiveAgent[] = [];
    const get = (path: string, token: string) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token: string) => call(h.url, 'POST', path, { token, body });

    /** A buyer with `amount` deposited by the operator (a real deposit with its reference; no minting here). */
    async function buyer(amount: number): Promise<{ token: string; accountId: string }> {
      const token = await h.buyer();
      const accountId: string = (await get('/v1/whoami', token)).body.accountId;
      if (amount > 0) {
        const dep = await post('/v1/wallet/deposits', { amount, accountId, reference: `wire-${accountId}` }, h.operator);
        assert.equal(dep.status, 201, JSON.stringify(dep.body));
      }
      return { token, accountId };
    }

    async function node(cls: string, gpus: number, stake: number): Promise<LiveAgent> {
      const a = new LiveAgent(h.url, ad(cls, gpus));
      const reg = await a.register();
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      a.beat();
      agents.push(a);
      if (stake > 0) assert.equal((await post(`/v1/nodes/${a.nodeId}/stake`, { amount: stake }, h.provider)).status, 200);
      return a;
    }

    const wallet = async (token: string) => (await get('/v1/wallet', token)).body.balances.find((b: { asset: string }) => b.asset === 'usdc') ?? { available: 0, inEscrow: 0 };
    const prices = async () => (await get('/v1/market/prices', h.operator)).body;
    const classPoint = async (cls: string) => (await prices()).classes.find((c: { class: string }) => c.class === cls);
    /** The first price point of `cls` after epoch `after` that satisfies `ok`. */
    const pointAfter = (cls: string, after: number, ok: (p: { supplyUnits: number; demandUnits: number }) => boolean, what: string) =>
      waitFor(async () => {
        const p = await classPoint(cls);
        return p && p.epoch > after && ok(p) ? p : undefined;
      }, what);
    const balanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };
    const job = (cls: string, over: Parameters<typeof spec>[0] = {}) =>
      spec({ timeoutSeconds: 60, maxPricePerGpuHour: 3 * USDC, resources: { gpu: { count: 1, vendor: 'nvidia', models: [cls.split('-')[1] === 'rtx4090' ? 'rtx 4090' : (cls.split('-')[1] as string)] } }, ...over });

    before(async () => {
      dbh = await database();
      h = await startHarness({
        ...(dbh.db ? { db: dbh.db } : {}),
        market: true,
        devMint: false,
        marketEpochMs: 100,
        // Epochs are fast here; small steps keep an index from outrunning the test's caps (a job whose cap is
        // under the index is no demand), while any demand still moves it by at least a minor unit.
        marketMaxStepBps: 10,
        expiryPassIntervalMs: 100,
        heartbeatIntervalMs: 500,
        nodeOfflineAfterMs: 1500,
        leaseTtlMs: 30_000,
      });
      const dep = await post('/v1/wallet/deposits', { amount: 1000 * USDC, accountId: h.providerId, reference: 'provider-wire' }, h.operator);
      assert.equal(dep.status, 201, JSON.stringify(dep.body));
    });
    after(async () => {
      for (const a of agents) a.stop();
      await h?.close();
      await dbh?.stop();
    });

    test('free compute: a cap of 0 or 1 is 400 SPEC_INVALID naming the floor, empty wallet or not; nothing is stored or held', async () => {
      await node(H100, 8, 0);
      const poor = await buyer(0);
      const rich = await buyer(100 * USDC);
      const transfers = (await get('/v1/ledger', h.operator)).body.transfers.length;
      for (const who of [poor, rich]) {
        for (const cap of [0, 1, floorOf(H100) - 1]) {
          const res = await post('/v1/jobs', { spec: job(H100, { maxPricePerGpuHour: cap }) }, who.token);
          assert.equal(res.status, 400, JSON.stringify(res.body));
          assert.equal(res.body.error.code, 'SPEC_INVALID');
          const problem = res.body.error.problems.find((p: { path: string }) => p.path === 'maxPricePerGpuHour');
          assert.ok(problem, JSON.stringify(res.body.error));
          assert.match(problem.message, new RegExp(`at least ${floorOf(H100)} \\(0\\.400000 USDC per GPU-hour, the floor of ${H100}\\)`));
          assert.match(res.body.error.message, /below the price floor/);
        }
        // CPU-only work has its own floor (class cpu, per job-hour).
        const cpu = await post('/v1/jobs', { spec: spec({ maxPricePerGpuHour: 0 }) }, who.token);
        assert.equal(cpu.status, 400);
        assert.match(cpu.body.error.problems[0].message, new RegExp(`at least ${floorOf('cpu')} .*per job-hour`));
        assert.deepEqual((await get('/v1/jobs', who.token)).body.jobs, []);
      }
      assert.deepEqual(await wallet(poor.token), { asset: 'usdc', available: 0, inEscrow: 0, pendingPayout: 0, heldForVerification: 0, heldJobs: 0, nextWindowClosesAt: null });
      assert.equal((await wallet(rich.token)).available, 100 * USDC);
      assert.equal((await get('/v1/ledger', h.operator)).body.transfers.length, transfers, 'no transfer was posted');
      // At the floor the job is accepted and holds money: a market job never holds 0.
      const ok = await post('/v1/jobs', { spec: job(H100, { maxPricePerGpuHour: floorOf(H100) }) }, rich.token);
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.ok(ok.body.job.payment.held > 0);
      assert.equal((await post(`/v1/jobs/${ok.body.job.id}/cancel`, {}, rich.token)).status, 200);
      await balanced();
    });

    test('a node with no stake never gets a market job; a node without an ask is paid at least the index', async () => {
      const l = await node(L40S, 1, 0);
      const b = await buyer(50 * USDC);
      const sub = await post('/v1/jobs', { spec: job(L40S) }, b.token);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      for (let i = 0; i < 4; i++) assert.deepEqual(await l.take(250), [], 'no stake: no market job');
      const why = (await get(`/v1/jobs/${jobId}/explain`, b.token)).body;
      assert.ok(
        why.filters.some((f: { name: string }) => f.name === 'stake'),
        JSON.stringify(why),
      );
      // No stake, no supply: the class has no live node.
      assert.equal((await classPoint(L40S))?.supplyUnits ?? 0, 0);

      const indexBefore: number = (await classPoint(L40S))?.price ?? CLASS_CATALOGUE[L40S]!.initial;
      assert.equal((await post(`/v1/nodes/${l.nodeId}/stake`, { amount: stakeToLock(3 * USDC, 1, 60) }, h.provider)).status, 200);
      const [a] = await waitFor(async () => {
        const got = await l.take(300);
        return got.length > 0 ? got : undefined;
      }, 'the staked node takes the job');
      assert.equal(a?.jobId, jobId);
      const attempt = (await get(`/v1/jobs/${jobId}`, b.token)).body.attempts[0];
      // The provider has no ask for the class: the job pays the index (at least the index, never the floor alone).
      assert.ok(attempt.price.pricePerUnitHour >= indexBefore, `price ${attempt.price.pricePerUnitHour} < index ${indexBefore}`);
      assert.ok(attempt.price.pricePerUnitHour >= floorOf(L40S));
      assert.equal((await l.start(a!.attemptId)).status, 200);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await l.result(a!.attemptId, report('succeeded'))).status, 200);
      l.held.delete(a!.attemptId);
      const bill = (await get(`/v1/jobs/${jobId}/bill`, b.token)).body;
      assert.ok(bill.charged > 0, JSON.stringify(bill));

      // A cap at the floor but under the index: accepted (it could clear on a node asking less), but the
      // ask-less node does not take it; it times out with the reason and its escrow comes back.
      const index = (await classPoint(L40S)).price;
      assert.ok(index > floorOf(L40S));
      const cheap = await post('/v1/jobs', { spec: job(L40S, { maxPricePerGpuHour: floorOf(L40S), queueTimeoutSeconds: 1 }) }, b.token);
      assert.equal(cheap.status, 201, JSON.stringify(cheap.body));
      assert.deepEqual(await l.take(200), []);
      const failed = await waitFor(async () => {
        const j = (await get(`/v1/jobs/${cheap.body.job.id}`, b.token)).body.job;
        return j.state === 'failed' ? j : undefined;
      }, 'the cheap job times out');
      assert.match(failed.error, /^waited \d+ s in the queue: no node accepted its price \(cap 0\.150000 USDC per GPU-hour/);
      assert.equal((await wallet(b.token)).inEscrow, 0);
      assert.equal((await wallet(b.token)).available, 50 * USDC - bill.charged);
      await balanced();
    });

    test('dead supply: a node that stops heartbeating leaves the supply at the next epoch; a node without stake never counts', async () => {
      const lock = stakeToLock(3 * USDC, 4, 60);
      await node(A100, 4, lock);
      const quiet = await node(A100, 4, lock);
      await node(A100, 4, 0); // no stake: not supply
      const full = await pointAfter(A100, 0, (p) => p.supplyUnits === 8, 'two staked nodes of 4 GPUs: supply 8');
      quiet.stop();
      await waitFor(async () => ((await get(`/v1/nodes/${quiet.nodeId}`, h.operator)).body.node.status === 'offline' ? true : undefined), 'the quiet node goes offline');
      const offlineEpoch = (await classPoint(A100)).epoch;
      const next = await pointAfter(A100, offlineEpoch, () => true, 'the next epoch');
      assert.equal(next.supplyUnits, 4, 'the offline node left the supply at the next epoch');
      assert.ok(full.epoch < next.epoch);
      // It comes back with its heartbeats.
      quiet.beat();
      await pointAfter(A100, next.epoch, (p) => p.supplyUnits === 8, 'back online: supply 8 again');
    });

    test('phantom demand: 16-GPU jobs where nodes have 8 move no demand or price, then fail with the reason and escrow back', async () => {
      await node(H100, 8, stakeToLock(3 * USDC, 8, 60));
      const b = await buyer(100 * USDC);
      // Nothing runs now: every epoch from here until the burst has failed must count no demand anywhere.
      const start = Math.max(0, ...(await prices()).classes.map((c: { epoch: number }) => c.epoch));
      const ids: string[] = [];
      for (let i = 0; i < 20; i++) {
        const r = await post('/v1/jobs', { spec: job(H100, { resources: { gpu: { count: 16, vendor: 'nvidia', models: ['h100'] } }, queueTimeoutSeconds: 2 }) }, b.token);
        assert.equal(r.status, 201, JSON.stringify(r.body));
        ids.push(r.body.job.id);
      }
      assert.ok((await wallet(b.token)).inEscrow > 0);
      for (const id of ids) {
        const j = await waitFor(async () => {
          const x = (await get(`/v1/jobs/${id}`, b.token)).body.job;
          return x.state !== 'queued' ? x : undefined;
        }, 'the unplaceable job times out');
        assert.equal(j.state, 'failed');
        assert.match(j.error, /^waited \d+ s in the queue: no node fits it \(no online node has 16 nvidia GPUs of models h100; the most on one node is \d+ /);
      }
      const end = (await classPoint(H100)).epoch;
      const hist = (await get('/v1/market/history?limit=1000', h.operator)).body.points.filter((p: { epoch: number }) => p.epoch > start && p.epoch <= end);
      assert.ok(hist.length > 0);
      for (const p of hist) assert.equal(p.demandUnits, 0, `${p.class} epoch ${p.epoch}: the burst is no demand`);
      const h100 = hist.filter((p: { class: string }) => p.class === H100).sort((x: { epoch: number }, y: { epoch: number }) => x.epoch - y.epoch);
      for (let i = 1; i < h100.length; i++) assert.ok(h100[i].price <= h100[i - 1].price, 'the H100 index never rose');
      assert.deepEqual([(await wallet(b.token)).available, (await wallet(b.token)).inEscrow], [100 * USDC, 0], 'every hold came back');
      await balanced();
    });

    test("one buyer's burst of runnable jobs counts at most half the class supply as demand", async () => {
      const n = await node(RTX, 8, stakeToLock(3 * USDC, 8, 60) * 2);
      const b1 = await buyer(100 * USDC);
      const b2 = await buyer(100 * USDC);
      const eight = job(RTX, { resources: { gpu: { count: 8, vendor: 'nvidia', models: ['rtx 4090'] } } });
      const first = await post('/v1/jobs', { spec: eight }, b1.token);
      assert.equal(first.status, 201, JSON.stringify(first.body));
      await waitFor(async () => ((await n.take(300)).length > 0 ? true : undefined), 'the first job takes the node');
      const burst: [string, string][] = [];
      for (let i = 0; i < 30; i++) burst.push([(await post('/v1/jobs', { spec: eight }, b1.token)).body.job.id, b1.token]);
      const cap = buyerDemandCap(8);
      assert.equal(cap, 4);
      const mark = (await classPoint(RTX)).epoch;
      const one = await pointAfter(RTX, mark, (p) => p.demandUnits === 8 + cap, `busy 8 + one buyer's queued demand bounded at ${cap}`);
      assert.equal(one.supplyUnits, 8);
      // A few more epochs: it stays bounded (30 × 8 GPUs queued would be 240).
      const later = await pointAfter(RTX, one.epoch + 3, () => true, 'three epochs on');
      assert.equal(later.demandUnits, 8 + cap);
      for (let i = 0; i < 10; i++) burst.push([(await post('/v1/jobs', { spec: eight }, b2.token)).body.job.id, b2.token]);
      const two = await pointAfter(RTX, later.epoch, (p) => p.demandUnits === 8 + 2 * cap, 'a second buyer adds its own bounded share');
      assert.equal(two.demandUnits, 16);
      for (const [id, token] of burst) assert.equal((await post(`/v1/jobs/${id}/cancel`, {}, token)).status, 200);
      const running = (await get(`/v1/jobs/${first.body.job.id}`, b1.token)).body.attempts[0];
      assert.equal((await n.start(running.id)).status, 200);
      assert.equal((await n.result(running.id, report('succeeded'))).status, 200);
      n.held.clear();
      await balanced();
    });
  });
}

marketAbuse('SQLite', async () => ({ stop: async () => {} }));
marketAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
