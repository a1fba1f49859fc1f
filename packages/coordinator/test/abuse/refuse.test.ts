/**
 * Abuse suite, issue 19: the refuse route and sealed cancels. A flood of refusals for attempts that are not the
 * node's (unknown, another node's) changes nothing; a reason past 512 characters or a body with more is a 400;
 * a refusal racing the attempt's start ends it at most once; a heartbeat listing a thousand made-up attempts
 * gets at most MAX_STRAY_CANCELS sealed cancels back (signing is the cost). On SQLite and on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { HeartbeatResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { MAX_STRAY_CANCELS } from '../../src/services/agent.js';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function refuseAbuse(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: refusals and sealed cancels (${name})`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let nodes = 0;

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}) });
      buyer = await h.buyer();
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    /** An assigned (not started) attempt of a fresh job on a fresh node. */
    async function assignedAttempt(): Promise<{ agent: TestAgent; jobId: string; attemptId: string }> {
      const label = `r${++nodes}`;
      const agent = new TestAgent(h.url, { ...gpuAd(label), labels: { test: label } });
      assert.equal((await agent.register()).status, 200);
      const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ constraints: { nodeLabels: { test: label } } }) } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId = SubmitJobResponse.parse(sub.body).job.id;
      const a = await waitFor(async () => WorkResponse.parse((await agent.work(500)).body).assignments[0], 'an assignment');
      return { agent, jobId, attemptId: a.attemptId };
    }

    test('a flood of refusals for attempts that are not the node own changes nothing', async () => {
      const victim = await assignedAttempt();
      const flooder = new TestAgent(h.url, gpuAd('flooder'));
      assert.equal((await flooder.register()).status, 200);
      const ids = [victim.attemptId, ...Array.from({ length: 60 }, (_, i) => `att-made-up-${i}`)];
      const answers = await Promise.all(ids.map((id) => flooder.refuse(id, 'x'.repeat(512))));
      for (const r of answers) {
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.deepEqual(r.body, { ok: true, ended: false });
      }
      assert.equal((await h.coord.store.getAttempt(victim.attemptId))?.state, 'assigned');
      const events = await h.coord.store.listEvents('job', victim.jobId, 100);
      assert.equal(events.filter((e) => e.type === 'attempt.refused').length, 0);
    });

    test('an oversized reason, an oversized body or an overlong id is refused (4xx) and nothing changes', async () => {
      const { agent, attemptId } = await assignedAttempt();
      const long = await agent.request('POST', `/v1/agent/attempts/${attemptId}/refuse`, { reason: 'x'.repeat(513) });
      assert.equal(long.status, 400);
      assert.equal(long.body.error.code, 'REQUEST_INVALID');
      const huge = await agent.request('POST', `/v1/agent/attempts/${attemptId}/refuse`, { reason: 'x', pad: 'y'.repeat(64 * 1024) });
      assert.equal(huge.status, 400);
      const id = await agent.request('POST', `/v1/agent/attempts/${'a'.repeat(200)}/refuse`, { reason: 'x' });
      assert.ok(id.status === 400 || id.status === 414, `an overlong id: ${id.status}`);
      assert.equal(typeof id.body.error?.code, 'string');
      assert.equal((await h.coord.store.getAttempt(attemptId))?.state, 'assigned');
    });

    test('a refusal racing the start ends the attempt at most once', async () => {
      const { agent, jobId, attemptId } = await assignedAttempt();
      const [start, refuse] = await Promise.all([agent.start(attemptId), agent.refuse(attemptId)]);
      const state = (await h.coord.store.getAttempt(attemptId))?.state;
      if (refuse.body.ended) {
        assert.equal(state, 'failed');
        assert.notEqual(start.status, 200, 'a refused attempt cannot start');
      } else {
        assert.equal(start.status, 200);
        assert.equal(state, 'running');
      }
      const events = await h.coord.store.listEvents('job', jobId, 100);
      assert.ok(events.filter((e) => e.type === 'attempt.refused').length <= 1);
    });

    test('a heartbeat listing a thousand made-up attempts gets at most MAX_STRAY_CANCELS sealed cancels', async () => {
      const agent = new TestAgent(h.url, gpuAd('stray'));
      assert.equal((await agent.register()).status, 200);
      const hb = await agent.heartbeat(Array.from({ length: 1024 }, (_, i) => `att-stray-${i}`));
      assert.equal(hb.status, 200, JSON.stringify(hb.body));
      const res = HeartbeatResponse.parse(hb.body);
      assert.equal(res.cancel.length, MAX_STRAY_CANCELS);
      assert.ok(res.cancel.every((c) => c.seal !== undefined));
    });
  });
}

refuseAbuse('SQLite', async () => ({ stop: async () => {} }));
refuseAbuse(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
