/** The placement engine inside the coordinator: explain, gang jobs over HTTP, auto-cordon after repeated node failures. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ExplainJobResponse, GetJobResponse, GetNodeResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

describe('scheduling in the coordinator', () => {
  let h: Harness;
  let buyer: string;
  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
  });
  after(() => h.close());

  async function submit(over: Parameters<typeof spec>[0], token = buyer): Promise<string> {
    const res = await call(h.url, 'POST', '/v1/jobs', { token, body: { spec: spec(over) } });
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return SubmitJobResponse.parse(res.body).job.id;
  }

  const explain = async (id: string, token = buyer) => call(h.url, 'GET', `/v1/jobs/${id}/explain`, { token });

  test('explain: why a job waits, per filter, with what to change; others cannot see it', async () => {
    const agent = new TestAgent(h.url, gpuAd('explain-box', 2));
    assert.equal((await agent.register()).status, 200);
    const id = await submit({ resources: { gpu: { count: 4, models: ['H100'] } } });
    const res = await explain(id);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const e = ExplainJobResponse.parse(res.body);
    assert.equal(e.pending, true);
    assert.equal(e.nodesFitting, 0);
    assert.deepEqual(
      e.filters.map((f) => [f.name, f.rejected]),
      [['gpuCount', 1]],
    );
    assert.match(e.suggestions.join('\n'), /no online node has 4 GPUs of models H100; the most on one node is 2 \(1 node\) — lower resources\.gpu\.count to 2/);
    assert.equal(e.queuePosition, 0);
    assert.equal((await explain(id, await h.buyer())).status, 404);
    assert.equal((await explain('job_missing')).status, 404);
    assert.equal((await explain(id, h.operator)).status, 200);
    await call(h.url, 'POST', `/v1/jobs/${id}/cancel`, { token: buyer });
    await call(h.url, 'POST', `/v1/nodes/${agent.nodeId}/cordon`, { token: h.operator });
  });

  test('gang job: placed on two nodes at once; each member gets its rank, the world size and its peers', async () => {
    const a = new TestAgent(h.url, gpuAd('gang-a', 1));
    const b = new TestAgent(h.url, gpuAd('gang-b', 1));
    await a.register();
    await b.register();
    const id = await submit({ nodes: 2, resources: { gpu: { count: 1 } } });
    const take = async (agent: TestAgent) =>
      waitFor(async () => WorkResponse.parse((await agent.work(2000)).body).assignments.find((x) => x.jobId === id), 'a gang assignment');
    const [wa, wb] = await Promise.all([take(a), take(b)]);
    assert.deepEqual([wa.gang?.rank, wb.gang?.rank].sort(), [0, 1]);
    assert.equal(wa.gang?.worldSize, 2);
    assert.deepEqual(
      wa.gang?.peers.map((p) => p.address).sort(),
      ['gang-a', 'gang-b'],
    );
    assert.deepEqual(wa.gang?.peers, wb.gang?.peers);
    assert.equal((await a.start(wa.attemptId)).status, 200);
    assert.equal((await b.start(wb.attemptId)).status, 200);
    const running = ExplainJobResponse.parse((await explain(id)).body);
    assert.equal(running.pending, false);
    assert.equal((await a.result(wa.attemptId, report('succeeded'))).status, 200);
    let job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body);
    assert.equal(job.job.state, 'running', 'one member done, the other still running');
    assert.equal((await b.result(wb.attemptId, report('succeeded'))).status, 200);
    job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body);
    assert.equal(job.job.state, 'succeeded');
    assert.equal(job.attempts.length, 2);
    for (const n of [a, b]) await call(h.url, 'POST', `/v1/nodes/${n.nodeId}/cordon`, { token: h.operator });
  });

  test('a node that keeps losing attempts is cordoned automatically, with the reason on the node', async () => {
    const agent = new TestAgent(h.url, gpuAd('flaky', 1));
    await agent.register();
    for (let i = 0; i < 5; i++) {
      const id = await submit({ maxRetries: 0, resources: { gpu: { count: 1 } } });
      const w = await waitFor(async () => WorkResponse.parse((await agent.work(2000)).body).assignments.find((x) => x.jobId === id), `assignment ${i}`);
      await agent.start(w.attemptId);
      const res = await agent.result(w.attemptId, { ...report('failed', {}, null), error: 'executor failed: docker daemon gone' });
      assert.equal(res.status, 200);
    }
    const node = GetNodeResponse.parse((await call(h.url, 'GET', `/v1/nodes/${agent.nodeId}`, { token: h.operator })).body).node;
    assert.equal(node.adminState, 'cordoned');
    assert.match(node.adminReason ?? '', /auto-cordoned: 5 attempts lost or failed by the node/);
    const id = await submit({ resources: { gpu: { count: 1 } } });
    const e = await waitFor(async () => {
      const x = ExplainJobResponse.parse((await explain(id)).body);
      return x.filters.some((f) => f.name === 'state') && x.nodesFitting === 0 ? x : undefined;
    }, 'the index to learn of the cordon');
    assert.equal(e.state, 'queued');
    const back = GetNodeResponse.parse((await call(h.url, 'POST', `/v1/nodes/${agent.nodeId}/uncordon`, { token: h.operator })).body).node;
    assert.equal(back.adminReason, null);
    await waitFor(async () => WorkResponse.parse((await agent.work(2000)).body).assignments.find((x) => x.jobId === id), 'the job on the uncordoned node');
  });
});

describe('the capacity index follows the store when a node goes offline (issue 10 item 3)', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 100, nodeOfflineAfterMs: 400, expiryPassIntervalMs: 50 });
  });
  after(() => h.close());

  test('a silent node is offline in the index at the next expiry pass, takes nothing, and comes back with a heartbeat', async () => {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, gpuAd('silent-box', 1));
    assert.equal((await agent.register()).status, 200);
    await waitFor(
      async () => GetNodeResponse.parse((await call(h.url, 'GET', `/v1/nodes/${agent.nodeId}`, { token: h.operator })).body).node.status === 'offline',
      'the store marks the node offline',
    );
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    const id = SubmitJobResponse.parse(sub.body).job.id;
    const e = ExplainJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}/explain`, { token: buyer })).body);
    assert.deepEqual(
      e.filters.map((f) => [f.name, f.rejected]),
      [['state', 1]],
    );
    assert.match(e.suggestions.join('\n'), /1 node is offline, cordoned or draining \(1 offline\)/);
    assert.equal(WorkResponse.parse((await agent.work(200)).body).assignments.length, 0);
    assert.equal((await agent.heartbeat()).status, 200);
    await waitFor(async () => WorkResponse.parse((await agent.work(500)).body).assignments.find((x) => x.jobId === id), 'the job once the node is back');
  });
});
