/** Restart on the same database: leases of a node that keeps heartbeating survive; state is rebuilt. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { WorkResponse } from '@gpux/protocol';
import { call, type Harness, report, spec, startHarness, TestAgent } from './helpers.js';

describe('coordinator restart', () => {
  let h: Harness;
  let beat: NodeJS.Timeout | undefined;
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: 2000, nodeOfflineAfterMs: 2000, expiryPassIntervalMs: 50 });
  });
  after(async () => {
    clearInterval(beat);
    await h.close();
  });

  test('a running attempt survives a restart while its node heartbeats', async () => {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
    const jobId: string = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } })).body.job.id;
    const attemptId = WorkResponse.parse((await agent.work(20_000)).body).assignments[0]!.attemptId;
    assert.equal((await agent.start(attemptId)).status, 200);
    let held = [attemptId];
    const heartbeatEvery = () => setInterval(() => void agent.heartbeat(held).catch(() => {}), 100);
    beat = heartbeatEvery();

    // Down for longer than the lease: a naive restart would expire it at once.
    clearInterval(beat);
    await h.coord.close();
    await new Promise((r) => setTimeout(r, 2500));
    await h.restart();
    assert.equal(h.coord.bootstrapOperatorToken, null, 'the operator token exists already');
    agent.url = h.url;
    // The agent is slow to notice (but well within one lease, even on a loaded machine): several expiry passes run meanwhile.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await h.coord.store.getAttempt(attemptId))?.state, 'running', 'not expired by the restart');
    beat = heartbeatEvery();

    await new Promise((r) => setTimeout(r, 1500));
    const attempt = await h.coord.store.getAttempt(attemptId);
    assert.equal(attempt?.state, 'running');
    const node = await call(h.url, 'GET', `/v1/nodes/${agent.nodeId}`, { token: h.operator });
    assert.equal(node.body.node.status, 'online');
    assert.equal(node.body.node.activeAttempts, 1, 'the capacity index was rebuilt');
    assert.equal(node.body.node.gpusBusy, 1);

    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    held = [];
    const job = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
    assert.equal(job.body.job.state, 'succeeded');
  });
});
