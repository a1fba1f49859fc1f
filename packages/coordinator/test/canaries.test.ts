/**
 * Canaries end to end (issue 11, TRUST.md layer 6): a real coordinator with a market, verification and
 * GPUX_CANARY_RATE=1, on SQLite and on PostgreSQL, with signed fake nodes of six provider accounts. One world,
 * in order (which nodes may take work is steered by cordoning; the coordinator's Random draws 0, so every
 * buyer job draws a canary and the newest catalog entry is issued):
 * - a buyer's job audited-passed enters the catalog; the canary drawn for it runs its exact spec on a third
 *   operator, shows the node nothing a buyer's job does not, and an honest node passes it (pay released,
 *   audits in a row +1, reputation up);
 * - a node that lies on a canary is not convicted by the catalog alone: a referee on an independent operator
 *   reproduces the known answer, then the node is slashed to the treasury, banned, and its penalty kept with
 *   the evidence;
 * - a wrong catalog entry (two colluding operators agreed on a lie): the referee sides with the honest node,
 *   the entry leaves the catalog, no one is penalized.
 * After each, the ledger balances (GET /v1/treasury).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNTS, type JobRecord } from '@gpux/core';
import { type Assignment, JobSpec, type JobSpecInput } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { loadCoordinatorConfig } from '../src/config.js';
import { canaryFit } from '../src/store/canary-catalog.js';
import { cryptoRandom } from '../src/random.js';
import { call, gpuAd, type Harness, LoopingAgent, report, spec, startHarness, waitFor } from './helpers.js';

const USDC = 1_000_000;
const STAKE = 500 * USDC;
const PROVIDERS = 6;

/** A signed fake node: heartbeats, takes work, answers honestly unless `liesOn` says otherwise. */
class Node extends LoopingAgent {
  token = '';
  providerId = '';
  seen: Assignment[] = [];
  liesOn: (name: string) => boolean = () => false;
  constructor(url: string) {
    super(url, gpuAd(`canary-${Math.random().toString(36).slice(2, 8)}`));
  }
  protected async handle(a: Assignment): Promise<void> {
    this.seen.push(a);
    await this.start(a.attemptId);
    const name = a.spec.name;
    const out = this.liesOn(name) ? `not really ${name}\n` : `${name}: ${a.spec.command.join(' ')}\n`;
    await this.result(a.attemptId, report('succeeded', { 'out/answer.txt': out }));
  }
}

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function canarySuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`canaries over HTTP (${name})`, opts, () => {
    let h: Harness;
    let dbh: Database | undefined;
    let buyer: string;
    const nodes: Node[] = [];
    let serial = 0;
    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const balance = (account: string) => h.coord.store.getBalance(account, 'usdc');
    const assertBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };
    const stats = () => h.coord.store.canaryStats();
    const P = (i: number) => nodes[i] as Node;

    /** Only these nodes may take new work. */
    async function only(...open: Node[]): Promise<void> {
      for (const n of nodes) {
        const res = await post(`/v1/nodes/${n.nodeId}/${open.includes(n) ? 'uncordon' : 'cordon'}`, {}, h.operator);
        assert.ok(res.status === 200 || res.status === 404, JSON.stringify(res.body));
      }
    }

    /** A buyer's job run and audited on `pair` (the only open nodes): it passes and enters the catalog. */
    async function seed(pair: [Node, Node], over: Partial<JobSpecInput> = {}): Promise<{ jobId: string; name: string }> {
      const name = `canary-${++serial}`;
      await only(...pair);
      const sub = await post('/v1/jobs', { spec: spec({ name, command: ['echo', name], resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, maxRetries: 2, canaryReuse: true, ...over }) });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const v = await waitFor(async () => {
        const r = await h.coord.store.getVerification(jobId);
        return r && r.state !== 'auditing' ? r : undefined;
      }, `job ${jobId} is audited`);
      assert.equal(v.label, 'audited-passed', JSON.stringify(v));
      return { jobId, name };
    }

    /** The canary jobs the nodes have been assigned (store records). */
    async function canaryJobs(): Promise<JobRecord[]> {
      const ids = [...new Set(nodes.flatMap((n) => n.seen.map((a) => a.jobId)))];
      return (await h.coord.store.getJobs(ids)).filter((j) => j.kind === 'canary');
    }
    const canaryOf = async (sourceJobId: string) => waitFor(async () => (await canaryJobs()).find((j) => j.checkOf === sourceJobId), `a canary of ${sourceJobId} is assigned`);
    const eventsOf = async (jobId: string) => (await h.coord.store.listEvents('job', jobId, 200)).map((e) => e.type);

    before(async () => {
      dbh = await database();
      h = await startHarness(
        { ...(dbh.db ? { db: dbh.db } : {}), market: true, verify: true, devMint: true, schedulePassIntervalMs: 20, expiryPassIntervalMs: 50, canaryRate: 1 },
        // Draws of 0: every buyer job draws a canary and the newest catalog entry is picked.
        { random: { next: () => 0, bytes: (n: number) => cryptoRandom.bytes(n) } },
      );
      buyer = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 200 * USDC })).status, 201);
      // The treasury's audit budget, as if from its fees: canaries are paid from it.
      await h.coord.store.postTransfer({
        kind: 'mint',
        postings: [
          { account: ACCOUNTS.world, asset: 'usdc', amount: -1000 * USDC },
          { account: ACCOUNTS.treasury, asset: 'usdc', amount: 1000 * USDC },
        ],
        at: Date.now(),
        memo: 'test: the audit budget',
      });
      for (let i = 0; i < PROVIDERS; i++) {
        const token = await h.buyer();
        const n = new Node(h.url);
        n.token = token;
        n.providerId = (await get('/v1/whoami', token)).body.accountId;
        assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, token)).status, 201);
        assert.equal((await n.register(undefined, token)).status, 200);
        assert.equal((await post(`/v1/nodes/${n.nodeId}/stake`, { amount: STAKE }, token)).status, 200);
        n.run();
        nodes.push(n);
      }
    });
    after(async () => {
      for (const n of nodes) n.stop();
      await h?.close();
      await dbh?.stop();
    });

    test('a canary is issued from an audited job, looks like a buyer job to the node, and an honest node passes it', async () => {
      const treasuryBefore = await balance(ACCOUNTS.treasury);
      const { jobId } = await seed([P(0), P(1)]);
      await only(P(2));
      const canary = await canaryOf(jobId);
      const source = (await h.coord.store.getJob(jobId)) as JobRecord;
      assert.deepEqual(canary.spec, source.spec, 'the exact spec of the known answer');
      assert.match(canary.buyerId, /^acct-/, 'a buyer-looking account of its own');
      assert.notEqual(canary.buyerId, source.buyerId);
      assert.deepEqual([...(canary.avoidProviderIds ?? [])].sort(), [P(0).providerId, P(1).providerId].sort(), "the answer's operators are avoided");
      const seen = P(2).seen.find((a) => a.jobId === canary.id) as Assignment;
      const buyerSeen = P(0).seen.find((a) => a.jobId === jobId) ?? (P(1).seen.find((a) => a.jobId === jobId) as Assignment);
      assert.deepEqual(Object.keys(seen).sort(), Object.keys(buyerSeen).sort(), 'the assignment has the fields of a buyer job, no more');
      assert.deepEqual(seen.spec, buyerSeen.spec);

      await waitFor(async () => (await stats()).passed === 1 || undefined, 'the canary passes');
      const done = (await h.coord.store.getJob(canary.id)) as JobRecord;
      const attemptId = done.currentAttemptId as string;
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0, 'its pay released');
      assert.ok((await eventsOf(canary.id)).includes('canary.passed'));
      const rep = await h.coord.store.getReputation(P(2).nodeId);
      assert.ok(rep && rep.state.good > 0 && rep.state.bad === 0, JSON.stringify(rep));
      assert.equal(await balance(ACCOUNTS.wallet(canary.buyerId)), 0, "the canary's unspent escrow went back to the treasury");
      assert.ok((await balance(ACCOUNTS.treasury)) < treasuryBefore + 1, 'the treasury paid for the canary');
      const s = await stats();
      assert.equal(s.catalog, 1);
      assert.equal(s.issued, 1);
      await assertBalanced();
    });

    test('a node that lies on a canary is penalized only after a referee reproduces the known answer', async () => {
      const liar = P(5);
      liar.liesOn = () => true;
      const stakeBefore = await balance(ACCOUNTS.stake(liar.nodeId));
      const { jobId } = await seed([P(1), P(2)]);
      await only(liar);
      const canary = await canaryOf(jobId);
      assert.ok(liar.seen.some((a) => a.jobId === canary.id), 'the canary went to the liar');
      await waitFor(async () => (await eventsOf(canary.id)).includes('canary.mismatch') || undefined, 'the mismatch is seen');
      assert.equal((await h.coord.store.listPenalties(liar.nodeId, { limit: 10 })).items.length, 0, 'no conviction on the catalog alone');
      const attemptId = ((await h.coord.store.getJob(canary.id)) as JobRecord).currentAttemptId as string;
      const held = await balance(ACCOUNTS.pending(attemptId));
      assert.ok(held > 0, "the liar's pay is held while the referee runs");
      await only(P(3), P(4));
      await waitFor(async () => (await stats()).failed === 1 || undefined, 'the referee decides');

      const pen = (await h.coord.store.listPenalties(liar.nodeId, { limit: 10 })).items;
      assert.equal(pen.length, 1);
      assert.equal(pen[0]?.kind, 'canary-failed');
      assert.ok(pen[0]?.banned);
      const ev = pen[0]?.evidence as { knownAnswer: { outputDigest: string }; node: { outputDigest: string; commitment: string | null; commitmentSignature: string | null }; referee: { outputDigest: string } };
      assert.equal(ev.referee.outputDigest, ev.knownAnswer.outputDigest, 'the referee reproduced the known answer');
      assert.notEqual(ev.node.outputDigest, ev.knownAnswer.outputDigest);
      assert.ok(ev.node.commitment && ev.node.commitmentSignature, "the node's signed commitment is kept");
      const slashed = pen[0]?.slashed ?? 0;
      assert.ok(slashed > 0);
      assert.equal(await balance(ACCOUNTS.stake(liar.nodeId)), stakeBefore - slashed);
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0, 'its pay forfeited');
      assert.ok((await h.coord.store.getNode(liar.nodeId))?.removedAt, 'banned: removed for good');
      const rep = await h.coord.store.getReputation(liar.nodeId);
      assert.ok(rep && rep.state.bad >= 20, JSON.stringify(rep));
      await waitFor(async () => (await liar.heartbeat()).status >= 400 || undefined, 'the banned node is refused');
      for (const n of nodes.filter((x) => x !== liar)) assert.equal((await h.coord.store.listPenalties(n.nodeId, { limit: 10 })).items.length, 0, 'honest nodes lose nothing');
      await assertBalanced();
    });

    test('a wrong catalog entry is dropped when the referee sides with the node; no one is penalized', async () => {
      const [a, b] = [P(3), P(4)];
      const lie = `canary-${serial + 1}`;
      a.liesOn = (n) => n === lie;
      b.liesOn = a.liesOn;
      const catalogBefore = (await stats()).catalog;
      const { jobId } = await seed([a, b]);
      assert.equal((await stats()).catalog, catalogBefore + 1, 'two operators agreed on a lie: it entered the catalog');
      await only(P(0));
      const canary = await canaryOf(jobId);
      await waitFor(async () => (await eventsOf(canary.id)).includes('canary.mismatch') || undefined, 'the honest node disagrees with the entry').catch(async (e: Error) => {
        throw new Error(`${e.message}: ${JSON.stringify(await h.coord.store.getJob(canary.id))} ${JSON.stringify(await h.coord.store.listEvents('job', canary.id, 200))}`);
      });
      await only(P(1), P(2));
      await waitFor(async () => (await stats()).dropped === 1 || undefined, 'the referee decides');
      assert.equal((await stats()).catalog, catalogBefore, 'the entry left the catalog');
      const attemptId = ((await h.coord.store.getJob(canary.id)) as JobRecord).currentAttemptId as string;
      assert.equal(await balance(ACCOUNTS.pending(attemptId)), 0, "the honest node's pay released");
      for (const n of nodes.slice(0, 5)) assert.equal((await h.coord.store.listPenalties(n.nodeId, { limit: 10 })).items.length, 0, 'no penalty');
      assert.equal((await stats()).failed, 1);
      await assertBalanced();
    });
  });
}

