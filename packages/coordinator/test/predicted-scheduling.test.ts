/**
 * Issue 17: predictions drive the coordinator's scheduling pass. One node of 2 GPUs runs a 1-GPU job of a family
 * whose runs took 5 s; a 2-GPU job waits for the whole node. With predictions it holds a reservation at the running
 * job's predicted end: a second 5 s job may not take the free GPU (it would end after that start), a job of a family
 * whose runs took milliseconds may (it ends before). With GPUX_PREDICTIONS_SCHEDULE=off the 5 s job takes the GPU
 * and the 2-GPU job waits for both.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GetJobResponse, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { formatJobDetail } from '../../cli/src/job-format.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

/** The coordinator's clock: the wall clock plus what the test moved it on (runs "take" 20 s in a moment). */
function movableClock() {
  let offset = 0;
  return {
    now: () => Date.now() + offset,
    advance: (ms: number) => {
      offset += ms;
    },
  };
}

async function scenario(schedule: boolean): Promise<{ state: (name: string) => Promise<string>; whole: GetJobResponse; now: number; runningStarted: number }> {
  const clock = movableClock();
  const h: Harness = await startHarness({ predictionsSchedule: schedule }, { clock });
  try {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, { ...gpuAd('two-gpus', 2), labels: { test: 'p' } });
    assert.equal((await agent.register()).status, 200);
    const ids = new Map<string, string>();
    /** A job of family `name`, known to the test as `key`. */
    const submit = async (name: string, gpus: number, key = name) => {
      const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name, resources: { gpu: { count: gpus } } }) } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const id = SubmitJobResponse.parse(res.body).job.id;
      ids.set(key, id);
      return id;
    };
    // The node's heartbeat after each move of the clock keeps it online.
    const advance = async (ms: number, active: string[]) => {
      clock.advance(ms);
      assert.equal((await agent.heartbeat(active)).status, 200);
    };
    const assignment = async (jobId: string) =>
      waitFor(async () => {
        const w = WorkResponse.parse((await agent.work(500)).body);
        return w.assignments.find((a) => a.jobId === jobId);
      }, `an assignment of ${jobId}`);
    // History: three runs of each family, one at a time ("long": 5 s each on the coordinator's clock: signatures allow a minute of skew).
    for (const [name, ms] of [['long', 5_000], ['short', 0]] as const) {
      for (let i = 0; i < 3; i++) {
        const a = await assignment(await submit(name, 1));
        assert.equal((await agent.start(a.attemptId)).status, 200);
        await advance(ms, [a.attemptId]);
        assert.equal((await agent.result(a.attemptId, report('succeeded'))).status, 200);
      }
    }
    await advance(5_000, []); // the predictions' next refresh (at most every 5 s) reads the short runs
    const running = await assignment(await submit('long', 1, 'long-1'));
    assert.equal((await agent.start(running.attemptId)).status, 200);
    const runningStarted = clock.now();
    await advance(2_000, [running.attemptId]);
    await submit('whole-node', 2);
    await new Promise((r) => setTimeout(r, 600)); // passes run: the 2-GPU job cannot fit
    await submit('long', 1, 'long-2');
    await submit('short', 1);
    await new Promise((r) => setTimeout(r, 1_000));
    const state = async (name: string) => {
      const res = await call(h.url, 'GET', `/v1/jobs/${ids.get(name)}`, { token: buyer });
      return (res.body as { job: { state: string } }).job.state;
    };
    const states = { whole: await state('whole-node'), long2: await state('long-2'), short: await state('short') };
    const whole = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${ids.get('whole-node')}`, { token: buyer })).body);
    const now = clock.now();
    await h.close();
    return { state: async (n) => states[n as keyof typeof states], whole, now, runningStarted };
  } catch (err) {
    await h.close();
    throw err;
  }
}

describe('issue 17: predictions in the scheduling pass', () => {
  test('a reservation for the 2-GPU job: the short job backfills, the long one waits', async () => {
    const s = await scenario(true);
    assert.equal(await s.state('whole'), 'queued');
    assert.equal(await s.state('long2'), 'queued', 'predicted to end after the reservation starts: may not take its room');
    assert.equal(await s.state('short'), 'assigned', 'predicted to end before it: backfills');
    // The buyer sees when: the running 5 s job's predicted end, then its own predicted run on top.
    const p = s.whole.prediction;
    assert.ok(p?.startAt && p.finishAt && p.runTimeMs, JSON.stringify(p));
    assert.ok(p.startAt.median > s.now && Math.abs(p.startAt.median - (s.runningStarted + 5_000)) < 1_000, `${p.startAt.median - s.runningStarted} ms after the running job started`);
    assert.equal(p.finishAt.median, p.startAt.median + p.runTimeMs.median);
    assert.ok(p.startAt.p90 >= p.startAt.median && p.finishAt.p90 === p.startAt.p90 + p.runTimeMs.p90, JSON.stringify(p));
    assert.match(formatJobDetail(s.whole), /predicted start: +\S+.*when room for it frees up/);
  });

  test('GPUX_PREDICTIONS_SCHEDULE=off: the long job takes the free GPU', async () => {
    const s = await scenario(false);
    assert.equal(await s.state('whole'), 'queued');
    assert.equal(await s.state('long2'), 'assigned');
  });
});
