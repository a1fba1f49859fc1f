/** Attempt-reported job events (image pulls): a signed node posts them, the buyer sees them in the job's history. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetJobResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { call, type Harness, report, spec, startHarness, TestAgent } from './helpers.js';

describe('attempt events', () => {
  let h: Harness;
  let buyer: string;
  let agent: TestAgent;
  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
    agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
  });
  after(() => h.close());

  test('a node posts image pull events; GET /v1/jobs/:id shows them in order; a foreign or unknown attempt is 404', async () => {
    const poll = agent.work(20_000);
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId = SubmitJobResponse.parse(sub.body).job.id;
    const attemptId = WorkResponse.parse((await poll).body).assignments[0]!.attemptId;
    assert.equal((await agent.start(attemptId)).status, 200);

    const at = Date.now();
    const events = [
      { type: 'image.pull.started', at, data: { image: 'busybox:1.36' } },
      { type: 'image.pull.progress', at: at + 1, data: { layersDone: 0, layers: 1, bytesDone: 10, bytesTotal: 100 } },
      { type: 'image.pull.finished', at: at + 2, data: { image: 'busybox:1.36', imageId: `sha256:${'a'.repeat(64)}`, seconds: 0.1 } },
    ];
    const posted = await agent.request('POST', `/v1/agent/attempts/${attemptId}/events`, { events });
    assert.equal(posted.status, 200, JSON.stringify(posted.body));
    assert.deepEqual(posted.body, { accepted: 3 });

    const bad = await agent.request('POST', `/v1/agent/attempts/${attemptId}/events`, { events: [{ type: 'job.succeeded', at, data: {} }] });
    assert.equal(bad.status, 400, 'only image.pull.* events');
    const unknown = await agent.request('POST', '/v1/agent/attempts/att-nope/events', { events });
    assert.equal(unknown.status, 404, JSON.stringify(unknown.body));
    const other = new TestAgent(h.url);
    assert.equal((await other.register()).status, 200);
    const foreign = await other.request('POST', `/v1/agent/attempts/${attemptId}/events`, { events });
    assert.equal(foreign.status, 404, 'another node cannot write into this attempt’s job');

    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
    const types = job.events.map((e) => e.type);
    const pulls = job.events.filter((e) => e.type.startsWith('image.pull.'));
    assert.deepEqual(
      pulls.map((e) => e.type),
      ['image.pull.started', 'image.pull.progress', 'image.pull.finished'],
    );
    assert.ok(types.indexOf('attempt.started') < types.indexOf('image.pull.started'), types.join());
    assert.ok(types.indexOf('image.pull.finished') < types.indexOf('attempt.finished'), types.join());
    assert.equal(pulls[2]?.data.attemptId, attemptId);
    assert.equal(pulls[1]?.data.bytesTotal, 100);
  });
});
