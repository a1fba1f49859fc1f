/** GET /v1/stats against a running network: totals agree with /v1/nodes and /v1/jobs, and follow placements and cordons. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type ListJobsResponse, type ListNodesResponse, StatsResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { type Network, startNetwork, until } from './helpers/network.js';

describe('GET /v1/stats', () => {
  let net: Network;
  const call = async (path: string, token?: string, method = 'GET') => {
    const res = await fetch(`${net.url}${path}`, { method, headers: token ? { authorization: `Bearer ${token}` } : {} });
    return { status: res.status, body: (await res.json()) as unknown };
  };
  const stats = async (token = net.operatorToken) => {
    const res = await call('/v1/stats', token);
    assert.equal(res.status, 200);
    return StatsResponse.parse(res.body);
  };

  before(async () => {
    net = await startNetwork({ simulated: { 'eu-west': 3 } });
  });
  after(() => net?.close());

  test('needs a token; buyers and operators both get the network totals', async () => {
    assert.equal((await call('/v1/stats')).status, 401);
    const asBuyer = await stats(net.buyerToken);
    const asOperator = await stats();
    assert.equal(asBuyer.nodes.online, asOperator.nodes.online);
  });

  test('nodes and GPUs by class agree with the node list', async () => {
    const s = await stats();
    const { nodes } = (await call('/v1/nodes', net.operatorToken)).body as ListNodesResponse;
    assert.equal(s.nodes.total, nodes.length);
    assert.equal(s.nodes.online, 4);
    assert.equal(s.nodes.offline, 0);
    assert.equal(s.nodes.simulated, 3);
    const byModel = new Map<string, number>();
    for (const n of nodes) for (const g of n.advertisement.gpus) byModel.set(g.model, (byModel.get(g.model) ?? 0) + 1);
    assert.deepEqual(new Map(s.gpus.byClass.map((c) => [c.class, c.total])), byModel);
    assert.equal(s.gpus.total, [...byModel.values()].reduce((a, b) => a + b, 0));
    for (const c of s.gpus.byClass) assert.equal(c.busy + c.free + c.unavailable, c.total, c.class);
  });

  test('a placed GPU job shows as busy GPUs, a running job and a placement; counts match the job list', async () => {
    const client = new GpuxClient({ url: net.url, token: net.buyerToken });
    const before = await stats();
    const { job } = await client.submitJob({ name: 'stats-gpu', image: 'x', command: ['run'], resources: { gpu: { count: 1 } }, env: { GPUX_SIM_SECONDS: '30' }, maxRetries: 0 });
    const during = await until('the job runs', async () => {
      const s = await stats();
      return s.gpus.busy === before.gpus.busy + 1 && s.jobs.byState.running === 1 ? s : undefined;
    });
    assert.ok(during.placements.total >= before.placements.total + 1);
    assert.ok(during.placements.perMinute >= 1, `rate ${during.placements.perMinute}`);
    assert.ok(during.placements.windowMs > 0);
    const { jobs } = (await call('/v1/jobs?limit=500', net.operatorToken)).body as ListJobsResponse;
    for (const [state, n] of Object.entries(during.jobs.byState)) assert.equal(n, jobs.filter((j) => j.state === state).length, state);
    assert.equal(during.jobs.total, jobs.length);
    await client.cancelJob(job.id);
    await until('the GPU is free again', async () => ((await stats()).gpus.busy === before.gpus.busy ? true : undefined));
  });

  test('a cordoned node counts as cordoned and its idle GPUs as unavailable', async () => {
    const node = net.fleets[0]!.nodes[0]!.nodeId;
    const { node: view } = ((await call(`/v1/nodes/${node}`, net.operatorToken)).body as { node: ListNodesResponse['nodes'][number] });
    assert.equal((await call(`/v1/nodes/${node}/cordon`, net.operatorToken, 'POST')).status, 200);
    const s = await stats();
    assert.equal(s.nodes.cordoned, 1);
    const unavailable = s.gpus.byClass.reduce((n, c) => n + c.unavailable, 0);
    assert.equal(unavailable, view.gpusTotal - view.gpusBusy);
    await call(`/v1/nodes/${node}/uncordon`, net.operatorToken, 'POST');
    assert.equal((await stats()).nodes.cordoned, 0);
  });
});
