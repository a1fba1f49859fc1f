/**
 * Abuse suite, signed result commitments (issue 11, TRUST.md layer 2), against a real coordinator with a
 * market, on SQLite and on PostgreSQL, with signed fake nodes:
 * - a report without a commitment, with a forged signature, or with a commitment that does not match the
 *   route's attempt/job/node, the report's digest/exit code/metrics, or the job's inputs: 400, nothing stored;
 * - an honest report is stored with its commitment (shown in the result and the attempt); the same report
 *   again is a duplicate (200);
 * - equivocation (a second, different, validly signed commitment for the ended attempt): 409 CONFLICT, the
 *   evidence is stored, the node's whole stake goes to the treasury, the node is banned (401 from then on,
 *   may not register again, out of the index); the same pair again records nothing new. The ledger balances.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  buildCommitment,
  GetJobResponse,
  JobResultResponse,
  NodePenaltiesResponse,
  type ResultCommitment,
  type ResultReport,
  signCommitment,
  verifyCommitment,
  WorkResponse,
} from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { completeReport } from '../commitment-helpers.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
const STAKE = 100 * USDC;
const INPUTS = [
  { path: 'in/a.txt', content: 'hello\n' },
  { path: 'in/b.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' as const },
];

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function commitmentAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: commitments: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    const get = (path: string, token = buyer) => call(h.url, 'GET', path, { token });
    const post = (path: string, body: unknown, token = buyer) => call(h.url, 'POST', path, { token, body });
    const usdc = async (path: string, token: string) => (await get(path, token)).body;
    const assertBalanced = async () => {
      const t = (await get('/v1/treasury', h.operator)).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), JSON.stringify(t));
    };
    const treasuryBalance = async (): Promise<number> => (await usdc('/v1/treasury', h.operator)).assets.find((a: { asset: string }) => a.asset === 'usdc')?.treasury ?? 0;

    const nodes: TestAgent[] = [];
    const beats: NodeJS.Timeout[] = [];
    /** A registered, staked node; earlier ones are cordoned, so each test's job goes to its own node. */
    async function stakedNode(gpus = 1): Promise<TestAgent> {
      for (const n of nodes.splice(0)) await post(`/v1/nodes/${n.nodeId}/cordon`, {}, h.operator);
      const agent = new TestAgent(h.url, gpuAd(`node-${nodes.length}-${gpus}`, gpus));
      nodes.push(agent);
      // Keep it online, holding every attempt it was given (a banned node's heartbeats are refused).
      beats.push(setInterval(() => void agent.heartbeat([...agent.assignments.keys()]).catch(() => {}), 200));
      assert.equal((await agent.register()).status, 200);
      const staked = await post(`/v1/nodes/${agent.nodeId}/stake`, { amount: STAKE }, h.provider);
      assert.equal(staked.status, 200, JSON.stringify(staked.body));
      return agent;
    }

    /** A paid job with inline inputs, taken and started by `agent`. */
    async function running(agent: TestAgent, token = buyer): Promise<{ jobId: string; attemptId: string }> {
      const sub = await post('/v1/jobs', { spec: spec({ inputs: INPUTS, resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC }) }, token);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const w = await waitFor(async () => WorkResponse.parse((await agent.work(500)).body).assignments.find((a) => a.jobId === jobId), `the node takes ${jobId}`).catch(async (e) => {
        throw new Error(`${e.message}: ${JSON.stringify((await get(`/v1/jobs/${jobId}/explain`, token)).body)}`);
      });
      assert.equal((await agent.start(w.attemptId)).status, 200);
      return { jobId, attemptId: w.attemptId };
    }

    /** A report signed by `agent` over `c` (built honestly, then changed by `tamper`). */
    function signed(agent: TestAgent, attemptId: string, r: ResultReport, tamper: (c: ResultCommitment) => ResultCommitment, key = agent.keys.privateKeyPem): ResultReport {
      const honest = completeReport(agent, attemptId, r, agent.assignments.get(attemptId));
      const c = tamper(honest.commitment as ResultCommitment);
      return { ...honest, commitment: c, commitmentSignature: signCommitment(c, key) };
    }

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), market: true, devMint: true, schedulePassIntervalMs: 20, expiryPassIntervalMs: 50 });
      buyer = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 1000 * USDC }, h.provider)).status, 201);
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC })).status, 201);
    });
    after(async () => {
      for (const b of beats) clearInterval(b);
      await h?.close();
      await dbHandle?.stop();
    });

    test('missing, forged or mismatched commitments are 400 and nothing is stored; the honest report is stored and shown', async () => {
      const agent = await stakedNode();
      const { jobId, attemptId } = await running(agent);
      const r = report('succeeded', { 'out/answer.txt': '42\n' });
      const other = new TestAgent(h.url);
      const cases: Array<[string, unknown, string]> = [
        ['no commitment', { ...r, commitment: undefined, commitmentSignature: undefined }, 'commitment'],
        ['signed by another key', signed(agent, attemptId, r, (c) => c, other.keys.privateKeyPem), 'commitmentSignature'],
        ['signature over other bytes', { ...signed(agent, attemptId, r, (c) => c), commitmentSignature: signed(agent, attemptId, r, (c) => ({ ...c, exitCode: 9 })).commitmentSignature }, 'commitmentSignature'],
        ['another attempt', signed(agent, attemptId, r, (c) => ({ ...c, attemptId: 'a-other' })), 'commitment.attemptId'],
        ['another job', signed(agent, attemptId, r, (c) => ({ ...c, jobId: 'j-other' })), 'commitment.jobId'],
        ['another node', signed(agent, attemptId, r, (c) => ({ ...c, nodeId: other.nodeId })), 'commitment.nodeId'],
        ['another output digest', signed(agent, attemptId, r, (c) => ({ ...c, outputDigest: 'a'.repeat(64) })), 'commitment.outputDigest'],
        ['another exit code', signed(agent, attemptId, r, (c) => ({ ...c, exitCode: 1 })), 'commitment.exitCode'],
        ['other metrics', signed(agent, attemptId, r, (c) => ({ ...c, metricsDigest: 'b'.repeat(64) })), 'commitment.metricsDigest'],
        ['other inputs', signed(agent, attemptId, r, (c) => ({ ...c, inputDigest: buildCommitment({ ...c, inputs: [], metrics: { durationMs: 5 } }).inputDigest })), 'commitment.inputDigest'],
      ];
      for (const [what, body, path] of cases) {
        const res = await agent.request('POST', `/v1/agent/attempts/${attemptId}/result`, body);
        assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'REQUEST_INVALID', what);
        assert.ok(
          res.body.error.problems.some((p: { path: string }) => p.path === path || p.path.startsWith(`${path}.`)),
          `${what}: ${JSON.stringify(res.body.error)}`,
        );
      }
      const mid = GetJobResponse.parse((await get(`/v1/jobs/${jobId}`)).body);
      assert.equal(mid.job.state, 'running', 'nothing was stored');
      assert.equal(mid.attempts[0]?.commitment ?? null, null);
      assert.equal((await h.coord.store.getAttempt(attemptId))?.commitment ?? null, null);

      const ok = await agent.result(attemptId, r);
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      assert.deepEqual(ok.body, { accepted: true, duplicate: false });
      // An honest retry (the very same report) is a duplicate.
      const again = await agent.result(attemptId, r);
      assert.deepEqual(again.body, { accepted: true, duplicate: true });

      const res = JobResultResponse.parse((await get(`/v1/jobs/${jobId}/result`)).body);
      assert.ok(res.commitment && res.commitmentSignature && res.nodePublicKey);
      assert.equal(res.nodeId, agent.nodeId);
      assert.equal(res.nodePublicKey, agent.keys.publicKey);
      assert.equal(res.commitment.outputDigest, res.outputDigest);
      assert.ok(verifyCommitment(res.commitment, res.commitmentSignature, res.nodePublicKey), 'the stored commitment verifies against the node key');
      const view = GetJobResponse.parse((await get(`/v1/jobs/${jobId}`)).body);
      assert.deepEqual(view.attempts[0]?.commitment, res.commitment);
      assert.equal(view.attempts[0]?.commitmentSignature, res.commitmentSignature);
      const pen = NodePenaltiesResponse.parse((await get(`/v1/nodes/${agent.nodeId}/penalties`, h.provider)).body);
      assert.deepEqual(pen.penalties, []);
      assert.equal(pen.banned, false);
      await assertBalanced();
    });

    test('equivocation: 409, evidence, whole stake to the treasury, node banned; the same pair again records nothing', async () => {
      const agent = await stakedNode(2);
      const { jobId, attemptId } = await running(agent);
      // Another buyer's job still runs there when the node is banned (a buyer may hold at most half a class's supply).
      const other = await h.buyer();
      assert.equal((await post('/v1/wallet/deposits', { amount: 100 * USDC }, other)).status, 201);
      const busy = await running(agent, other);
      assert.equal((await agent.result(attemptId, report('succeeded', { 'out/answer.txt': '42\n' }))).status, 200);
      const treasuryBefore = await treasuryBalance();

      // A different commitment signed with another key is no evidence against this node: 400, nothing recorded.
      const forged = signed(agent, attemptId, report('succeeded', { 'out/answer.txt': '43\n' }), (c) => c, new TestAgent(h.url).keys.privateKeyPem);
      assert.equal((await agent.request('POST', `/v1/agent/attempts/${attemptId}/result`, forged)).status, 400);
      assert.equal((await h.coord.store.listEquivocations(agent.nodeId)).length, 0);

      const second = report('succeeded', { 'out/answer.txt': '43\n' });
      const res = await agent.result(attemptId, second);
      assert.equal(res.status, 409, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'CONFLICT');
      assert.match(res.body.error.message, /equivocation: evidence eq-[0-9a-f]{24} recorded/);

      const evidence = await h.coord.store.listEquivocations(agent.nodeId);
      assert.equal(evidence.length, 1);
      const ev = evidence[0]!;
      assert.equal(ev.attemptId, attemptId);
      assert.equal(ev.jobId, jobId);
      assert.equal(ev.slashed, STAKE, 'the whole stake');
      assert.notEqual(ev.first.commitment, ev.second.commitment);
      for (const side of [ev.first, ev.second]) assert.ok(verifyCommitment(JSON.parse(side.commitment), side.signature, agent.keys.publicKey), 'both sides verify');

      const stake = (await get(`/v1/nodes/${agent.nodeId}/stake`, h.provider)).body.stake;
      assert.equal(stake.staked, 0);
      assert.equal(await treasuryBalance(), treasuryBefore + STAKE, 'the stake went to the treasury');
      const events = await h.coord.store.listEvents('node', agent.nodeId, 100);
      assert.ok(events.some((e) => e.type === 'node.equivocated' && e.data.evidenceId === ev.id));
      assert.ok(events.some((e) => e.type === 'node.slashed' && e.data.reason === 'equivocation' && e.data.evidenceId === ev.id));
      assert.ok(events.some((e) => e.type === 'node.removed' && e.data.reason === 'equivocation'));

      // Banned: refused from its next request, out of the index, may not register again.
      assert.equal((await agent.heartbeat()).status, 401);
      assert.equal((await agent.work(0)).status, 401);
      const node = (await get(`/v1/nodes/${agent.nodeId}`, h.operator)).body.node;
      assert.equal(node.status, 'offline');
      assert.ok(node.removedAt);
      const rereg = await agent.register();
      assert.equal(rereg.status, 403, JSON.stringify(rereg.body));
      assert.match(rereg.body.error.message, /banned/);
      // Its other attempt ended as lost at once, so that job runs elsewhere, not after a lease.
      assert.equal((await h.coord.store.getAttempt(busy.attemptId))?.state, 'lost');
      assert.notEqual((await get(`/v1/jobs/${busy.jobId}`, other)).body.job.state, 'running');

      // The same pair again: still 409, nothing new.
      const dup = await agent.request('POST', `/v1/agent/attempts/${attemptId}/result`, completeReport(agent, attemptId, second, agent.assignments.get(attemptId)));
      assert.ok(dup.status === 409 || dup.status === 401, JSON.stringify(dup.body));
      assert.equal((await h.coord.store.listEquivocations(agent.nodeId)).length, 1);
      assert.equal(await treasuryBalance(), treasuryBefore + STAKE);

      // The provider and operators see the penalty with its evidence; another buyer does not.
      const pen = NodePenaltiesResponse.parse((await get(`/v1/nodes/${agent.nodeId}/penalties`, h.provider)).body);
      assert.equal(pen.banned, true);
      assert.equal(pen.penalties.length, 1);
      assert.equal(pen.penalties[0]?.id, ev.id);
      assert.equal(pen.penalties[0]?.slashed, STAKE);
      assert.ok(verifyCommitment(pen.penalties[0]!.evidence.second.commitment, pen.penalties[0]!.evidence.second.signature, pen.publicKey));
      assert.equal((await get(`/v1/nodes/${agent.nodeId}/penalties`, h.operator)).status, 200);
      const stranger = await get(`/v1/nodes/${agent.nodeId}/penalties`);
      assert.equal(stranger.status, 404, JSON.stringify(stranger.body));
      await assertBalanced();

      // The ban and the evidence are durable: after a restart the node is still refused.
      await h.restart();
      agent.url = h.url;
      // (a kept-alive socket to the old server may fail once)
      assert.equal(await waitFor(async () => (await agent.heartbeat().catch(() => undefined))?.status, 'a heartbeat after the restart'), 401);
      assert.equal((await agent.register()).status, 403);
      assert.equal(NodePenaltiesResponse.parse((await get(`/v1/nodes/${agent.nodeId}/penalties`, h.operator)).body).penalties.length, 1);
      await assertBalanced();
      // The other buyer's job went back to the queue: cancel it, or it takes the next test's node before that test's job.
      assert.equal((await post(`/v1/jobs/${busy.jobId}/cancel`, {}, other)).status, 200);
    });

    test('the store records a pair once, even when asked again directly', async () => {
      const agent = await stakedNode();
      const { attemptId } = await running(agent);
      assert.equal((await agent.result(attemptId, report('failed', {}, 3))).status, 200);
      const second = completeReport(agent, attemptId, report('failed', {}, 4), agent.assignments.get(attemptId));
      const c = JSON.stringify(Object.fromEntries(Object.entries(second.commitment).sort(([a], [b]) => (a < b ? -1 : 1))));
      const now = Date.now();
      const first = await h.coord.store.recordEquivocation({ attemptId, nodeId: agent.nodeId, commitment: c, signature: second.commitmentSignature, now });
      assert.ok(first);
      const again = await h.coord.store.recordEquivocation({ attemptId, nodeId: agent.nodeId, commitment: c, signature: second.commitmentSignature, now });
      assert.equal(again, null);
      const stored = (await h.coord.store.getAttempt(attemptId))?.commitment;
      assert.ok(stored);
      assert.equal(await h.coord.store.recordEquivocation({ attemptId, nodeId: agent.nodeId, commitment: stored, signature: 'x', now }), null, 'the stored commitment itself is no equivocation');
      assert.equal((await h.coord.store.listEquivocations(agent.nodeId)).length, 1);
      await assertBalanced();
    });
  });
}

commitmentAbuse('SQLite', async () => ({ stop: async () => {} }));
commitmentAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