test('GPUX_CANARY_RATE: a fraction from 0 to 1, default 0.01; 0 disables; GPUX_CANARY_CATALOG_SIZE default 1000', () => {
  assert.equal(loadCoordinatorConfig({}).canaryRate, 0.01);
  assert.equal(loadCoordinatorConfig({}).canaryCatalogSize, 1000);
  assert.equal(loadCoordinatorConfig({ GPUX_CANARY_RATE: '0' }).canaryRate, 0);
  assert.equal(loadCoordinatorConfig({ GPUX_CANARY_RATE: '0.25', GPUX_CANARY_CATALOG_SIZE: '10' }).canaryRate, 0.25);
  for (const bad of ['1.5', '-0.1', 'often', '1e-2']) assert.throws(() => loadCoordinatorConfig({ GPUX_CANARY_RATE: bad }), /GPUX_CANARY_RATE.*a number from 0 to 1/);
  assert.throws(() => loadCoordinatorConfig({ GPUX_CANARY_CATALOG_SIZE: '0' }), /GPUX_CANARY_CATALOG_SIZE/);
});

test("a buyer's job becomes a known answer only when its buyer allowed the reuse (canaryReuse: true)", () => {
  const base = JobSpec.parse({ name: 'c', image: 'busybox', command: ['true'] });
  assert.equal(canaryFit(base), false, 'absent: never reused (a canary shows the spec, env and inputs to more operators)');
  assert.equal(canaryFit({ ...base, canaryReuse: true }), true);
  assert.equal(canaryFit({ ...base, canaryReuse: true, deterministic: false }), false);
  assert.equal(canaryFit({ ...base, canaryReuse: true, network: true }), false);
  assert.equal(canaryFit({ ...base, canaryReuse: true, nodes: 2 }), false);
});

canarySuite('SQLite', async () => ({ stop: async () => {} }));
canarySuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
