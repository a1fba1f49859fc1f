/** Issue 17: run-time predictions learned from the store's finished runs, as buyers see them. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { CapacityIndex, type FinishedRun, type FinishedRunsPage, type RunCursor, type RunHistoryPort } from '@gpux/core';
import { node } from '../../core/test/helpers.js';
import { ExplainJobResponse, GetJobResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { formatJobDetail } from '../../cli/src/job-format.js';
import { RunPredictions } from '../src/services/run-predictions.js';
import { call, report, spec, startHarness, TestAgent } from './helpers.js';

/** A history in memory, read the way the store reads it (finish order, pages of `limit` rows). */
function history(runs: FinishedRun[]): RunHistoryPort & { reads: number } {
  const sorted = [...runs].sort((a, b) => a.finishedAt - b.finishedAt || (a.attemptId < b.attemptId ? -1 : 1));
  const h = {
    reads: 0,
    async listFinishedRuns(after: RunCursor, limit: number): Promise<FinishedRunsPage> {
      h.reads++;
      const rows = sorted.filter((r) => r.finishedAt > after.finishedAt || (r.finishedAt === after.finishedAt && r.attemptId > after.attemptId)).slice(0, limit);
      const last = rows.at(-1);
      return { runs: rows, last: last ? { finishedAt: last.finishedAt, attemptId: last.attemptId } : null, rows: rows.length };
    },
  };
  return h;
}

const run = (i: number, over: Partial<FinishedRun> = {}): FinishedRun => ({
  attemptId: `a${String(i).padStart(5, '0')}`,
  jobId: `j${i}`,
  buyerId: 'alice',
  spec: { name: 'train', image: 'img:1', resources: { gpu: { count: 1 } } },
  gpuClass: null,
  startedAt: 1_000 + i * 10,
  finishedAt: 1_000 + i * 10 + 60_000,
  ...over,
});

test('RunPredictions: reads back the history in pages, then only what finished since, at most every refresh interval', async () => {
  let now = 10_000_000;
  const h = history(Array.from({ length: 2500 }, (_, i) => run(i)));
  const p = new RunPredictions(h, { now: () => now }, { lookbackMs: 100 * 24 * 3_600_000, refreshMs: 5_000, maxRunsPerRefresh: 2_000 });
  const job = { buyerId: 'alice', spec: { name: 'train', image: 'img:1', resources: { gpu: { count: 1 } } }, state: 'queued', startedAt: null } as const;
  const first = await p.forJob(job as never);
  assert.equal(first.basis, 'family');
  assert.equal(first.runTimeMs?.median, 60_000);
  assert.equal(h.reads, 2, 'a refresh reads at most maxRunsPerRefresh (2 pages of 1000)');
  await p.forJob(job as never);
  assert.equal(h.reads, 2, 'not again within the refresh interval');
  now += 5_000;
  await p.forJob(job as never);
  assert.equal(h.reads, 3, 'the rest of the history (500 rows: caught up)');
  now += 5_000;
  await p.forJob(job as never);
  assert.equal(h.reads, 4, 'then only what finished since (nothing)');
  const other = await p.forJob({ ...job, buyerId: 'bob', spec: { ...job.spec, name: 'new' } } as never);
  assert.equal(other.basis, 'shape', 'a new buyer and name: jobs of the same size');
});

test('GET /v1/jobs/:id and explain show the predicted run time once jobs of the family have run; the CLI says it in words', async () => {
  const h = await startHarness();
  try {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
    const submit = async () => {
      const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name: 'train', resources: { gpu: { count: 1 } } }) } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return SubmitJobResponse.parse(res.body).job.id;
    };
    for (const ms of [60, 80, 100]) {
      const poll = agent.work(20_000);
      await submit();
      const [a] = WorkResponse.parse((await poll).body).assignments;
      assert.ok(a);
      assert.equal((await agent.start(a.attemptId)).status, 200);
      await sleep(ms);
      assert.equal((await agent.result(a.attemptId, report('succeeded'))).status, 200);
    }
    const id = await submit();
    const got = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body);
    const p = got.prediction;
    assert.ok(p, 'a job that has not ended carries a prediction');
    assert.equal(p.basis, 'family');
    assert.equal(p.samples, 3);
    assert.ok(p.runTimeMs && p.runTimeMs.median >= 60 && p.runTimeMs.median < 5_000, JSON.stringify(p));
    assert.ok(p.runTimeMs.p90 >= p.runTimeMs.median);
    assert.equal(p.finishAt, null, 'not running: no predicted end');
    const text = formatJobDetail(got);
    assert.match(text, /predicted run: +~\S+ \(90%: under \S+\), from 3 runs of this job family/);
    const explained = ExplainJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}/explain`, { token: buyer })).body);
    assert.equal(explained.prediction?.basis, 'family');
  } finally {
    await h.close();
  }
});

test('GPUX_PREDICTIONS=off: no prediction is made or shown', async () => {
  const h = await startHarness({ predictions: false });
  try {
    const buyer = await h.buyer();
    const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() } });
    const id = SubmitJobResponse.parse(res.body).job.id;
    const got = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body);
    assert.equal(got.prediction, undefined);
    assert.doesNotMatch(formatJobDetail(got), /predicted/);
  } finally {
    await h.close();
  }
});

test("RunPredictions.forPass: the nodes' comings and goings, seen by the passes, feed the uptime model the engine reads", async () => {
  const HOUR = 3_600_000;
  let now = Date.UTC(2026, 0, 1, 12);
  const p = new RunPredictions(history([]), { now: () => now }, { nodesEveryMs: 60_000 });
  const index = new CapacityIndex();
  index.upsertNode(node('steady'));
  index.upsertNode(node('evening-off'));
  // Ten days: the second node leaves every day at 18:00 and is back at 08:00; passes look every 30 minutes.
  for (let day = 0; day < 10; day++) {
    for (let half = 0; half < 48; half++) {
      const hour = (12 + half / 2) % 24;
      index.setStatus('evening-off', hour >= 18 || hour < 8 ? 'offline' : 'online');
      await p.forPass(index);
      now += HOUR / 2;
    }
  }
  now = Date.UTC(2026, 0, 11, 15); // 15:00, both online
  index.setStatus('evening-off', 'online');
  const predictor = await p.forPass(index);
  const steady = predictor.pStaysUp?.('steady', 4 * HOUR) ?? Number.NaN;
  const leaving = predictor.pStaysUp?.('evening-off', 4 * HOUR) ?? Number.NaN;
  assert.ok(steady > 0.8, `a node that never left (pulled a little toward the fleet, where one node leaves at 18:00): ${steady}`);
  assert.ok(leaving < 0.5, `a node that leaves at 18:00 every day, asked at 15:00 for 4 hours: ${leaving}`);
  assert.ok((predictor.pStaysUp?.('evening-off', 2 * HOUR) ?? 0) > 0.8, 'for the 2 hours before 18:00 it is as safe as any');
});
