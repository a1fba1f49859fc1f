/**
 * The verification step end to end (issue 11, TRUST.md layers 4–5): a real coordinator with a market and
 * verification on, on SQLite and on PostgreSQL, with signed fake nodes of six different provider accounts
 * that run jobs honestly or lie as each test says. One world, in order:
 * - an honest executor and auditor: audited-passed; the provider is paid only once the audit passed;
 * - an audit run that loses its node is retried and still passes (its hold covers the retry);
 * - deterministic: false: not-verifiable, never re-executed, not disputable;
 * - 10 passes in a row: the rate drops (p = 0.1 recorded) and a sampled-out job waits for its window,
 *   whose close releases the pay;
 * - a false dispute (bond to the provider, less the referee run) and a right one (bond back, node slashed);
 * - a lying executor: referees one at a time on distinct operators, wrong-result, pay back to the buyer, stake
 *   slashed by min(stake, 20 × price) with 10% to the treasury, banned, its penalty listed;
 * - a lying auditor: the auditor is penalized, the executor passes;
 * - replicas: 2: held at submission, a second run on another operator paid by the buyer (replicated-agreed),
 *   a lying replica convicted by referees, refusals (deterministic: false, gangs, a short wallet), a cancel;
 * - verify (a buyer's checker): runs whose outputs differ only in a timestamp line pass by the checker; a
 *   lying executor whose output the checker rejects is convicted by referees, each checked by the checker.
 * After each, the ledger balances (GET /v1/treasury).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNTS, REPORTER_SHARE_BPS } from '@gpux/core';
import { type Assignment, BillResponse, GetJobResponse, isInlineInput, type JobSpecInput } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { cryptoRandom } from '../src/random.js';
import { call, gpuAd, type Harness, LoopingAgent, report, type SignOpts, spec, startHarness, waitFor } from './helpers.js';

const USDC = 1_000_000;
const STAKE = 500 * USDC;
const WINDOW_S = 60;
const PROVIDERS = 6;

/** stamp: honest, but the output ends with a line that differs on every run (a timestamp): not bit-exact. */
type Act = 'honest' | 'lie' | 'fail' | 'stamp';
/** How the n-th run (0: the buyer's job, then the check runs in the order they were queued) of a spec name is done. */
type Rule = (n: number, node: Node) => Act;

/** A signed fake node that heartbeats, takes work and reports as the world's rule for the job's spec says. */
class Node extends LoopingAgent {
  /** Set by the test once the coordinator banned it (no more runs expected of it). */
  banned = false;
  token = '';
  providerId = '';
  constructor(
    url: string,
    private readonly world: World,
  ) {
    super(url, gpuAd(`verify-${Math.random().toString(36).slice(2, 8)}`));
  }
  /** Signed with the coordinator's (skewed) clock, as a node whose clock is in sync with it. */
  override request(method: 'GET' | 'POST', path: string, body?: unknown, o: SignOpts = {}) {
    return super.request(method, path, body, { timestamp: this.world.now(), ...o });
  }
  protected handle(a: Assignment): Promise<void> {
    // Checker runs get the two runs' outputs as inline inputs only.
    return this.perform(a.attemptId, a.spec.name, a.spec.command ?? [], (a.spec.inputs ?? []).filter(isInlineInput));
  }
  private async perform(attemptId: string, name: string, command: readonly string[], inputs: ReadonlyArray<{ path: string; content: string; encoding?: string }>): Promise<void> {
    if (name.startsWith('checker:')) {
      // A run of the buyer's checker (spec.verify): the test computes its verdict from its inputs.
      const exit = this.world.checker(inputs);
      await this.start(attemptId);
      await this.result(attemptId, report(exit === 0 ? 'succeeded' : 'failed', {}, exit));
      return;
    }
    const n = this.world.seen.get(name) ?? 0;
    this.world.seen.set(name, n + 1);
    const act = (this.world.rules.get(name) ?? (() => 'honest'))(n, this);
    await this.start(attemptId);
    if (act === 'fail') await this.result(attemptId, { ...report('failed', {}, null), error: 'executor crashed (test)' });
    else if (act === 'stamp') await this.result(attemptId, report('succeeded', { 'out/answer.txt': `${name}: ${command.join(' ')}\nat ${Date.now()}.${Math.random()}\n` }));
    else await this.result(attemptId, report('succeeded', { 'out/answer.txt': act === 'lie' ? `not really ${name}\n` : `${name}: ${command.join(' ')}\n` }));
  }
}

interface World {
  now(): number;
  rules: Map<string, Rule>;
  seen: Map<string, number>;
  /** The buyer's checker, as an honest node would run it: its exit code for these inputs (a/ and b/). */
  checker(inputs: ReadonlyArray<{ path: string; content: string; encoding?: string }>): number;
}

