/** A node that stops heartbeating goes offline; its attempt is lost; the job is retried on another node. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetJobResponse, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

describe('lease expiry and retry', () => {
  let h: Harness;
  const timers: NodeJS.Timeout[] = [];
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: 600, nodeOfflineAfterMs: 600, expiryPassIntervalMs: 100, retryBaseBackoffMs: 300 });
  });
  after(async () => {
    for (const t of timers) clearInterval(t);
    await h.close();
  });

  test('lost on node A, requeued with backoff, placed on node B', async () => {
    const buyer = await h.buyer();
    const a = new TestAgent(h.url, gpuAd('node-a'));
    assert.equal((await a.register()).status, 200);
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    const jobId: string = sub.body.job.id;
    const wa = WorkResponse.parse((await a.work(20_000)).body);
    const first = wa.assignments[0]!;
    assert.equal(first.jobId, jobId);
    assert.equal((await a.start(first.attemptId)).status, 200);

    // Node B joins and keeps heartbeating; node A goes silent.
    const b = new TestAgent(h.url, gpuAd('node-b'));
    assert.equal((await b.register()).status, 200);
    timers.push(setInterval(() => void b.heartbeat([]).catch(() => {}), 150));

    const lost = await waitFor(async () => {
      const j = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      return j.attempts[0]?.state === 'lost' ? j : undefined;
    }, 'attempt lost');
    assert.ok(lost.events.some((e) => e.type === 'attempt.lost'), lost.events.map((e) => e.type).join());
    const node = await call(h.url, 'GET', `/v1/nodes/${a.nodeId}`, { token: h.operator });
    assert.equal(node.body.node.status, 'offline');

    const wb = await waitFor(async () => {
      const w = WorkResponse.parse((await b.work(5000)).body);
      return w.assignments.length ? w : undefined;
    }, 'assignment on node B');
    const second = wb.assignments[0]!;
    assert.equal(second.jobId, jobId);
    assert.notEqual(second.attemptId, first.attemptId);

    const j = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
    assert.equal(j.job.attemptCount, 2);
    const retry = j.attempts.find((x) => x.id === second.attemptId)!;
    const lostAttempt = j.attempts.find((x) => x.id === first.attemptId)!;
    assert.equal(retry.nodeId, b.nodeId);
    assert.ok(retry.createdAt >= lostAttempt.finishedAt! + 300 - 5, 'placed only after the backoff');

    // Node A comes back: its stale attempt is cancelled through the heartbeat.
    const back = await a.heartbeat([first.attemptId]);
    assert.deepEqual(back.body.cancel.map((c: { attemptId: string }) => c.attemptId), [first.attemptId]);
    const late = await a.result(first.attemptId, report('succeeded'));
    assert.equal(late.status, 409, 'a lost attempt cannot report a result');

    assert.equal((await b.start(second.attemptId)).status, 200);
    assert.equal((await b.result(second.attemptId, report('succeeded'))).status, 200);
    const done = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
    assert.equal(done.body.job.state, 'succeeded');

    const metrics = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${h.operator}` } })).text();
    assert.match(metrics, /gpux_lease_expiries_total 1/);
    assert.match(metrics, /gpux_attempts_finished_total\{outcome="lost"\} 1/);
  });
});

describe('orphaned attempts', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: 600, nodeOfflineAfterMs: 600, expiryPassIntervalMs: 100, retryBaseBackoffMs: 300 });
  });
  after(() => h.close());

  test('a running attempt the agent stops reporting is ended after a lease of grace and retried', async () => {
    const buyer = await h.buyer();
    const c = new TestAgent(h.url, gpuAd('node-c'));
    assert.equal((await c.register()).status, 200);
    const jobId: string = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } })).body.job.id;
    const attemptId = WorkResponse.parse((await c.work(20_000)).body).assignments[0]!.attemptId;
    assert.equal((await c.start(attemptId)).status, 200);
    // The agent restarted and forgot the attempt: it heartbeats, but without it.
    const ended = await waitFor(async () => {
      await c.heartbeat([]);
      const a = await h.coord.store.getAttempt(attemptId);
      return a?.state === 'failed' ? a : undefined;
    }, 'orphaned attempt ended');
    assert.match(ended.error ?? '', /no longer runs/);
    const job = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
    assert.ok(['queued', 'assigned'].includes(job.body.job.state), job.body.job.state);
    assert.equal(job.body.job.attemptCount >= 1, true);
  });
});
