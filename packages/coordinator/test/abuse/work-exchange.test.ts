/**
 * Issue 14: POST /v1/agent/work carries the starts of a delivery (one request, not one POST …/start each). It
 * starts the node's own assigned attempts and answers at once; a start that is not the node's to make (another
 * node's attempt, a made-up id, an attempt that ended) is answered refused and changes nothing; the list and its
 * ids are bounded. On SQLite and on PostgreSQL (SQLite's starts share a group commit, PostgreSQL's do not).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_EXCHANGE_STARTS, SubmitJobResponse, WorkExchangeResponse, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { WORK_EXCHANGE_BODY_LIMIT_BYTES } from '../../src/services/work.js';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function exchangeSuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`work exchange: starts carried by the poll (${name})`, opts, () => {
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

    /** A fresh node with `gpus` GPUs, and `jobs` one-GPU jobs assigned to it (not started). */
    async function assigned(jobs: number, gpus = jobs): Promise<{ agent: TestAgent; attempts: { jobId: string; attemptId: string }[] }> {
      const label = `x${++nodes}`;
      const agent = new TestAgent(h.url, { ...gpuAd(label, gpus), labels: { test: label } });
      assert.equal((await agent.register()).status, 200);
      const jobIds: string[] = [];
      for (let i = 0; i < jobs; i++) {
        const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ constraints: { nodeLabels: { test: label } } }) } });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        jobIds.push(SubmitJobResponse.parse(sub.body).job.id);
      }
      const seen = await waitFor(async () => {
        const w = WorkResponse.parse((await agent.work(500)).body);
        return w.assignments.length === jobs ? w.assignments : undefined;
      }, `${jobs} assignments`);
      return { agent, attempts: seen.map((a) => ({ jobId: a.jobId, attemptId: a.attemptId })) };
    }

    const exchange = (agent: TestAgent, body: unknown) => agent.request('POST', '/v1/agent/work', body);
    const state = async (attemptId: string) => (await h.coord.store.getAttempt(attemptId))?.state;

    test('one exchange starts every attempt of a delivery and answers at once, not after waitMs; a repeat is harmless', async () => {
      const { agent, attempts } = await assigned(3);
      const ids = attempts.map((a) => a.attemptId);
      const began = Date.now();
      const res = await exchange(agent, { waitMs: 60_000, started: [...ids, ids[0]] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.ok(Date.now() - began < 30_000, 'answered at once, not at the end of the long-poll');
      const body = WorkExchangeResponse.parse(res.body);
      assert.deepEqual(body.started.map((o) => [o.attemptId, o.ok]).sort(), ids.map((id) => [id, true]).sort(), 'one outcome per distinct id');
      assert.deepEqual(body.assignments, [], 'started attempts are no longer delivered');
      for (const id of ids) assert.equal(await state(id), 'running');
      for (const a of attempts) assert.equal((await call(h.url, 'GET', `/v1/jobs/${a.jobId}`, { token: buyer })).body.job.state, 'running');
      // Carried again (the agent never saw the answer): still running, answered started.
      const again = WorkExchangeResponse.parse((await exchange(agent, { waitMs: 0, started: ids })).body);
      assert.ok(again.started.every((o) => o.ok));
    });

    test('an exchange without starts is the long-poll: it waits for work, and wakes with an assignment', async () => {
      const label = `x${++nodes}`;
      const agent = new TestAgent(h.url, { ...gpuAd(label, 1), labels: { test: label } });
      assert.equal((await agent.register()).status, 200);
      const poll = exchange(agent, { waitMs: 20_000 });
      const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ constraints: { nodeLabels: { test: label } } }) } });
      const body = WorkExchangeResponse.parse((await poll).body);
      assert.deepEqual(body.started, []);
      assert.equal(body.assignments[0]?.jobId, SubmitJobResponse.parse(sub.body).job.id);
      assert.ok(body.assignments[0]?.seal, 'sealed like every delivery');
    });

    test("another node's attempt, made-up ids and an ended attempt are answered refused; nothing of theirs changes; the node's own start counts", async () => {
      const victim = await assigned(1);
      const own = await assigned(2);
      const victimId = victim.attempts[0]!.attemptId;
      const [mine, toCancel] = own.attempts as [{ jobId: string; attemptId: string }, { jobId: string; attemptId: string }];
      assert.equal((await call(h.url, 'POST', `/v1/jobs/${toCancel.jobId}/cancel`, { token: buyer })).status, 200);
      const made = Array.from({ length: 40 }, (_, i) => `att-made-up-${i}`);
      const res = await exchange(own.agent, { waitMs: 0, started: [victimId, ...made, mine.attemptId, toCancel.attemptId] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const out = new Map(WorkExchangeResponse.parse(res.body).started.map((o) => [o.attemptId, o]));
      const refused = (id: string) => {
        const o = out.get(id);
        return o && !o.ok ? o.error.code : null;
      };
      assert.equal(refused(victimId), 'ATTEMPT_NOT_FOUND');
      for (const id of made) assert.equal(refused(id), 'ATTEMPT_NOT_FOUND');
      assert.equal(out.get(mine.attemptId)?.ok, true);
      // A cancelled job's assigned attempt is either already ended (refused) or started with a sealed cancel.
      const cancelled = out.get(toCancel.attemptId);
      assert.ok(cancelled && (cancelled.ok ? cancelled.cancel && cancelled.cancelSeal !== undefined : cancelled.error.code === 'CONFLICT'), JSON.stringify(cancelled));
      assert.equal(await state(victimId), 'assigned', "the victim's attempt is untouched");
      assert.equal(await state(mine.attemptId), 'running');
    });

    test('bounds: more than MAX_EXCHANGE_STARTS ids, an overlong id, a wrong waitMs or an oversized body is a 400 and starts nothing', async () => {
      const { agent, attempts } = await assigned(1);
      const id = attempts[0]!.attemptId;
      const cases: unknown[] = [
        { waitMs: 0, started: [id, ...Array.from({ length: MAX_EXCHANGE_STARTS }, (_, i) => `att-${i}`)] },
        { waitMs: 0, started: [id, 'a'.repeat(129)] },
        { waitMs: 0, started: [id, ''] },
        { waitMs: 60_001, started: [id] },
        { waitMs: -1, started: [id] },
        { waitMs: 0, started: id },
        { waitMs: 0, started: [id], pad: 'y'.repeat(WORK_EXCHANGE_BODY_LIMIT_BYTES) },
      ];
      for (const body of cases) {
        const res = await exchange(agent, body);
        assert.ok(res.status === 400 || res.status === 413, `${JSON.stringify(body).slice(0, 80)}: ${res.status}`);
        assert.equal(typeof res.body?.error?.code, 'string');
      }
      assert.equal(await state(id), 'assigned');
    });
  });
}

exchangeSuite('SQLite', async () => ({ stop: async () => {} }));
exchangeSuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
