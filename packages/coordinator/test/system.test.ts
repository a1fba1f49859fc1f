/** System routes (health, metrics, OpenAPI) and operator node administration. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ListNodesResponse, NodeView, ROUTES, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent } from './helpers.js';

describe('system routes', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('healthz and readyz', async () => {
    const health = (await call(h.url, 'GET', '/healthz')).body as { status: string; replica: { id: string; leader: boolean } };
    assert.equal(health.status, 'ok');
    assert.equal(health.replica.leader, true); // one process on SQLite always leads
    assert.match(health.replica.id, /^rep_/);
    const ready = await call(h.url, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.equal(ready.body.status, 'ok');
  });

  test('/metrics exposes the job-state gauge and request durations', async () => {
    const buyer = await h.buyer();
    await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() } });
    const res = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${h.operator}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    for (const s of ['queued', 'assigned', 'running', 'succeeded', 'failed', 'cancelled']) assert.match(text, new RegExp(`gpux_jobs\\{state="${s}"\\} \\d+`));
    assert.match(text, /gpux_jobs\{state="queued"\} 1/);
    assert.match(text, /gpux_http_request_duration_seconds_count\{method="POST",route="\/v1\/jobs",status="201"\} 1/);
    assert.match(text, /gpux_placements_total/);
  });

  test('/v1/openapi.json is OpenAPI 3.1 with every route', async () => {
    const res = await call(h.url, 'GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    const doc = res.body;
    assert.equal(doc.openapi, '3.1.0');
    for (const [name, r] of Object.entries(ROUTES)) {
      const p = r.path.replace(/:([A-Za-z]+)/g, '{$1}');
      const op = doc.paths[p]?.[r.method.toLowerCase()];
      assert.ok(op, `${r.method} ${p}`);
      assert.equal(op.operationId, name);
      assert.ok(op.responses.default, `${name} documents errors`);
    }
    assert.ok(doc.paths['/v1/jobs'].post.requestBody.content['application/json'].schema.properties.spec);
    assert.ok(doc.components.securitySchemes.bearer);
    assert.ok(doc.components.securitySchemes.nodeSignature);
    assert.ok(doc.components.schemas.ErrorBody);
  });
});

describe('node administration', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  const node = async (id: string) => NodeView.parse((await call(h.url, 'GET', `/v1/nodes/${id}`, { token: h.operator })).body.node);
  const admin = (id: string, verb: string) => call(h.url, 'POST', `/v1/nodes/${id}/${verb}`, { token: h.operator });

  test('list, cordon (no new work), uncordon, drain (drained once idle)', async () => {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, gpuAd('admin-node', 2));
    assert.equal((await agent.register()).status, 200);
    const list = ListNodesResponse.parse((await call(h.url, 'GET', '/v1/nodes?status=online', { token: h.operator })).body);
    assert.deepEqual(list.nodes.map((n) => n.id), [agent.nodeId]);
    assert.equal(list.nodes[0]?.gpusTotal, 2);

    assert.equal((await admin(agent.nodeId, 'cordon')).body.node.adminState, 'cordoned');
    const jobId = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } })).body.job.id;
    const none = WorkResponse.parse((await agent.work(700)).body);
    assert.equal(none.assignments.length, 0, 'a cordoned node gets no work');

    const poll = agent.work(20_000);
    assert.equal((await admin(agent.nodeId, 'uncordon')).body.node.adminState, 'active');
    const got = WorkResponse.parse((await poll).body);
    assert.equal(got.assignments[0]?.jobId, jobId);
    const attemptId = got.assignments[0]!.attemptId;
    assert.equal((await agent.start(attemptId)).status, 200);

    const drain = await admin(agent.nodeId, 'drain');
    assert.equal(drain.body.node.adminState, 'draining');
    assert.equal(drain.body.node.drained, false, 'one attempt still runs');
    assert.equal((await node(agent.nodeId)).gpusBusy, 1);
    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    const idle = await node(agent.nodeId);
    assert.equal(idle.drained, true);
    assert.equal(idle.activeAttempts, 0);
  });
});

describe('shutdown', () => {
  test('close() ends pending long-polls promptly and is safe to call twice', async () => {
    const h = await startHarness();
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
    const jobId = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 8 } } }) } })).body.job.id;
    const work = agent.work(60_000);
    const logs = call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=30000`, { token: buyer });
    await new Promise((r) => setTimeout(r, 200));
    const t0 = Date.now();
    await Promise.all([h.coord.close(), h.coord.close()]);
    const [w, l] = await Promise.all([work, logs]);
    assert.ok(Date.now() - t0 < 10_000, 'closed without waiting out the long-polls');
    assert.equal(w.status, 200);
    assert.deepEqual(w.body.assignments, []);
    assert.equal(l.status, 200);
    assert.deepEqual(l.body.entries, []);
    await h.close();
  });
});
