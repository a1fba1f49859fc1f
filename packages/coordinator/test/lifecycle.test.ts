/** A job's whole way through the coordinator, driven by a signed fake agent over real HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetJobResponse, JobLogsResponse, JobResultResponse, RegisterResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

describe('job lifecycle', () => {
  let h: Harness;
  let buyer: string;
  let agent: TestAgent;
  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
    agent = new TestAgent(h.url);
    const reg = await agent.register();
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    const r = RegisterResponse.parse(reg.body);
    assert.equal(r.nodeId, agent.nodeId);
    assert.equal(r.heartbeatIntervalMs, 5000);
    assert.equal(r.leaseTtlMs, 15000);
  });
  after(() => h.close());

  async function submitAndTake(): Promise<{ jobId: string; attemptId: string }> {
    const poll = agent.work(20_000); // long-poll first: the assignment must wake it
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId = SubmitJobResponse.parse(sub.body).job.id;
    const work = await poll;
    assert.equal(work.status, 200);
    const w = WorkResponse.parse(work.body);
    assert.equal(w.assignments.length, 1);
    assert.equal(w.assignments[0]?.jobId, jobId);
    assert.deepEqual(w.assignments[0]?.gpuIndices, [0]);
    return { jobId, attemptId: w.assignments[0]!.attemptId };
  }

  test('register → submit → work → start → logs → result → succeeded', async () => {
    const { jobId, attemptId } = await submitAndTake();

    // Re-delivery until started: an immediate poll after a recent delivery waits, then hands it out again.
    const again = WorkResponse.parse((await agent.work(0)).body);
    assert.deepEqual(again.assignments.map((a) => a.attemptId), [attemptId]);

    const start = await agent.start(attemptId);
    assert.equal(start.status, 200, JSON.stringify(start.body));
    assert.deepEqual(start.body, { ok: true, cancel: false });
    assert.equal(WorkResponse.parse((await agent.work(0)).body).assignments.length, 0, 'started attempts are not delivered again');

    // A log long-poll wakes when entries arrive.
    const logPoll = call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=20000`, { token: buyer });
    const at = Date.now();
    const l1 = await agent.logs(attemptId, [
      { seq: 0, stream: 'stdout', data: 'line one\n', at },
      { seq: 1, stream: 'stderr', data: 'warn\n', at },
    ]);
    assert.deepEqual(l1.body, { accepted: 2, cancel: false });
    const polled = JobLogsResponse.parse((await logPoll).body);
    assert.ok(polled.entries.length >= 1);
    assert.equal(polled.entries[0]?.data, 'line one\n');
    const dup = await agent.logs(attemptId, [{ seq: 1, stream: 'stderr', data: 'warn\n', at }, { seq: 2, stream: 'stdout', data: 'three\n', at }]);
    assert.deepEqual(dup.body, { accepted: 1, cancel: false }, 'logs are idempotent by seq');

    const hb = await agent.heartbeat([attemptId]);
    assert.equal(hb.status, 200);
    assert.deepEqual(hb.body.cancel, []);

    const res = await agent.result(attemptId, report('succeeded', { 'out/answer.txt': '42\n' }));
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(res.body, { accepted: true, duplicate: false });

    const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
    assert.equal(job.job.state, 'succeeded');
    assert.equal(job.job.exitCode, 0);
    assert.equal(job.attempts.length, 1);
    assert.equal(job.attempts[0]?.state, 'succeeded');
    const types = job.events.map((e) => e.type);
    assert.ok(types.indexOf('job.submitted') < types.indexOf('job.assigned'), types.join());
    assert.ok(types.indexOf('job.assigned') < types.lastIndexOf(types.at(-1)!), types.join());
    assert.deepEqual(job.events.map((e) => e.seq), [...job.events.map((e) => e.seq)].sort((a, b) => a - b), 'events in order');

    // Logs by cursor: page through with limit 1.
    const seen: string[] = [];
    let cursor = -1;
    for (;;) {
      const page = JobLogsResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${cursor}&limit=1`, { token: buyer })).body);
      seen.push(...page.entries.map((e) => e.data));
      cursor = page.next;
      if (page.done) break;
      assert.ok(seen.length <= 3, 'paging ends');
    }
    assert.deepEqual(seen, ['line one\n', 'warn\n', 'three\n']);

    const result = JobResultResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer })).body);
    assert.equal(result.state, 'succeeded');
    assert.equal(result.attemptId, attemptId);
    assert.equal(result.outputs.length, 1);
    assert.equal(Buffer.from(result.outputs[0]!.content!, 'base64').toString(), '42\n');

    // The same report again is a duplicate; a different one conflicts.
    const again2 = await agent.result(attemptId, report('succeeded', { 'out/answer.txt': '42\n' }));
    assert.deepEqual(again2.body, { accepted: true, duplicate: true });
    const node = await call(h.url, 'GET', `/v1/nodes/${agent.nodeId}`, { token: h.operator });
    assert.equal(node.body.node.activeAttempts, 0, 'capacity released');
    assert.equal(node.body.node.gpusBusy, 0);

    // A different signed report is a conflict, and equivocation: the node is banned (abuse/commitments
    // covers the evidence and the slash); the next tests use a fresh node.
    const other = await agent.result(attemptId, report('succeeded', { 'out/answer.txt': '43\n' }));
    assert.equal(other.status, 409, JSON.stringify(other.body));
    assert.equal(other.body.error.code, 'CONFLICT');
    assert.equal((await agent.heartbeat()).status, 401, 'the equivocating node is refused');
    agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
  });

  test('result before the job finished: 409 RESULT_NOT_READY; a wrong digest: 400', async () => {
    const { jobId, attemptId } = await submitAndTake();
    const r = await call(h.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer });
    assert.equal(r.status, 409);
    assert.equal(r.body.error.code, 'RESULT_NOT_READY');
    const bad = { ...report('succeeded', { a: 'x' }), outputDigest: 'f'.repeat(64) };
    const res = await agent.result(attemptId, bad);
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'REQUEST_INVALID');
    // Finish it so later tests start with a free GPU.
    assert.equal((await agent.result(attemptId, report('failed', {}, 3))).status, 200);
    const job = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
    assert.equal(job.body.job.state, 'failed', 'a program failure is not retried');
    assert.equal(job.body.job.exitCode, 3);
  });

  test('cancel a running job: the heartbeat and the work long-poll carry it; outcome cancelled → job cancelled', async () => {
    const { jobId, attemptId } = await submitAndTake();
    assert.equal((await agent.start(attemptId)).status, 200);
    const poll = agent.work(20_000);
    const c = await call(h.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.equal(c.body.job.state, 'running');
    assert.equal(c.body.job.cancelRequested, true);
    const woke = WorkResponse.parse((await poll).body);
    assert.deepEqual(woke.cancel?.map((c) => c.attemptId), [attemptId]);
    const hb = await agent.heartbeat([attemptId]);
    assert.deepEqual(hb.body.cancel.map((c: { attemptId: string }) => c.attemptId), [attemptId]);
    const logs = await agent.logs(attemptId, [{ seq: 0, stream: 'system', data: 'stopping\n', at: Date.now() }]);
    assert.equal(logs.body.cancel, true);
    assert.equal((await agent.result(attemptId, report('cancelled', {}, null))).status, 200);
    const job = await waitFor(async () => {
      const j = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
      return j.body.job.state === 'cancelled' ? j : undefined;
    }, 'job cancelled');
    assert.equal(job.body.attempts[0].state, 'cancelled');
    // Cancelling a finished job conflicts.
    const again = await call(h.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'JOB_FINISHED');
  });

  test('heartbeat renews the lease and tells the agent to drop attempts it should not hold', async () => {
    const { attemptId } = await submitAndTake();
    const before = (await h.coord.store.getAttempt(attemptId))!.leaseExpiresAt!;
    await new Promise((r) => setTimeout(r, 20));
    const hb = await agent.heartbeat([attemptId, 'att-not-mine']);
    assert.deepEqual(hb.body.cancel.map((c: { attemptId: string }) => c.attemptId), ['att-not-mine']);
    const afterLease = (await h.coord.store.getAttempt(attemptId))!.leaseExpiresAt!;
    assert.ok(afterLease > before, `lease renewed (${before} → ${afterLease})`);
    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
  });
});