/** The test's checker: the two sides agree when their files are equal but for lines starting with "at " (timestamps). */
function timestampInsensitiveChecker(inputs: ReadonlyArray<{ path: string; content: string; encoding?: string }>): number {
  const side = (prefix: string) =>
    new Map(
      inputs
        .filter((f) => f.path.startsWith(prefix))
        .map((f) => [f.path.slice(prefix.length), Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8').toString().split('\n').filter((l) => !l.startsWith('at ')).join('\n')]),
    );
  const a = side('a/');
  const b = side('b/');
  return a.size === b.size && [...a].every(([path, text]) => b.get(path) === text) ? 0 : 1;
}

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function verificationSuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`verification step over HTTP (${name})`, opts, () => {
    let h: Harness;
    let dbh: Database | undefined;
    let buyer: string;
    const world: World = { now: () => Date.now() + skewMs, rules: new Map(), seen: new Map(), checker: timestampInsensitiveChecker };
    const nodes: Node[] = [];
    /** Added to the coordinator's clock: moves past dispute windows. */
    let skewMs = 0;
    /** When set, the coordinator's Random draws this (the audit draw after a commitment, placement draws). */
    let forcedDraw: number | null = null;
    let serial = 0;

    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    /**
     * What a job's pay.release moved into the provider's wallet. The wallet total also moves when pay of the
     * operator's earlier check runs is released by the verification loop, at a time the test does not control.
     */
    /** The provider's share of an attempt's charges (what pending:<attempt> held, however soon it was released). */
    const shareOf = async (attemptId: string): Promise<number> => {
      const a = await h.coord.store.getAttempt(attemptId);
      return (a?.settlement.charged ?? 0) - (a?.settlement.fee ?? 0);
    };
    const releasedTo = async (token: string, jobId: string): Promise<number> =>
      ((await get('/v1/wallet/history?limit=200', token)).body.entries as Array<{ kind: string; amount: number; jobId: string | null }>)
        .filter((e) => e.kind === 'pay.release' && e.jobId === jobId)
        .reduce((n, e) => n + e.amount, 0);
    const usdc = async (token: string): Promise<number> => (await get('/v1/wallet', token)).body.balances.find((b: { asset: string }) => b.asset === 'usdc')?.available ?? 0;
    const balance = (account: string) => h.coord.store.getBalance(account, 'usdc');
    const assertBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };
    const jobOf = async (jobId: string) => GetJobResponse.parse((await get(`/v1/jobs/${jobId}`)).body);
    const verification = async (jobId: string) => (await jobOf(jobId)).job.verification ?? null;
    const bill = async (jobId: string) => BillResponse.parse((await get(`/v1/jobs/${jobId}/bill`)).body);
    const live = () => nodes.filter((n) => !n.banned);
    const nodeOf = (id: string) => nodes.find((n) => n.nodeId === id) as Node;
    const until = (jobId: string, ok: (v: NonNullable<Awaited<ReturnType<typeof verification>>>) => boolean, what: string) =>
      waitFor(async () => {
        const v = await verification(jobId);
        return v && ok(v) ? v : undefined;
      }, `job ${jobId}: ${what}`).catch(async (e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify(await h.coord.store.getVerification(jobId))}`);
      });

    async function addProvider(): Promise<Node> {
      const token = await h.buyer();
      const providerId: string = (await get('/v1/whoami', token)).body.accountId;
      assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, token)).status, 201);
      const n = new Node(h.url, world);
      n.token = token;
      n.providerId = providerId;
      const reg = await n.register(undefined, token);
      assert.equal(reg.status, 200, JSON.stringify(reg.body));
      assert.equal((await post(`/v1/nodes/${n.nodeId}/stake`, { amount: STAKE }, token)).status, 200);
      n.run();
      nodes.push(n);
      return n;
    }

    /** A job run by `exec` (the other nodes cordoned until it ended); its verification step as it opened. */
    async function runOn(
      exec: Node,
      rule: Rule,
      over: Partial<JobSpecInput> = {},
      whileAlone?: (job: { jobId: string; attemptId: string }) => Promise<void>,
    ): Promise<{ jobId: string; attemptId: string; name: string }> {
      const name = `verify-${++serial}`;
      world.rules.set(name, rule);
      const others = live().filter((n) => n !== exec);
      for (const n of others) assert.equal((await post(`/v1/nodes/${n.nodeId}/cordon`, {}, h.operator)).status, 200);
      try {
        const sub = await post('/v1/jobs', { spec: spec({ name, resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, maxRetries: 2, ...over }) });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        const jobId: string = sub.body.job.id;
        const v = await until(jobId, () => true, 'its verification step opens').catch(async (e: Error) => {
          throw new Error(`${e.message}\n${JSON.stringify((await jobOf(jobId)).job)}\n${JSON.stringify((await get(`/v1/jobs/${jobId}/explain`)).body)}`);
        });
        const j = await jobOf(jobId);
        assert.equal(j.job.state, 'succeeded');
        assert.equal(j.attempts[0]?.nodeId, exec.nodeId);
        await whileAlone?.({ jobId, attemptId: v.attemptId });
        return { jobId, attemptId: v.attemptId, name };
      } finally {
        for (const n of others) assert.equal((await post(`/v1/nodes/${n.nodeId}/uncordon`, {}, h.operator)).status, 200);
      }
    }

    /** The check runs of a job (store records: job ids, nodes, results). */
    const checksOf = async (jobId: string) => (await h.coord.store.getVerification(jobId))?.checks ?? [];
    const providerOfNode = (nodeId: string | null) => nodes.find((n) => n.nodeId === nodeId)?.providerId;

    before(async () => {
      dbh = await database();
      h = await startHarness(
        {
          ...(dbh.db ? { db: dbh.db } : {}),
          market: true,
          verify: true,
          devMint: true,
          schedulePassIntervalMs: 20,
          expiryPassIntervalMs: 50,
          disputeWindowSeconds: WINDOW_S,
          disputeBondMin: 5 * USDC,
        },
        {
          clock: { now: () => Date.now() + skewMs },
          random: { next: () => forcedDraw ?? cryptoRandom.next(), bytes: (n: number) => cryptoRandom.bytes(n) },
        },
      );
      buyer = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 200 * USDC })).status, 201);
      // The treasury's audit budget (TRUST.md "who pays"): funded here as if from its fees.
      await h.coord.store.postTransfer({
        kind: 'mint',
        postings: [
          { account: ACCOUNTS.world, asset: 'usdc', amount: -1000 * USDC },
          { account: ACCOUNTS.treasury, asset: 'usdc', amount: 1000 * USDC },
        ],
        at: Date.now(),
        memo: 'test: the audit budget',
      });
      for (let i = 0; i < PROVIDERS; i++) await addProvider();
    });
    after(async () => {
      for (const n of nodes) n.stop();
      await h?.close();
      await dbh?.stop();
    });

    test('an honest executor and auditor: audited-passed, and the provider is paid only after the audit', async () => {
      const exec = live()[0] as Node;
      // The other nodes are cordoned until the job ended: the audit waits, and the pay with it.
      let pending = 0;
      const { jobId, attemptId } = await runOn(exec, () => 'honest', {}, async (job) => {
        const opened = await verification(job.jobId);
        assert.equal(opened?.state, 'auditing');
        assert.equal(opened?.label, 'audit-pending');
        assert.equal(opened?.p, 1, 'a new node: every job audited');
        assert.equal(opened?.reason, 'first-audits');
        pending = await balance(ACCOUNTS.pending(job.attemptId));
        const held = await bill(job.jobId);
        assert.ok(pending > 0, 'the provider share is held in pending:<attempt>');
        assert.equal(held.verification?.payHeld, pending);
        assert.equal(held.verification?.payReleased, 0);
        assert.equal(await releasedTo(exec.token, job.jobId), 0, 'not paid while the audit waits');
      });

      const v = await until(jobId, (x) => x.state !== 'auditing', 'the audit decides');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'audited-passed');
      assert.match(v.summary, /audited with p=1\.00: an independent re-run on another operator matched/);
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [['audit', true]],
      );
      const [audit] = await checksOf(jobId);
      assert.notEqual(providerOfNode(audit?.nodeId ?? null), exec.providerId, 'the auditor is another operator');
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0);
      assert.equal(await releasedTo(exec.token, jobId), pending, 'pending:<attempt> drained into the provider wallet');
      const b = await bill(jobId);
      assert.equal(b.verification?.payHeld, 0);
      assert.equal(b.verification?.payReleased, pending);
      assert.ok(b.lines.some((l) => l.kind === 'pay.release' && l.amount === -pending));
      await assertBalanced();
    });

    test('an audit run whose node fails is retried on another operator and still passes: its hold covers the retry', async () => {
      const exec = live()[0] as Node;
      const treasuryBefore = await balance(ACCOUNTS.treasury);
      // Run 0 is the buyer's job; run 1 the audit's first attempt (an executor crash, no exit code); run 2 its retry.
      const { jobId } = await runOn(exec, (n) => (n === 1 ? 'fail' : 'honest'));
      const v = await until(jobId, (x) => x.state !== 'auditing', 'the audit decides');
      assert.equal(v.label, 'audited-passed', JSON.stringify(v));
      const [audit] = await checksOf(jobId);
      const check = await h.coord.store.getJob(audit?.jobId as string);
      assert.equal(check?.state, 'succeeded');
      assert.equal(check?.attemptCount, 2);
      assert.equal(await balance(ACCOUNTS.wallet('system:audit')), 0, "the system buyer's wallet is left empty");
      assert.equal(await balance(ACCOUNTS.escrow(audit?.jobId as string)), 0);
      // The treasury paid the two audit attempts (less its own fees); the rest of the three-try hold came back.
      const spent = treasuryBefore - (await balance(ACCOUNTS.treasury));
      assert.ok(spent > 0 && spent <= 2 * (await h.coord.store.getJob(jobId))!.payment!.held, `the treasury spent ${spent}`);
      await assertBalanced();
    });

    test('deterministic: false is never re-executed: not-verifiable, in its window, not disputable', async () => {
      const exec = live()[1] as Node;
      const { jobId } = await runOn(exec, () => 'honest', { deterministic: false });
      const v = await verification(jobId);
      assert.equal(v?.state, 'window');
      assert.equal(v?.label, 'not-verifiable');
      assert.equal(v?.p, 0);
      assert.deepEqual(v?.checks, []);
      assert.match(v?.summary ?? '', /not verifiable .* disputable until/);
      const d = await post(`/v1/jobs/${jobId}/dispute`, { reason: 'cannot be checked anyway' });
      assert.equal(d.status, 409, JSON.stringify(d.body));
      assert.match(d.body.error.message, /deterministic: false/);
      await assertBalanced();
    });

    test('after 10 passes in a row the rate drops: p = 0.1 recorded, a sampled-out job waits for its window, then its pay is released', async () => {
      const exec = live()[0] as Node;
      for (let i = 0; i < 8; i++) {
        const { jobId } = await runOn(exec, () => 'honest');
        assert.equal((await until(jobId, (x) => x.state !== 'auditing', 'the audit decides')).label, 'audited-passed');
      }
      forcedDraw = 0.99;
      let sampled: { jobId: string; attemptId: string };
      try {
        sampled = await runOn(exec, () => 'honest');
      } finally {
        forcedDraw = null;
      }
      const v = await verification(sampled.jobId);
      assert.equal(v?.p, 0.1, 'p = max(p_floor 0.1, 1/10)');
      assert.equal(v?.draw, 0.99);
      assert.equal(v?.reason, 'sampled-out');
      assert.equal(v?.state, 'window');
      assert.equal(v?.label, 'sampled-out');
      assert.match(v?.summary ?? '', /sampled out \(p=0\.10\); disputable until .*; pay held until then/);
      const pending = await balance(ACCOUNTS.pending(sampled.attemptId));
      assert.ok(pending > 0);

      skewMs += (WINDOW_S + 5) * 1000; // the coordinator's clock passes the window; the verification loop closes it
      const released = await until(sampled.jobId, (x) => x.state === 'released', 'the window closes');
      assert.equal(released.label, 'sampled-out');
      assert.equal(await balance(ACCOUNTS.pending(sampled.attemptId)), 0);
      assert.equal(await releasedTo(exec.token, sampled.jobId), pending);
      await assertBalanced();
    });

    test('a false dispute: the referee run agrees with the node; the bond goes to its provider, less the referee run', async () => {
      const exec = live()[0] as Node;
      forcedDraw = 0.99;
      let job: { jobId: string; attemptId: string };
      try {
        job = await runOn(exec, () => 'honest');
      } finally {
        forcedDraw = null;
      }
      assert.equal((await verification(job.jobId))?.label, 'sampled-out');
      const pending = await balance(ACCOUNTS.pending(job.attemptId));
      const buyerBefore = await usdc(buyer);
      const providerBefore = await usdc(exec.token);
      const treasuryBefore = await balance(ACCOUNTS.treasury);
      const d = await post(`/v1/jobs/${job.jobId}/dispute`, { reason: 'I do not believe it' });
      assert.equal(d.status, 200, JSON.stringify(d.body));
      const bond: number = d.body.bond;
      assert.equal(await usdc(buyer), buyerBefore - bond);

      const v = await until(job.jobId, (x) => x.state !== 'refereeing', 'the referee decides');
      assert.equal(v.state, 'passed');
      assert.equal(v.label, 'dispute-rejected');
      const [referee] = await checksOf(job.jobId);
      assert.equal(referee?.kind, 'referee');
      assert.notEqual(providerOfNode(referee?.nodeId ?? null), exec.providerId);
      const b = await bill(job.jobId);
      const refereeCost = -(b.lines.find((l) => l.kind === 'dispute.forfeit' && l.account === ACCOUNTS.treasury)?.amount ?? 0);
      assert.equal(b.verification?.bondForfeited, bond);
      assert.equal(b.verification?.bondHeld, 0);
      assert.ok(refereeCost >= 0 && refereeCost < bond, `referee cost ${refereeCost}`);
      assert.equal(await usdc(buyer), buyerBefore - bond, 'the bond is gone');
      assert.equal(await usdc(exec.token), providerBefore + pending + bond - refereeCost, 'pay released and the bond (less the referee run) paid');
      assert.ok((await balance(ACCOUNTS.treasury)) <= treasuryBefore + refereeCost);
      assert.equal(await balance(ACCOUNTS.bond(job.jobId)), 0);
      await assertBalanced();
    });

    test('a right dispute: the referee contradicts the node; bond back, pay forfeited to the buyer, the node slashed and banned', async () => {
      const exec = live()[0] as Node;
      forcedDraw = 0.99;
      let job: { jobId: string; attemptId: string };
      try {
        job = await runOn(exec, (n) => (n === 0 ? 'lie' : 'honest'));
      } finally {
        forcedDraw = null;
      }
      const pending = await balance(ACCOUNTS.pending(job.attemptId));
      const buyerBefore = await usdc(buyer);
      const stakeBefore = await balance(ACCOUNTS.stake(exec.nodeId));
      const d = await post(`/v1/jobs/${job.jobId}/dispute`, { reason: 'the answer is wrong' });
      assert.equal(d.status, 200, JSON.stringify(d.body));
      const v = await until(job.jobId, (x) => x.state !== 'refereeing', 'the referee decides');
      assert.equal(v.state, 'failed');
      assert.equal(v.label, 'wrong-result');
      const b = await bill(job.jobId);
      const slashed = stakeBefore - (await balance(ACCOUNTS.stake(exec.nodeId)));
      assert.equal(slashed, Math.min(stakeBefore, 20 * b.charged), 'min(stake, 20 × the job price)');
      const toReporter = Math.floor((slashed * REPORTER_SHARE_BPS) / 10_000);
      assert.equal(b.verification?.bondReturned, d.body.bond);
      assert.equal(b.verification?.payForfeited, pending);
      // The buyer reported it: the reporter's 10% is the buyer's too.
      assert.equal(b.verification?.compensation, slashed);
      assert.equal(await usdc(buyer), buyerBefore + pending + slashed, `bond back, pay back, the slash (reporter ${toReporter} + buyer ${slashed - toReporter})`);
      exec.banned = true;
      const hb = await exec.heartbeat();
      assert.ok(hb.status >= 400, `a banned node's signed request is refused: ${hb.status}`);
      await assertBalanced();
    });

    test('a lying executor: referees one at a time on distinct operators, wrong-result, pay back, slashed, banned, penalty listed', async () => {
      const exec = live()[0] as Node;
      const { jobId, attemptId } = await runOn(exec, (n) => (n === 0 ? 'lie' : 'honest'));
      const pending = await balance(ACCOUNTS.pending(attemptId));
      const buyerBefore = await usdc(buyer);
      const stakeBefore = await balance(ACCOUNTS.stake(exec.nodeId));
      const v = await until(jobId, (x) => x.state === 'failed' || x.state === 'passed' || x.state === 'window', 'the referees decide');
      assert.equal(v.label, 'wrong-result', JSON.stringify(v));
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [
          ['audit', false],
          ['referee', false],
          ['referee', false],
        ],
      );
      const operators = [exec.providerId, ...(await checksOf(jobId)).map((c) => providerOfNode(c.nodeId))];
      assert.equal(new Set(operators).size, 4, `executor, auditor and each referee on a different operator: ${operators.join(', ')}`);

      const b = await bill(jobId);
      const slashed = stakeBefore - (await balance(ACCOUNTS.stake(exec.nodeId)));
      assert.equal(slashed, Math.min(stakeBefore, 20 * b.charged));
      const toTreasury = Math.floor((slashed * REPORTER_SHARE_BPS) / 10_000);
      assert.equal(b.verification?.payForfeited, pending);
      assert.equal(b.verification?.compensation, slashed - toTreasury);
      assert.equal(await usdc(buyer), buyerBefore + pending + slashed - toTreasury);
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0);

      exec.banned = true;
      const hb = await exec.heartbeat();
      assert.ok(hb.status >= 400, `a banned node's signed request is refused: ${hb.status}`);
      const pen = await get(`/v1/nodes/${exec.nodeId}/penalties`, exec.token);
      assert.equal(pen.status, 200, JSON.stringify(pen.body));
      assert.equal(pen.body.banned, true);
      const wrong = pen.body.otherPenalties.find((p: { jobId: string }) => p.jobId === jobId);
      assert.equal(wrong?.kind, 'wrong-result');
      assert.equal(wrong?.slashed, slashed);
      assert.equal(wrong?.banned, true);
      assert.equal(wrong?.evidence.executor.outputDigest, (await h.coord.store.getVerification(jobId))?.outputDigest);
      await assertBalanced();
    });

    test('a lying auditor: the auditor is penalized and banned, the executor passes and is paid', async () => {
      const exec = live()[0] as Node;
      const { jobId, attemptId } = await runOn(exec, (n) => (n === 1 ? 'lie' : 'honest'));
      const v = await until(jobId, (x) => x.state === 'failed' || x.state === 'passed' || x.state === 'window', 'the referees decide');
      assert.equal(v.state, 'passed', JSON.stringify(v));
      assert.equal(v.label, 'audited-passed');
      assert.equal(await releasedTo(exec.token, jobId), await shareOf(attemptId));
      const [audit] = await checksOf(jobId);
      const auditor = nodeOf(audit?.nodeId as string);
      auditor.banned = true;
      const pen = await get(`/v1/nodes/${auditor.nodeId}/penalties`, auditor.token);
      assert.equal(pen.status, 200, JSON.stringify(pen.body));
      assert.equal(pen.body.otherPenalties[0]?.kind, 'wrong-result');
      assert.ok(pen.body.otherPenalties[0]?.slashed > 0);
      assert.ok((await auditor.heartbeat()).status >= 400);
      await assertBalanced();
    });

    // replicas: 2 (TRUST.md layer 7): the buyer asks for a second run on another operator and pays for it.
    const replicaOf = (jobId: string) => `${jobId}-replica`;
    /** Enough independent operators for a replica and two referees, whatever the tests above banned. */
    const ensureOperators = async (n: number) => {
      while (live().length < n) await addProvider();
    };
    const chargedTo = async (jobId: string) => (await bill(jobId)).charged;

    test('replicas: 2, both honest: replicated-agreed, the buyer pays both runs (held at submission), both providers paid after the match', async () => {
      await ensureOperators(3);
      const exec = live()[0] as Node;
      const execBefore = await usdc(exec.token);
      const buyerBefore = await usdc(buyer);
      const passesBefore = (await h.coord.store.getReputation(exec.nodeId))?.auditsPassed ?? 0;
      let held = 0;
      const { jobId, attemptId } = await runOn(exec, () => 'honest', { replicas: 2 }, async (job) => {
        const opened = await verification(job.jobId);
        assert.equal(opened?.state, 'auditing');
        assert.equal(opened?.label, 'replica-pending');
        assert.equal(opened?.reason, 'replicated');
        assert.equal(opened?.p, 1);
        assert.equal(opened?.draw, null, 'replicated: no draw');
        assert.match(opened?.summary ?? '', /replicas: 2: the second run on another operator/);
        held = (await h.coord.store.getJob(job.jobId))?.payment?.held ?? 0;
        const replica = await h.coord.store.getJob(replicaOf(job.jobId));
        assert.equal(replica?.kind, 'audit');
        assert.equal(replica?.checkOf, job.jobId);
        assert.equal(replica?.buyerId, (await get('/v1/whoami')).body.accountId, "the replica run is the buyer's");
        assert.equal(await balance(ACCOUNTS.escrow(replicaOf(job.jobId))), held, 'its escrow was held at submission');
      });
      const v = await until(jobId, (x) => x.state !== 'auditing' && x.state !== 'refereeing', 'the replica decides');
      assert.equal(v.state, 'passed', JSON.stringify(v));
      assert.equal(v.label, 'replicated-agreed');
      assert.match(v.summary, /^replicated and agreed/);
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [['audit', true]],
      );
      const [replica] = await checksOf(jobId);
      const replicaNode = nodeOf(replica?.nodeId as string);
      assert.notEqual(replicaNode.providerId, exec.providerId, 'the replica ran on another operator');
      // Both runs charged to the buyer; the unspent rest of both holds came back.
      const charged = await chargedTo(jobId);
      const replicaCharged = await chargedTo(replicaOf(jobId));
      assert.ok(charged > 0 && replicaCharged > 0, `${charged} and ${replicaCharged}`);
      assert.equal(await usdc(buyer), buyerBefore - charged - replicaCharged, 'the buyer paid both runs, nothing else');
      assert.equal(await balance(ACCOUNTS.escrow(jobId)), 0);
      assert.equal(await balance(ACCOUNTS.escrow(replicaOf(jobId))), 0);
      // Both providers paid once the results matched; nothing left pending.
      const replicaAttempt = (await h.coord.store.listAttempts(replicaOf(jobId)))[0];
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0);
      assert.equal(await balance(ACCOUNTS.pending(replicaAttempt?.id as string)), 0);
      assert.ok((await usdc(exec.token)) > execBefore, 'the executor was paid');
      assert.equal((await bill(replicaOf(jobId))).verification?.payReleased, (await bill(replicaOf(jobId))).toProviders, "the replica's provider was paid");
      assert.equal((await h.coord.store.getReputation(exec.nodeId))?.auditsPassed, passesBefore + 1, 'an agreement counts as an audit pass');
      await assertBalanced();
    });

    test('replicas: 2, the replica lies: referees on further operators side with the executor; the replica is penalized and its pay goes back to the buyer', async () => {
      await ensureOperators(5);
      const exec = live()[0] as Node;
      const execBefore = await usdc(exec.token);
      const { jobId, attemptId } = await runOn(exec, (n) => (n === 1 ? 'lie' : 'honest'), { replicas: 2 });
      const pending = await balance(ACCOUNTS.pending(attemptId));
      const v = await until(jobId, (x) => x.state === 'failed' || x.state === 'passed' || x.state === 'window', 'the referees decide');
      assert.equal(v.state, 'passed', JSON.stringify(v));
      assert.equal(v.label, 'replicated-agreed');
      assert.match(v.verdict ?? '', /the replica was wrong/);
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [
          ['audit', false],
          ['referee', true],
          ['referee', true],
        ],
      );
      const checks = await checksOf(jobId);
      const operators = [exec.providerId, ...checks.map((c) => providerOfNode(c.nodeId))];
      assert.equal(new Set(operators).size, 4, `executor, replica and each referee on a different operator: ${operators.join(', ')}`);
      assert.equal(await usdc(exec.token), execBefore + pending, 'the honest executor is paid');
      const liar = nodeOf(checks[0]?.nodeId as string);
      liar.banned = true;
      const pen = await get(`/v1/nodes/${liar.nodeId}/penalties`, liar.token);
      assert.equal(pen.status, 200, JSON.stringify(pen.body));
      assert.equal(pen.body.otherPenalties[0]?.kind, 'wrong-result');
      assert.equal(pen.body.otherPenalties[0]?.jobId, replicaOf(jobId));
      // The replica was the buyer's run: its forfeited pay and the buyer's share of the slash go to the buyer.
      const rb = await bill(replicaOf(jobId));
      assert.ok((rb.verification?.payForfeited ?? 0) > 0, JSON.stringify(rb.verification));
      assert.ok((rb.verification?.compensation ?? 0) > 0);
      assert.ok((await liar.heartbeat()).status >= 400);
      await assertBalanced();
    });

    test('replicas: 2 is refused with deterministic: false, for gang jobs, and when the buyer cannot hold both runs', async () => {
      const base = { resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, replicas: 2 as const };
      const nd = await post('/v1/jobs', { spec: spec({ name: 'replica-nd', ...base, deterministic: false }) });
      assert.equal(nd.status, 400, JSON.stringify(nd.body));
      assert.match(JSON.stringify(nd.body), /results cannot be compared/);
      const gang = await post('/v1/jobs', { spec: spec({ name: 'replica-gang', ...base, nodes: 2 }) });
      assert.equal(gang.status, 400, JSON.stringify(gang.body));
      assert.match(JSON.stringify(gang.body), /not supported for gang jobs/);
      // One run holds 3 USDC/h × 600 s = 0.5 USDC: a wallet of 0.7 holds one run, not two.
      const poor = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 700_000 }, poor)).status, 201);
      const short = await post('/v1/jobs', { spec: spec({ name: 'replica-poor', ...base }) }, poor);
      assert.equal(short.status, 402, JSON.stringify(short.body));
      assert.match(short.body.error.message, /2 runs \(replicas: 2\)/);
      assert.equal(await usdc(poor), 700_000, 'nothing held');
      await assertBalanced();
    });

    test('replicas: 2 cancelled while queued: both holds go back to the buyer', async () => {
      const cordoned = live();
      for (const n of cordoned) assert.equal((await post(`/v1/nodes/${n.nodeId}/cordon`, {}, h.operator)).status, 200);
      try {
        const buyerBefore = await usdc(buyer);
        const sub = await post('/v1/jobs', { spec: spec({ name: 'replica-cancel', resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, replicas: 2 }) });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        const jobId: string = sub.body.job.id;
        const held = (await h.coord.store.getJob(jobId))?.payment?.held ?? 0;
        assert.equal(await usdc(buyer), buyerBefore - 2 * held, 'both runs held at submission');
        assert.equal((await post(`/v1/jobs/${jobId}/cancel`, {})).status, 200);
        assert.equal(await usdc(buyer), buyerBefore, 'both holds released');
        assert.equal(await balance(ACCOUNTS.escrow(replicaOf(jobId))), 0);
        assert.equal(await h.coord.store.getJob(replicaOf(jobId)), undefined, 'no replica run was written');
      } finally {
        for (const n of cordoned) assert.equal((await post(`/v1/nodes/${n.nodeId}/uncordon`, {}, h.operator)).status, 200);
      }
      await assertBalanced();
    });

    // verify: { image, command } (issue 11): jobs that cannot be bit-exact are compared by the buyer's checker.
    const VERIFY = { verify: { image: 'buyer/checker:1', command: ['sh', '-c', 'diff <(grep -v "^at " a) <(grep -v "^at " b)'] } };
    const checkersOf = async (jobId: string) => (await checksOf(jobId)).filter((c) => c.kind === 'checker');

    test("verify: outputs that differ only in a timestamp line pass by the buyer's checker (run on a third operator, paid by the treasury)", async () => {
      await ensureOperators(6);
      const exec = live()[0] as Node;
      const { jobId, attemptId } = await runOn(exec, () => 'stamp', VERIFY);
      const v = await until(jobId, (x) => x.state !== 'auditing' && x.state !== 'refereeing', 'the checker decides');
      assert.equal(v.state, 'passed', JSON.stringify(v));
      assert.equal(v.label, 'audited-passed');
      assert.match(v.summary, /agreed according to the buyer's checker/);
      assert.deepEqual(
        v.checks.map((c) => [c.kind, c.agreed]),
        [
          ['audit', true],
          ['checker', true],
        ],
      );
      const [audit, checker] = await checksOf(jobId);
      assert.notEqual(audit?.outputDigest, (await h.coord.store.getVerification(jobId))?.outputDigest, 'not bit-exact: the digests differ');
      const checkerOperator = providerOfNode(checker?.nodeId ?? null);
      assert.ok(checkerOperator && checkerOperator !== exec.providerId && checkerOperator !== providerOfNode(audit?.nodeId ?? null), 'the checker ran with neither compared operator');
      const job = await h.coord.store.getJob(checker?.jobId as string);
      assert.equal(job?.spec.image, 'buyer/checker:1');
      assert.equal(job?.buyerId, 'system:audit', 'paid by the treasury');
      assert.equal(await releasedTo(exec.token, jobId), await shareOf(attemptId), 'the executor is paid once the checker agreed');
      await assertBalanced();
    });

    test('verify: a lying executor whose output the checker rejects is convicted after referees, each compared by the checker', async () => {
      await ensureOperators(6);
      const exec = live()[0] as Node;
      const { jobId, attemptId } = await runOn(exec, (n) => (n === 0 ? 'lie' : 'stamp'), VERIFY);
      const pending = await balance(ACCOUNTS.pending(attemptId));
      const buyerBefore = await usdc(buyer);
      const v = await until(jobId, (x) => x.state === 'failed' || x.state === 'passed' || x.state === 'window', 'the referees decide');
      assert.equal(v.label, 'wrong-result', JSON.stringify(v));
      assert.deepEqual(
        v.checks.filter((c) => c.kind !== 'checker').map((c) => [c.kind, c.agreed]),
        [
          ['audit', false],
          ['referee', false],
          ['referee', false],
        ],
      );
      assert.equal((await checkersOf(jobId)).length, 5, 'executor vs auditor, then each referee vs executor and vs auditor');
      assert.match(v.verdict ?? '', /according to the buyer's checker/);
      assert.ok((await usdc(buyer)) >= buyerBefore + pending, 'the pay went back to the buyer (and a share of the slash)');
      exec.banned = true;
      const pen = await get(`/v1/nodes/${exec.nodeId}/penalties`, exec.token);
      assert.equal(pen.body.otherPenalties.find((p: { jobId: string }) => p.jobId === jobId)?.kind, 'wrong-result');
      await assertBalanced();
    });

    test('verify with deterministic: false is refused (400), saying which to use', async () => {
      const r = await post('/v1/jobs', { spec: spec({ name: 'verify-nd', resources: { gpu: { count: 1 } }, maxPricePerGpuHour: 3 * USDC, deterministic: false, ...VERIFY }) });
      assert.equal(r.status, 400, JSON.stringify(r.body));
      assert.match(JSON.stringify(r.body), /drop deterministic: false/);
    });
  });
}

verificationSuite('SQLite', async () => ({ stop: async () => {} }));
verificationSuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
