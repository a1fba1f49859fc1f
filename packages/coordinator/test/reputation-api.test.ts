/**
 * Reputation in the coordinator (issue 11): GET /v1/nodes and /v1/nodes/:id show it (null for a new node),
 * the scheduling pass feeds it into the capacity index, and placement prefers the node with the better one.
 * The coordinator runs on a store built here, so the test writes reputations as the attempt-end and
 * verification paths do (applyReputationIn).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { applyReputationEvent, emptyReputation, reputationScore } from '@gpux/core';
import { GetNodeResponse, ListNodesResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';
import { applyReputation, type OpenedWithCtx, openSqliteWithCtx } from './reputation-helpers.js';

/** Drop once the attempt-end transaction calls applyAttemptEndReputationIn (store/attempt-end-run.ts). */

describe('reputation in the API and the scheduler', () => {
  let h: Harness;
  let o: OpenedWithCtx;
  let buyer: string;
  before(async () => {
    o = await openSqliteWithCtx();
    h = await startHarness({}, { store: o.store });
    buyer = await h.buyer();
  });
  after(async () => {
    await h.close();
    await o.cleanup();
  });

  const getNode = async (id: string) => GetNodeResponse.parse((await call(h.url, 'GET', `/v1/nodes/${id}`, { token: h.operator })).body).node;
  const listNodes = async () => ListNodesResponse.parse((await call(h.url, 'GET', '/v1/nodes?limit=1000', { token: h.operator })).body).nodes;

  test('a new node has no reputation yet; one with outcomes shows its score, weights and audit streak in get and list', async () => {
    const fresh = new TestAgent(h.url, gpuAd('fresh', 1));
    const known = new TestAgent(h.url, gpuAd('known', 1));
    for (const a of [fresh, known]) assert.equal((await a.register()).status, 200);
    assert.equal((await getNode(fresh.nodeId)).reputation, null);
    const t = Date.now();
    await applyReputation(o, known.nodeId, 'audit-passed', t);
    await applyReputation(o, known.nodeId, 'completed', t);
    await o.ctx.db.insertInto('node_audits').values({ node_id: known.nodeId, consecutive_passes: 1, updated_at: t }).execute();
    const rep = (await getNode(known.nodeId)).reputation;
    assert.ok(rep);
    assert.equal(rep.auditsPassed, 1);
    assert.ok(rep.asOf >= t);
    assert.ok(Math.abs(rep.good - 1.2) < 1e-6 && rep.bad === 0, JSON.stringify(rep));
    const stored = applyReputationEvent(applyReputationEvent(emptyReputation(t), 'audit-passed', t), 'completed', t);
    assert.ok(Math.abs(rep.score - reputationScore(stored, rep.asOf)) < 1e-9);
    assert.ok(rep.score > 0.5);
    const listed = await listNodes();
    assert.deepEqual(listed.find((n) => n.id === known.nodeId)?.reputation?.auditsPassed, 1);
    assert.equal(listed.find((n) => n.id === fresh.nodeId)?.reputation, null);
  });

  test('placement prefers the node whose audit passed over an equal node whose audit failed', async () => {
    // Labelled so that only these two fit the job (the first test's nodes are idle too).
    const cheat = new TestAgent(h.url, { ...gpuAd('cheat', 1), labels: { pool: 'rep' } });
    const honest = new TestAgent(h.url, { ...gpuAd('honest', 1), labels: { pool: 'rep' } });
    for (const a of [cheat, honest]) assert.equal((await a.register()).status, 200);
    const t = Date.now();
    await applyReputation(o, cheat.nodeId, 'audit-failed', t);
    for (let i = 0; i < 3; i++) await applyReputation(o, honest.nodeId, 'audit-passed', t);
    const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { nodeLabels: { pool: 'rep' } } }) } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const id = SubmitJobResponse.parse(res.body).job.id;
    const got = await waitFor(async () => {
      for (const a of [cheat, honest]) {
        const w = WorkResponse.parse((await a.work(0)).body).assignments.find((x) => x.jobId === id);
        if (w) return a.nodeId;
      }
      return undefined;
    }, 'the job placed');
    assert.equal(got, honest.nodeId);
  });

  test('a completed job is a completion on its node’s reputation', async () => {
    const agent = new TestAgent(h.url, { ...gpuAd('worker', 1), labels: { pool: 'work' } });
    assert.equal((await agent.register()).status, 200);
    const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { nodeLabels: { pool: 'work' } } }) } });
    const id = SubmitJobResponse.parse(res.body).job.id;
    const w = await waitFor(async () => WorkResponse.parse((await agent.work(2000)).body).assignments.find((x) => x.jobId === id), 'the assignment');
    await agent.start(w.attemptId);
    assert.equal((await agent.result(w.attemptId, report('succeeded'))).status, 200);
    const rep = (await getNode(agent.nodeId)).reputation;
    assert.ok(rep && Math.abs(rep.good - 0.2) < 1e-6 && rep.bad === 0, JSON.stringify(rep));
  });
});
