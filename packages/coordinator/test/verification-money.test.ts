/**
 * Money visibility of verification over HTTP (issue 11), with a market and verification on, on SQLite and
 * PostgreSQL: a provider's wallet view shows the pay held for verification (GET /v1/wallet
 * heldForVerification, its jobs and the soonest window), and it moves to the balance when the audit passes
 * or the window closes; the treasury view (GET /v1/treasury) shows the audit budget, the treasury's flows,
 * held pay and bonds, and its numbers add up with the ledger; an audit past the budget is not funded (the
 * job is labelled unaudited, reason audit-budget) even while the treasury's balance could pay it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNTS, type TransferRecord } from '@gpux/core';
import { type Assignment, GetJobResponse, TreasuryResponse, WalletResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, gpuAd, type Harness, LoopingAgent, report, type SignOpts, spec, startHarness, waitFor } from './helpers.js';

const USDC = 1_000_000;
const WINDOW_S = 60;

/** An honest signed fake node that heartbeats and runs what it is given (signing with the coordinator's clock). */
class HonestNode extends LoopingAgent {
  token = '';
  constructor(
    url: string,
    private readonly now: () => number,
  ) {
    super(url, gpuAd(`money-${Math.random().toString(36).slice(2, 8)}`));
  }
  override request(method: 'GET' | 'POST', path: string, body?: unknown, o: SignOpts = {}) {
    return super.request(method, path, body, { timestamp: this.now(), ...o });
  }
  protected async handle(a: Assignment): Promise<void> {
    await this.start(a.attemptId);
    await this.result(a.attemptId, report('succeeded', { 'out/answer.txt': `${a.spec.name}\n` }));
  }
}

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function moneySuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`verification money views over HTTP (${name})`, opts, () => {
    let h: Harness;
    let dbh: Database | undefined;
    let buyer: string;
    let skewMs = 0;
    let serial = 0;
    const now = () => Date.now() + skewMs;
    let exec: HonestNode;
    let auditor: HonestNode;

    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const walletOf = async (token: string) => {
      const w = WalletResponse.parse((await get('/v1/wallet', token)).body);
      const usdc = w.balances.find((b) => b.asset === 'usdc');
      assert.ok(usdc && ['heldForVerification', 'heldJobs', 'nextWindowClosesAt'].every((k) => k in usdc), JSON.stringify(w));
      return usdc as Required<typeof usdc>;
    };
    const treasuryView = async () => {
      const t = TreasuryResponse.parse((await get('/v1/treasury', h.operator)).body);
      const usdc = t.assets.find((a) => a.asset === 'usdc');
      assert.ok(usdc && ['pendingPay', 'bonds', 'auditBudget', 'flows'].every((k) => k in usdc), JSON.stringify(t));
      assert.ok(t.auditBudgetBps !== undefined && t.canaries, JSON.stringify(t));
      return { t: t as Required<typeof t>, usdc: usdc as Required<typeof usdc> };
    };
    const balance = (account: string) => h.coord.store.getBalance(account, 'usdc');
    const verification = async (jobId: string) => GetJobResponse.parse((await get(`/v1/jobs/${jobId}`)).body).job.verification ?? null;

    async function addProvider(): Promise<HonestNode> {
      const token = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, token)).status, 201);
      const n = new HonestNode(h.url, now);
      n.token = token;
      const reg = await n.register(undefined, token);
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      assert.equal((await post(`/v1/nodes/${n.nodeId}/stake`, { amount: 500 * USDC }, token)).status, 200);
      n.run();
      return n;
    }

    /** A job run by the executor while the auditor's node is cordoned; `whileAlone` runs before it is uncordoned. */
    async function runJob(whileAlone: (job: { jobId: string; attemptId: string }) => Promise<void>): Promise<{ jobId: string; attemptId: string }> {
      assert.equal((await post(`/v1/nodes/${auditor.nodeId}/cordon`, {}, h.operator)).status, 200);
      try {
        const sub = await post('/v1/jobs', { spec: spec({ name: `money-${++serial}`, resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, maxRetries: 2 }) });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        const jobId: string = sub.body.job.id;
        const v = await waitFor(() => verification(jobId), `job ${jobId}: its verification step opens`);
        const job = { jobId, attemptId: v.attemptId };
        await whileAlone(job);
        return job;
      } finally {
        assert.equal((await post(`/v1/nodes/${auditor.nodeId}/uncordon`, {}, h.operator)).status, 200);
      }
    }

    /** The treasury's postings summed per transfer kind, from the ledger itself (every transfer touching it). */
    async function treasuryByKind(): Promise<Map<string, { in: number; out: number }>> {
      const all: TransferRecord[] = [];
      let cursor: string | undefined;
      do {
        const page = await h.coord.store.listTransfers({ limit: 500, account: ACCOUNTS.treasury, ...(cursor ? { cursor } : {}) });
        all.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      const out = new Map<string, { in: number; out: number }>();
      for (const t of all) {
        for (const p of t.postings.filter((x) => x.account === ACCOUNTS.treasury && x.asset === 'usdc')) {
          const f = out.get(t.kind) ?? { in: 0, out: 0 };
          if (p.amount > 0) f.in += p.amount;
          else f.out -= p.amount;
          out.set(t.kind, f);
        }
      }
      return out;
    }

    /** Every number of the treasury view against the ledger. */
    async function assertTreasuryAddsUp(): Promise<Awaited<ReturnType<typeof treasuryView>>> {
      const view = await treasuryView();
      const { usdc } = view;
      assert.ok(usdc.balanced, JSON.stringify(usdc));
      assert.equal(usdc.treasury, await balance(ACCOUNTS.treasury));
      const ledger = await treasuryByKind();
      assert.deepEqual(
        usdc.flows.map((f) => [f.kind, f.in, f.out]),
        [...ledger.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, f]) => [k, f.in, f.out]),
        "the flows are the treasury's postings per kind",
      );
      assert.equal(
        usdc.flows.reduce((s, f) => s + f.in - f.out, 0),
        usdc.treasury,
        'the flows add up to the treasury balance',
      );
      const b = usdc.auditBudget;
      assert.equal(b.feeIncome, ledger.get('settlement')?.in ?? 0);
      assert.equal(b.funded, (ledger.get('mint')?.in ?? 0) + (ledger.get('deposit')?.in ?? 0));
      assert.equal(b.spent, (ledger.get('escrow.hold')?.out ?? 0) - (ledger.get('escrow.release')?.in ?? 0));
      assert.equal(b.allowance, Math.floor((b.feeIncome * view.t.auditBudgetBps) / 10_000) + b.funded);
      assert.equal(b.left, Math.max(0, b.allowance - b.spent));
      const totals = (await h.coord.store.ledgerTotals()).find((t) => t.asset === 'usdc');
      assert.equal(usdc.pendingPay, totals?.pendingPay);
      assert.equal(usdc.bonds, totals?.bonds);
      // All held pay belongs to the two providers: their wallet views add up to it.
      assert.equal((await walletOf(exec.token)).heldForVerification + (await walletOf(auditor.token)).heldForVerification, usdc.pendingPay);
      const c = await h.coord.store.canaryStats();
      assert.deepEqual(view.t.canaries, { catalog: c.catalog, issued: c.issued, open: c.open, passed: c.passed, failed: c.failed, dropped: c.dropped, noResult: c.noResult });
      return view;
    }

    before(async () => {
      dbh = await database();
      h = await startHarness(
        { ...(dbh.db ? { db: dbh.db } : {}), market: true, verify: true, devMint: true, schedulePassIntervalMs: 20, expiryPassIntervalMs: 50, disputeWindowSeconds: WINDOW_S },
        { clock: { now } },
      );
      buyer = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 200 * USDC })).status, 201);
      // The treasury holds money that is not audit budget (as slashed stake would be): its balance could pay
      // an audit, the budget cannot.
      await h.coord.store.postTransfer({
        kind: 'slash',
        postings: [
          { account: ACCOUNTS.world, asset: 'usdc', amount: -1000 * USDC },
          { account: ACCOUNTS.treasury, asset: 'usdc', amount: 1000 * USDC },
        ],
        at: now(),
        memo: 'test: treasury money outside the audit budget',
      });
      exec = await addProvider();
      auditor = await addProvider();
    });
    after(async () => {
      exec?.stop();
      auditor?.stop();
      await h?.close();
      await dbh?.stop();
    });

    let first: { jobId: string; attemptId: string };
    let firstHeld = 0;

    test('an audit past the budget is not funded: unaudited, reason audit-budget; the held pay shows in the wallet view', async () => {
      const before = await treasuryView();
      assert.equal(before.t.auditBudgetBps, 10_000, 'default: all of the fee income');
      assert.equal(before.usdc.auditBudget.funded, 0);
      first = await runJob(async () => undefined);
      const v = await verification(first.jobId);
      assert.equal(v?.state, 'window');
      assert.equal(v?.label, 'unaudited');
      assert.equal(v?.reason, 'audit-budget');
      assert.equal(v?.p, 1, 'a new node: the audit was drawn');
      firstHeld = await balance(ACCOUNTS.pending(first.attemptId));
      assert.ok(firstHeld > 0, 'the provider share is held');
      const w = await walletOf(exec.token);
      assert.equal(w.heldForVerification, firstHeld);
      assert.equal(w.heldJobs, 1);
      assert.equal(w.nextWindowClosesAt, v?.windowClosesAt);
      const { usdc } = await assertTreasuryAddsUp();
      assert.equal(usdc.auditBudget.spent, 0, 'no check run was held');
      assert.ok(usdc.treasury >= 1000 * USDC, 'the balance alone could have paid the audit: the budget refused it');
      assert.equal(usdc.pendingPay, firstHeld);
    });

    test('funded: the audit runs, the provider is paid only once it passes; the treasury view adds up with the ledger', async () => {
      // The operator puts money into the treasury on purpose (accountId "treasury", with the payment's reference): it adds to the budget.
      const treasuryBefore = await balance(ACCOUNTS.treasury);
      const funded = await post('/v1/wallet/deposits', { amount: 100 * USDC, accountId: 'treasury', reference: 'wire-2026-12-01' }, h.operator);
      assert.equal(funded.status, 201, JSON.stringify(funded.body));
      assert.equal(funded.body.transfer.kind, 'deposit');
      assert.equal(await balance(ACCOUNTS.treasury), treasuryBefore + 100 * USDC);
      assert.equal((await post('/v1/wallet/deposits', { amount: 1, accountId: 'treasury' })).status, 403, 'only operators fund the treasury');
      const availableBefore = (await walletOf(exec.token)).available;
      let held = 0;
      const second = await runJob(async (job) => {
        const v = await verification(job.jobId);
        assert.equal(v?.state, 'auditing');
        held = await balance(ACCOUNTS.pending(job.attemptId));
        assert.ok(held > 0);
        const w = await walletOf(exec.token);
        assert.equal(w.heldForVerification, firstHeld + held, 'both jobs held');
        assert.equal(w.heldJobs, 2);
        const firstWindow = (await verification(first.jobId))?.windowClosesAt;
        assert.equal(w.nextWindowClosesAt, Math.min(firstWindow ?? Number.POSITIVE_INFINITY, v?.windowClosesAt ?? Number.POSITIVE_INFINITY), 'the soonest window');
        assert.equal(w.available, availableBefore, 'not paid while the audit waits');
        const { usdc } = await assertTreasuryAddsUp();
        assert.ok(usdc.auditBudget.spent > 0, "the audit's hold counts while it runs");
        assert.ok(usdc.auditBudget.spent <= usdc.auditBudget.allowance);
      });
      const passed = await waitFor(async () => {
        const v = await verification(second.jobId);
        return v && v.state !== 'auditing' ? v : undefined;
      }, 'the audit decides');
      assert.equal(passed.label, 'audited-passed');
      const w = await waitFor(async () => {
        const x = await walletOf(exec.token);
        return x.heldJobs === 1 ? x : undefined;
      }, 'the audited pay leaves the held amount');
      assert.equal(w.heldForVerification, firstHeld, 'only the unaudited job is still held');
      assert.equal(w.available, availableBefore + held, 'the audited pay is in the balance');
      const { usdc } = await assertTreasuryAddsUp();
      assert.equal(usdc.auditBudget.funded, 100 * USDC);
      assert.ok(usdc.auditBudget.spent > 0, 'the audit run cost the budget what it spent');
    });

    test('the window closes: the unaudited pay is released and nothing is held any more', async () => {
      const availableBefore = (await walletOf(exec.token)).available;
      skewMs += (WINDOW_S + 5) * 1000;
      await waitFor(async () => (await verification(first.jobId))?.state === 'released', 'the window closes');
      const w = await walletOf(exec.token);
      assert.deepEqual([w.heldForVerification, w.heldJobs, w.nextWindowClosesAt], [0, 0, null]);
      assert.equal(w.available, availableBefore + firstHeld);
      const { usdc } = await assertTreasuryAddsUp();
      assert.equal(usdc.pendingPay, 0);
    });
  });
}

moneySuite('SQLite', async () => ({ stop: async () => {} }));
moneySuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
