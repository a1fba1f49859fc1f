/**
 * The coordinator enforces a job's time limit (TRUST.md: the slow-loris node, which accepts and stalls). A
 * node that keeps heartbeating and listing its attempt but never reports is ended at the attempt's start +
 * the job's timeout + GPUX_RESULT_GRACE_MS; one that holds an assignment without starting it, at its
 * creation + the grace + one lease TTL. Either is lost with the reason, counts as an abandoned lease, and the
 * job moves on to another node.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DEFAULT_DEADLINE_POLICY } from '@gpux/core';
import { GetJobResponse, WorkResponse } from '@gpux/protocol';
import { loadCoordinatorConfig, storePolicies } from '../src/config.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const GRACE_MS = 500;
const LEASE_TTL_MS = 800;

describe('the coordinator ends attempts held past their deadline', () => {
  let h: Harness;
  const timers: NodeJS.Timeout[] = [];
  let honestStopped = false;
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: LEASE_TTL_MS, nodeOfflineAfterMs: 5_000, expiryPassIntervalMs: 100, retryBaseBackoffMs: 100, resultGraceMs: GRACE_MS });
  });
  after(async () => {
    honestStopped = true;
    for (const t of timers) clearInterval(t);
    await h.close();
  });

  /** A node that heartbeats every 100 ms, listing every assignment it has seen. */
  function heartbeating(agent: TestAgent): void {
    timers.push(setInterval(() => void agent.heartbeat([...agent.assignments.keys()]).catch(() => {}), 100));
  }

  /** An honest node: takes every assignment and reports success at once. */
  async function honestNode(name: string): Promise<TestAgent> {
    const agent = new TestAgent(h.url, gpuAd(name));
    assert.equal((await agent.register()).status, 200);
    heartbeating(agent);
    void (async () => {
      while (!honestStopped) {
        const res = await agent.work(200).catch(() => undefined);
        for (const a of res?.status === 200 ? WorkResponse.parse(res.body).assignments : []) {
          await agent.start(a.attemptId);
          await agent.result(a.attemptId, report('succeeded', { 'out.txt': 'ok' }));
        }
      }
    })();
    return agent;
  }

  async function submitOn(loris: TestAgent, buyer: string, timeoutSeconds: number) {
    const jobId: string = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, timeoutSeconds, maxRetries: 2 }) } })).body.job.id;
    const first = await waitFor(async () => WorkResponse.parse((await loris.work(1_000)).body).assignments.find((a) => a.jobId === jobId), `the loris takes ${jobId}`);
    return { jobId, first };
  }

  const jobOf = async (jobId: string, buyer: string) => GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);

  test('a node that starts an attempt and keeps heartbeating it, never finishing, loses it at start + timeout + grace; the job succeeds elsewhere', async () => {
    const buyer = await h.buyer();
    const loris = new TestAgent(h.url, gpuAd('loris-running'));
    assert.equal((await loris.register()).status, 200);
    const { jobId, first } = await submitOn(loris, buyer, 1);
    assert.equal((await loris.start(first.attemptId)).status, 200);
    const startedAt = Date.now();
    heartbeating(loris);
    const honest = await honestNode('honest-running');

    const ended = await waitFor(async () => {
      const a = await h.coord.store.getAttempt(first.attemptId);
      return a && a.state !== 'running' ? a : undefined;
    }, 'the stalled attempt ends', 15_000);
    // Not before its deadline (the timeout plus the grace); the expiry pass and the heartbeat cadence add a little after it.
    assert.ok(Date.now() - startedAt >= 1_000 + GRACE_MS - 50, `ended after ${Date.now() - startedAt} ms`);
    assert.equal(ended.state, 'lost');
    assert.equal(ended.error, "no result within the job's timeout (1 s) plus the grace: the node held the attempt without finishing it");
    // The node is told to stop it on its next heartbeat.
    const hb = await loris.heartbeat([first.attemptId]);
    assert.ok((hb.body.cancel as Array<{ attemptId: string }>).some((c) => c.attemptId === first.attemptId));
    // A late result is refused; the job runs again away from the loris and succeeds there.
    assert.equal((await loris.result(first.attemptId, report('succeeded', { 'out.txt': 'late' }))).status, 409);
    const job = await waitFor(async () => {
      const j = await jobOf(jobId, buyer);
      return j.job.state === 'succeeded' ? j : undefined;
    }, 'the job succeeds elsewhere', 15_000);
    assert.ok(job.attempts.some((a) => a.nodeId !== loris.nodeId && a.state === 'succeeded'));
    assert.ok(job.events.some((e) => e.type === 'attempt.lost' && e.data.cause === 'deadline'));
    const penalties = (await h.coord.store.listPenalties(loris.nodeId, { limit: 10 })).items;
    assert.deepEqual(
      penalties.map((p) => [p.kind, p.attemptId, p.evidence.cause]),
      [['lease-abandoned', first.attemptId, 'deadline']],
    );
    // The next scenario needs its loris alone.
    assert.equal((await call(h.url, 'POST', `/v1/nodes/${honest.nodeId}/cordon`, { token: h.operator, body: {} })).status, 200);
  });

  test('a node that holds an assignment (lists it in its heartbeats) but never starts it loses it at creation + grace + a lease', async () => {
    const buyer = await h.buyer();
    const loris = new TestAgent(h.url, gpuAd('loris-assigned'));
    assert.equal((await loris.register()).status, 200);
    const { jobId, first } = await submitOn(loris, buyer, 600);
    heartbeating(loris);
    const ended = await waitFor(async () => {
      const a = await h.coord.store.getAttempt(first.attemptId);
      return a && a.state !== 'assigned' ? a : undefined;
    }, 'the held assignment ends', 15_000);
    assert.equal(ended.state, 'lost');
    assert.equal(ended.error, 'not started within the grace: the node held the assignment without starting it');
    assert.ok((ended.finishedAt ?? 0) - ended.createdAt >= GRACE_MS + LEASE_TTL_MS, 'not before its start deadline');
    // Back in the queue (no other node is schedulable here), with the reason.
    const job = await jobOf(jobId, buyer);
    assert.equal(job.job.state, 'queued');
    assert.equal(job.job.error, ended.error);
  });
});

describe('GPUX_RESULT_GRACE_MS', () => {
  test('default 60000, from the environment, bounded; the store policies carry it (start grace: plus one lease TTL)', () => {
    const env = { HOME: '/tmp/gpux-test-home' };
    const d = loadCoordinatorConfig(env);
    assert.equal(d.resultGraceMs, DEFAULT_DEADLINE_POLICY.resultGraceMs);
    assert.deepEqual(storePolicies(d).deadlines, { resultGraceMs: 60_000, startGraceMs: 60_000 + d.leaseTtlMs });
    assert.deepEqual(storePolicies(d).deadlines, DEFAULT_DEADLINE_POLICY, 'the core default matches the config default');
    const c = loadCoordinatorConfig({ ...env, GPUX_RESULT_GRACE_MS: '5000', GPUX_LEASE_TTL_MS: '9000' });
    assert.deepEqual(storePolicies(c).deadlines, { resultGraceMs: 5_000, startGraceMs: 14_000 });
    for (const bad of ['0', '-1', 'soon', String(24 * 3_600_000 + 1)]) assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_RESULT_GRACE_MS: bad }), /GPUX_RESULT_GRACE_MS/);
    assert.throws(() => loadCoordinatorConfig(env, { resultGraceMs: 0 }), /resultGraceMs/);
  });
});
