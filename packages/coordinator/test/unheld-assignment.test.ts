/**
 * An assignment the node never takes up (it dropped it, e.g. while the coordinator was down) must not live
 * forever on the node's heartbeats: after a lease it is ended and the job goes back to the queue.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetJobResponse, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

describe('assignments a node does not hold', () => {
  let h: Harness;
  let beat: NodeJS.Timeout | undefined;
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: 800, nodeOfflineAfterMs: 5_000, expiryPassIntervalMs: 100, retryBaseBackoffMs: 100 });
  });
  after(async () => {
    clearInterval(beat);
    await h.close();
  });

  test('an assigned attempt never started nor held for a lease is ended and its job requeued', async () => {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, gpuAd('node-a'));
    assert.equal((await agent.register()).status, 200);
    const jobId: string = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } })).body.job.id;
    const first = WorkResponse.parse((await agent.work(20_000)).body).assignments[0]!;
    assert.equal(first.jobId, jobId);
    // The node stays healthy (heartbeats keep coming) but never lists or starts the attempt.
    beat = setInterval(() => void agent.heartbeat([]).catch(() => {}), 100);

    const job = await waitFor(async () => {
      const j = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      return j.attempts.length >= 2 ? j : undefined;
    }, 'a second attempt');
    assert.equal(job.attempts[0]!.id, first.attemptId);
    assert.equal(job.attempts[0]!.state, 'failed');
    assert.equal(job.attempts[0]!.error, 'the node never took up this assignment');
    assert.ok(job.events.some((e) => e.type === 'job.requeued'), job.events.map((e) => e.type).join());
  });
});
