/**
 * Trust tiers live (issue 12): an operator vouches for a node (POST /v1/nodes/:id/tier curated), the
 * scheduler's tier filter sends a job asking for curated only there, attested cannot be set by hand, and
 * attestation evidence at registration is accepted (bounded) and, with no verifier configured, ignored.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { NodeView, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent } from './helpers.js';

describe('trust tiers', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  const setTier = (id: string, tier: string, token = h.operator) => call(h.url, 'POST', `/v1/nodes/${id}/tier`, { token, body: { tier } });
  const node = async (id: string) => NodeView.parse((await call(h.url, 'GET', `/v1/nodes/${id}`, { token: h.operator })).body.node);

  test('a job asking for curated goes only to the node an operator vouched for; open takes it back', async () => {
    const buyer = await h.buyer();
    const open = new TestAgent(h.url, gpuAd('tier-open', 1));
    const vouched = new TestAgent(h.url, gpuAd('tier-curated', 1));
    assert.equal((await open.register()).status, 200);
    assert.equal((await vouched.register()).status, 200);
    assert.equal((await node(open.nodeId)).tier, 'open', 'every node starts open');

    const set = await setTier(vouched.nodeId, 'curated');
    assert.equal(set.status, 200, JSON.stringify(set.body));
    assert.equal(NodeView.parse(set.body.node).tier, 'curated');
    assert.equal((await node(vouched.nodeId)).tier, 'curated');

    const created = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { minTrustTier: 'curated' } }) } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const jobId = created.body.job.id as string;
    assert.equal(WorkResponse.parse((await open.work(700)).body).assignments.length, 0, 'an open node never gets a curated job');
    const got = WorkResponse.parse((await vouched.work(10_000)).body);
    assert.equal(got.assignments[0]?.jobId, jobId);

    assert.equal((await setTier(vouched.nodeId, 'open')).body.node.tier, 'open');
    assert.equal((await node(vouched.nodeId)).tier, 'open');
    const explain = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { minTier: 'curated' } }) } });
    assert.equal(explain.status, 201, 'minTier is accepted as an alias');
    const why = await call(h.url, 'GET', `/v1/jobs/${explain.body.job.id}/explain`, { token: buyer });
    assert.ok(why.body.filters.some((f: { name: string }) => f.name === 'trust'), JSON.stringify(why.body));
  });

  test('attested cannot be set by hand (400); unknown node 404; a buyer may not set tiers', async () => {
    const agent = new TestAgent(h.url, gpuAd('tier-refused', 1));
    assert.equal((await agent.register()).status, 200);
    const attested = await setTier(agent.nodeId, 'attested');
    assert.equal(attested.status, 400);
    assert.match(attested.body.error.message, /only hardware TEE evidence/);
    assert.equal((await node(agent.nodeId)).tier, 'open');
    assert.equal((await setTier('node-none', 'curated')).status, 404);
    assert.equal((await setTier(agent.nodeId, 'gold')).status, 400);
    assert.equal((await setTier(agent.nodeId, 'curated', await h.buyer())).status, 403);
  });

  test('attestation evidence at registration is accepted and, with no verifier, leaves the node open; oversized evidence is refused', async () => {
    const agent = new TestAgent(h.url, gpuAd('tier-evidence', 1));
    const body = (evidence: string) => ({ publicKey: agent.keys.publicKey, advertisement: agent.ad, enrollmentToken: agent.enrollmentToken, attestation: { format: 'nvidia-cc+sev-snp', evidence } });
    const ok = await agent.request('POST', '/v1/agent/register', body(Buffer.from('not real evidence').toString('base64')));
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.equal((await node(agent.nodeId)).tier, 'open', 'no verifier configured: no node is ever attested');
    const huge = await agent.request('POST', '/v1/agent/register', body('A'.repeat(256 * 1024 + 4)));
    assert.equal(huge.status, 400);
  });

  test('the node view carries the tier, and the proof once the node was challenged', async () => {
    const agent = new TestAgent(h.url, gpuAd('tier-proof', 1));
    assert.equal((await agent.register()).status, 200);
    const v = await node(agent.nodeId);
    assert.ok(v.proof === undefined || ['unproven', 'challenging', 'proven', 'failed', 'skipped'].includes(v.proof.state), 'absent only on a node never challenged');
    assert.equal(v.tier, 'open');
  });
});
