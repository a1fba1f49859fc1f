/**
 * Two coordinator replicas on one PostgreSQL, in process (issue 14): one leads; a node registered through the
 * follower is placed by the leader and woken on the follower; a nonce used on one replica is refused by the other;
 * an attempt ended on the follower frees its GPU for the leader; when the leader stops, the follower leads.
 * The process-level failover (SIGKILL, a replica cut off from the database) is packages/testing/test/replica-failover.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { type PostgresServer, requirePostgres, startPostgres } from '@gpux/testing';
import { GetJobResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { loadCoordinatorConfig } from '../src/config.js';
import { type RunningCoordinator, startCoordinator } from '../src/start.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const health = async (url: string) => (await call(url, 'GET', '/healthz')).body as { replica: { id: string; leader: boolean } };

describe('replicas on one PostgreSQL', requirePostgres(), () => {
  let server: PostgresServer;
  let a: Harness;
  let b: RunningCoordinator;
  let bDir: string;
  before(async () => {
    server = await startPostgres();
    const db = await server.newDatabase();
    const fast = { leaderLeaseMs: 1000, indexResyncMs: 60_000 };
    a = await startHarness({ db, ...fast });
    bDir = mkdtempSync(join(tmpdir(), 'gpux-replica-b-'));
    const config = loadCoordinatorConfig({}, { db, dataDir: bDir, host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, verify: false, canaryRate: 0, registerRatePerMin: 1_000_000, authFailuresPerMinute: 1_000_000, challenge: 'off', ...fast });
    b = await startCoordinator(config);
  });
  after(async () => {
    await b?.close();
    await a?.close();
    rmSync(bDir, { recursive: true, force: true });
    await server?.stop();
  });

  let agent: TestAgent;
  let buyer: string;

  test('the first replica leads, the second follows', async () => {
    assert.equal((await health(a.url)).replica.leader, true);
    assert.equal((await health(b.url)).replica.leader, false);
    assert.notEqual((await health(a.url)).replica.id, (await health(b.url)).replica.id);
  });

  test('a node registered through the follower gets the leader’s placement, woken on the follower', async () => {
    agent = new TestAgent(b.url, gpuAd('box-b', 1));
    agent.enrollmentToken = a.enrollment;
    assert.equal((await agent.register()).status, 200);
    assert.equal((await agent.heartbeat()).status, 200);
    buyer = await a.buyer();
    // Wait on the follower first, then submit through it: the leader places, the bus wakes this long-poll.
    const poll = agent.work(20_000);
    const sub = await call(b.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    assert.equal(sub.status, 201);
    const id = SubmitJobResponse.parse(sub.body).job.id;
    const got = WorkResponse.parse((await poll).body).assignments;
    assert.deepEqual(
      got.map((x) => x.jobId),
      [id],
    );
  });

  test('a signed request replayed to the other replica is refused (shared nonces)', async () => {
    const nonce = `replay-${Date.now()}`;
    assert.equal((await agent.request('POST', '/v1/agent/heartbeat', { activeAttemptIds: [] }, { nonce, timestamp: Date.now() })).status, 200);
    agent.url = a.url;
    const again = await agent.request('POST', '/v1/agent/heartbeat', { activeAttemptIds: [] }, { nonce, timestamp: Date.now() });
    agent.url = b.url;
    assert.equal(again.status, 401);
    assert.match(again.body.error.message, /replay/);
  });

  test('an attempt ended on the follower gives its GPU back to the leader', async () => {
    const [attemptId] = [...agent.assignments.keys()];
    assert.ok(attemptId);
    assert.equal((await agent.start(attemptId)).status, 200);
    assert.equal((await agent.result(attemptId, report('succeeded', { 'out.txt': 'one' }))).status, 200);
    // The node has one GPU: a second one-GPU job is placed only once the leader knows the first ended.
    const sub = await call(b.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    const id = SubmitJobResponse.parse(sub.body).job.id;
    await waitFor(async () => WorkResponse.parse((await agent.work(2_000)).body).assignments.find((x) => x.jobId === id), 'the second job on the freed GPU');
  });

  test('the leader stops: the follower leads within the lease and places new work', async () => {
    const before = (await health(b.url)).replica.id;
    await a.close();
    await waitFor(async () => (await health(b.url)).replica.leader, 'the follower takes the lease', 10_000);
    assert.equal((await health(b.url)).replica.id, before);
    // The second job still holds the only GPU: finish it, then a third job is placed by the new leader.
    const held = [...agent.assignments.keys()].at(-1) as string;
    assert.equal((await agent.start(held)).status, 200);
    assert.equal((await agent.result(held, report('succeeded', { 'out.txt': 'two' }))).status, 200);
    const sub = await call(b.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
    const id = SubmitJobResponse.parse(sub.body).job.id;
    const got = await waitFor(async () => WorkResponse.parse((await agent.work(2_000)).body).assignments.find((x) => x.jobId === id), 'the new leader’s placement');
    assert.equal((await agent.start(got.attemptId)).status, 200);
    assert.equal((await agent.result(got.attemptId, report('succeeded', { 'out.txt': 'three' }))).status, 200);
    assert.equal(GetJobResponse.parse((await call(b.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body).job.state, 'succeeded');
  });
});
