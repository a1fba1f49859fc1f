/**
 * Issue 14: the agent's work exchange carries the starts of every assignment a delivery brought (one request,
 * not one POST …/start each), and falls back to starting one by one on a coordinator without it.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Assignment, JobSpec } from '@gpux/protocol';
import { sealAssignment } from './coordinator-seal.js';
import { FakeCoordinator, until } from './fake-coordinator.js';
import { tempDir } from './helpers.js';
import { agent, type T } from './recording-agent.js';

const assignment = (attemptId: string, nodeId: string): Assignment =>
  sealAssignment({ attemptId, jobId: `job-${attemptId}`, spec: JobSpec.parse({ name: 't', image: 'busybox', command: ['echo', attemptId] }), gpuIndices: [], leaseExpiresAt: Date.now() + 60_000 }, nodeId);

async function setUp(t: T, prepare: (c: FakeCoordinator) => void = () => {}) {
  const c = await new FakeCoordinator().listen(t);
  prepare(c);
  const a = await agent(t, c, await tempDir(t), { enrollmentToken: 'gpux_enroll_secret' });
  return { c, a };
}

const results = (c: FakeCoordinator, n: number) => until(`${n} results`, () => (c.results.length >= n ? true : undefined));

describe('work exchange', () => {
  test('one exchange carries every start of a delivery; nothing is started on its own', async (t) => {
    const { c, a } = await setUp(t);
    c.pending.push(...['x1', 'x2', 'x3'].map((id) => assignment(id, c.nodeId)));
    await results(c, 3);
    assert.deepEqual(c.exchanges, [['x1', 'x2', 'x3']]);
    assert.equal(c.explicitStarts, 0);
    assert.deepEqual(a.started.map((s) => s.attemptId).sort(), ['x1', 'x2', 'x3']);
  });

  test('a carried start the coordinator refuses is dropped, never run; the others run', async (t) => {
    const { c, a } = await setUp(t, (c) => c.refuseStarts.add('gone'));
    c.pending.push(assignment('gone', c.nodeId), assignment('kept', c.nodeId));
    await until('the kept one to finish', () => c.results.find((r) => r.attemptId === 'kept'));
    await until('the refusal to be logged', () => a.lines.find((l) => l.msg.startsWith('start: the coordinator has ended this attempt')));
    assert.deepEqual(
      a.started.map((s) => s.attemptId),
      ['kept'],
    );
    assert.ok(!c.results.some((r) => r.attemptId === 'gone'));
  });

  test('an exchange that fails is sent again with the same starts: each attempt runs once', async (t) => {
    const { c, a } = await setUp(t);
    c.failExchanges = 2;
    c.pending.push(assignment('retry-1', c.nodeId));
    await results(c, 1);
    assert.deepEqual(c.exchanges, [['retry-1'], ['retry-1'], ['retry-1']]);
    assert.deepEqual(
      a.started.map((s) => s.attemptId),
      ['retry-1'],
    );
    assert.equal(c.started.filter((id) => id === 'retry-1').length, 1);
    assert.equal(c.explicitStarts, 0);
  });

  test('a coordinator without the exchange (404): the agent long-polls as before and starts each attempt on its own', async (t) => {
    const { c, a } = await setUp(t, (c) => {
      c.noWorkExchange = true;
    });
    c.pending.push(assignment('old-1', c.nodeId), assignment('old-2', c.nodeId));
    await results(c, 2);
    assert.equal(c.explicitStarts, 2);
    assert.deepEqual(c.exchanges, []);
    assert.deepEqual(a.started.map((s) => s.attemptId).sort(), ['old-1', 'old-2']);
    assert.ok(a.lines.some((l) => l.msg.startsWith('the coordinator has no work exchange')));
  });
});
