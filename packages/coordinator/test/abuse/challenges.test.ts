/**
 * Abuse suite, issue 12 (proof of hardware): every byte a node sends about a challenge is hostile. Another
 * node's challenge id reads as not found; digests of the wrong shape are refused before anything is stored;
 * digests after the deadline fail the challenge (409, dispatch blocked, no slash); a reveal before the
 * digests, of blocks not asked, twice the same block or missing some is refused; a block of the wrong size
 * fails the challenge; a body over the reveal limit is 413 before it is parsed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ChallengeAssignment, NodeAdvertisementInput } from '@gpux/protocol';
import { REVEAL_BODY_LIMIT_BYTES } from '../../src/services/challenges.js';
import { pendingChallenge, revealOf, solve } from '../challenge-helpers.js';
import { gpuAd, type Harness, startHarness, TestAgent, waitFor } from '../helpers.js';

const cpuAd = (hostname: string): NodeAdvertisementInput => ({ ...gpuAd(hostname), gpus: [] });

describe('abuse: proof-of-hardware challenges', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({
      challenge: 'required',
      heartbeatIntervalMs: 100,
      leaseTtlMs: 5000,
      nodeOfflineAfterMs: 60_000,
      expiryPassIntervalMs: 100,
      challengeRetryMs: 60_000,
      challengeSizing: { n: 128, maxProducts: 4, tolerance: { startupMs: 1500, warmupMs: 100 } },
    });
  });
  after(() => h.close());

  async function node(name: string): Promise<{ agent: TestAgent; a: ChallengeAssignment }> {
    const agent = new TestAgent(h.url, cpuAd(name));
    assert.equal((await agent.register()).status, 200);
    const a = await pendingChallenge(agent);
    assert.ok(a);
    return { agent, a };
  }
  const post = (agent: TestAgent, id: string, step: 'digests' | 'reveal', body: unknown) => agent.request('POST', `/v1/agent/challenges/${id}/${step}`, body);

  test("another node's challenge id is 404, for digests and reveal; an unknown id too", async () => {
    const mine = await node('abuse-owner');
    const other = await node('abuse-other');
    const s = solve(mine.a);
    for (const step of ['digests', 'reveal'] as const) {
      const body = step === 'digests' ? s.body : { blocks: [{ gpu: 0, product: 0, block: 0, data: '', proof: [] }] };
      const r = await post(other.agent, mine.a.id, step, body);
      assert.equal(r.status, 404, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'NOT_FOUND');
    }
    assert.equal((await post(other.agent, 'chl-nope', 'digests', s.body)).status, 404);
    // The owner is unaffected.
    assert.equal((await post(mine.agent, mine.a.id, 'digests', s.body)).status, 200);
  });

  test('digests of the wrong shape are 400 and change nothing: GPUs not in the challenge, missing, twice, wrong product count, extra fields', async () => {
    const { agent, a } = await node('abuse-shape');
    const good = solve(a).body;
    const g = good.gpus[0]!;
    const bad = [
      { ...good, gpus: [{ ...g, index: 3 }] },
      { ...good, gpus: [g, g] },
      { ...good, gpus: [{ ...g, digests: g.digests.slice(1) }] },
      { ...good, gpus: [{ ...g, digests: [...g.digests, g.digests[0]] }] },
      { ...good, gpus: [{ ...g, digests: g.digests.map(() => 'XYZ') }] },
      { ...good, extra: 1 },
      { runner: 'x'.repeat(65), gpus: good.gpus },
    ];
    for (const body of bad) {
      const r = await post(agent, a.id, 'digests', body);
      assert.equal(r.status, 400, `${JSON.stringify(body).slice(0, 120)} → ${r.status} ${JSON.stringify(r.body)}`);
    }
    assert.equal((await h.coord.store.getChallenge(a.id))?.state, 'pending');
    assert.equal((await post(agent, a.id, 'digests', good)).status, 200);
    assert.equal((await post(agent, a.id, 'digests', good)).status, 409, 'digests twice');
  });

  test('a reveal before the digests is 409; blocks not asked, twice, or missing are 400; a wrong-size block fails the challenge', async () => {
    const { agent, a } = await node('abuse-reveal');
    const s = solve(a);
    assert.equal((await post(agent, a.id, 'reveal', revealOf(a, s, [{ gpu: 0, product: 0, block: 0 }]))).status, 409);
    const d = await post(agent, a.id, 'digests', s.body);
    assert.equal(d.status, 200);
    const asked = d.body.reveal as Array<{ gpu: number; product: number; block: number }>;
    const honest = revealOf(a, s, asked);
    const notAsked = [0, 1, 2, 3, 4, 5, 6, 7].map((block) => ({ gpu: 0, product: 0, block })).find((x) => !asked.some((y) => y.product === x.product && y.block === x.block))!;
    const cases = [
      { blocks: [...honest.blocks.slice(1), ...revealOf(a, s, [notAsked]).blocks] },
      { blocks: [...honest.blocks, honest.blocks[0]] },
      { blocks: honest.blocks.slice(1) },
      { blocks: honest.blocks.map((b) => ({ ...b, gpu: 1 })) },
    ];
    for (const body of cases) {
      const r = await post(agent, a.id, 'reveal', body);
      assert.equal(r.status, 400, JSON.stringify(r.body).slice(0, 300));
    }
    assert.equal((await h.coord.store.getChallenge(a.id))?.state, 'digested', 'refused reveals change nothing');
    // A block with more data than its rows: decoded never, judged wrong.
    const big = { blocks: honest.blocks.map((b, i) => (i === 0 ? { ...b, data: b.data + b.data } : b)) };
    const v = await post(agent, a.id, 'reveal', big);
    assert.equal(v.status, 200);
    assert.equal(v.body.outcome, 'failed');
    assert.match(v.body.reason, /must be \d+ × \d+ int32 values/);
    assert.equal((await post(agent, a.id, 'reveal', honest)).status, 409, 'judged once');
  });

  test('a reveal body over the limit is 413 before it is parsed', async () => {
    const { agent, a } = await node('abuse-huge');
    const r = await agent.request('POST', `/v1/agent/challenges/${a.id}/reveal`, { blocks: [{ gpu: 0, product: 0, block: 0, data: 'A'.repeat(REVEAL_BODY_LIMIT_BYTES + 1024), proof: [] }] });
    assert.equal(r.status, 413, JSON.stringify(r.body).slice(0, 200));
  });

  test('digests after the deadline are 409: the challenge expired, the proof failed (timed out), no stake touched', async () => {
    const { agent, a } = await node('abuse-late');
    await waitFor(async () => Date.now() > a.deadlineAt + 10, 'the deadline to pass', 30_000);
    const r = await post(agent, a.id, 'digests', solve(a).body);
    assert.equal(r.status, 409, JSON.stringify(r.body));
    assert.match(r.body.error.message, /timed out/);
    const n = await h.coord.store.getNode(agent.nodeId);
    assert.equal(n?.proof?.state, 'failed');
    assert.equal((await h.coord.store.getStake(agent.nodeId))?.staked ?? 0, 0);
    assert.ok(!(await h.coord.store.listEvents('node', agent.nodeId, 100)).some((e) => /slash|ban/.test(e.type)), 'no slash, no ban');
  });
});
