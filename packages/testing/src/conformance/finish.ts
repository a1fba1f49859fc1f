/** Conformance: finishAttempt (success, failure, infrastructure failure and retries, idempotency), outputs, logs. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { backoffMs, transitionDecider } from '@gpux/core';
import type { LogEntry, OutputFile } from '@gpux/protocol';
import { assigned, code, DIGEST_A, DIGEST_B, eventTypes, type OpenStore, placement, register, result, T0, withStore } from './fixtures.js';

const decide = transitionDecider();

export function finishTests(open: OpenStore): void {
  test('finishAttempt success: attempt and job succeed, outputs stored and read back, events written', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const outputs: OutputFile[] = [
        { path: 'result/b.bin', size: 70_000, sha256: 'c'.repeat(64) },
        { path: 'a.txt', size: 5, sha256: 'd'.repeat(64), content: Buffer.from('hello').toString('base64') },
      ];
      const r = await store.finishAttempt(result(a.id, 'node-1', T0 + 100, { outputs, metrics: { durationMs: 99, logBytes: 10 } }), decide);
      assert.equal(r.duplicate, false);
      assert.equal(r.attempt.state, 'succeeded');
      assert.equal(r.attempt.exitCode, 0);
      assert.equal(r.attempt.outputDigest, DIGEST_A);
      assert.deepEqual(r.attempt.metrics, { durationMs: 99, logBytes: 10 });
      assert.equal(r.attempt.finishedAt, T0 + 100);
      assert.equal(r.job.state, 'succeeded');
      assert.equal(r.job.exitCode, 0);
      assert.equal(r.job.error, null);
      assert.equal(r.job.finishedAt, T0 + 100);
      assert.equal(r.job.currentAttemptId, 'att-1');
      assert.deepEqual(await store.getJob('job-1'), r.job);
      assert.deepEqual(await store.getAttempt('att-1'), r.attempt);
      assert.deepEqual(await store.getOutputs('att-1'), [outputs[1], outputs[0]]);
      assert.deepEqual(await store.getOutputs('att-none'), []);
      assert.deepEqual(await store.listActiveAttempts('node-1'), []);
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.assigned', 'attempt.started', 'attempt.finished', 'job.succeeded']);
    }));

  test('finishAttempt is idempotent: the same report is a duplicate, a different one conflicts, another node is not found', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await register(store, 'node-2', T0);
      const report = result(a.id, 'node-1', T0 + 10);
      await assert.rejects(store.finishAttempt({ ...report, nodeId: 'node-2' }, decide), code('ATTEMPT_NOT_FOUND'));
      await assert.rejects(store.finishAttempt({ ...report, attemptId: 'att-missing' }, decide), code('ATTEMPT_NOT_FOUND'));
      const first = await store.finishAttempt(report, decide);
      const eventsBefore = await store.listEvents('job', 'job-1', 100);
      const dup = await store.finishAttempt({ ...report, now: T0 + 20 }, decide);
      assert.equal(dup.duplicate, true);
      assert.deepEqual(dup.attempt, first.attempt);
      assert.deepEqual(dup.job, first.job);
      assert.deepEqual(await store.listEvents('job', 'job-1', 100), eventsBefore);
      await assert.rejects(store.finishAttempt({ ...report, outputDigest: DIGEST_B }, decide), code('CONFLICT'));
      await assert.rejects(store.finishAttempt({ ...report, outcome: 'failed', exitCode: 1 }, decide), code('CONFLICT'));
      await assert.rejects(store.finishAttempt({ ...report, nodeId: 'node-2' }, decide), code('ATTEMPT_NOT_FOUND'));
      assert.deepEqual(await store.getJob('job-1'), first.job);
    }));

  test('finishAttempt failure with an exit code fails the job without retry', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0, { spec: { maxRetries: 3 } });
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const r = await store.finishAttempt(result(a.id, 'node-1', T0 + 50, { outcome: 'failed', exitCode: 3, error: null }), decide);
      assert.equal(r.attempt.state, 'failed');
      assert.equal(r.attempt.exitCode, 3);
      assert.equal(r.job.state, 'failed');
      assert.equal(r.job.exitCode, 3);
      assert.match(r.job.error ?? '', /code 3/);
      assert.equal(r.job.finishedAt, T0 + 50);
      assert.deepEqual(r.job.avoidNodeIds, []);
      assert.deepEqual(await store.claimQueued(T0 + 1_000_000, 10), []);
      assert.deepEqual((await eventTypes(store, 'job', 'job-1')).slice(-2), ['attempt.finished', 'job.failed']);
    }));

  test('finishAttempt infrastructure failure requeues with backoff away from the node, then fails when retries run out', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0, { spec: { maxRetries: 1 } });
      const infra = { outcome: 'failed' as const, exitCode: null, error: 'executor failed: docker daemon gone' };
      const r1 = await store.finishAttempt(result(a.id, 'node-1', T0 + 10, infra), decide);
      assert.equal(r1.attempt.state, 'failed');
      assert.equal(r1.job.state, 'queued');
      assert.equal(r1.job.runAfter, T0 + 10 + backoffMs(1));
      assert.deepEqual(r1.job.avoidNodeIds, ['node-1']);
      assert.equal(r1.job.currentAttemptId, null);
      assert.equal(r1.job.finishedAt, null);
      assert.equal(r1.job.error, infra.error);
      assert.deepEqual((await eventTypes(store, 'job', 'job-1')).slice(-2), ['attempt.finished', 'job.requeued']);
      const due = r1.job.runAfter as number;
      assert.deepEqual(
        (await store.claimQueued(due, 10)).map((j) => j.id),
        ['job-1'],
      );
      await register(store, 'node-2', T0);
      const [a2] = await store.assign([placement('job-1', 'att-2', 'node-2', due + 30_000)], due);
      assert.ok(a2);
      assert.equal((await store.getJob('job-1'))?.attemptCount, 2);
      const r2 = await store.finishAttempt(result('att-2', 'node-2', due + 10, infra), decide);
      assert.equal(r2.job.state, 'failed');
      assert.match(r2.job.error ?? '', /no retries left/);
      assert.deepEqual(r2.job.avoidNodeIds, ['node-1', 'node-2']);
      assert.equal(r2.job.finishedAt, due + 10);
      assert.deepEqual(
        (await store.listAttempts('job-1')).map((x) => [x.id, x.state]),
        [
          ['att-1', 'failed'],
          ['att-2', 'failed'],
        ],
      );
    }));

  test('finishAttempt on a job with a cancel request cancels it', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      await store.requestCancel('job-1', T0 + 2);
      const r = await store.finishAttempt(result(a.id, 'node-1', T0 + 3, { outcome: 'cancelled', exitCode: 137, error: 'stopped' }), decide);
      assert.equal(r.attempt.state, 'cancelled');
      assert.equal(r.job.state, 'cancelled');
      assert.equal(r.job.finishedAt, T0 + 3);
      assert.deepEqual((await eventTypes(store, 'job', 'job-1')).slice(-2), ['attempt.finished', 'job.cancelled']);
    }));

  test('appendLogs is idempotent by (attempt, seq); readLogs pages by cursor across attempts', () =>
    withStore(open, async (store) => {
      const entry = (seq: number, data: string): LogEntry => ({ seq, stream: seq % 2 ? 'stderr' : 'stdout', data, at: T0 + seq });
      const a1 = await assigned(store, 'job-1', 'att-1', 'node-1', T0, { spec: { maxRetries: 2 } });
      assert.equal(await store.appendLogs('job-1', a1.id, [entry(0, 'a'), entry(1, 'b'), entry(2, 'c')]), 3);
      assert.equal(await store.appendLogs('job-1', a1.id, [entry(1, 'b'), entry(2, 'c'), entry(3, 'd')]), 1);
      assert.equal(await store.appendLogs('job-1', a1.id, []), 0);
      await store.finishAttempt(result(a1.id, 'node-1', T0 + 10, { outcome: 'failed', exitCode: null, error: 'executor failed' }), decide);
      await register(store, 'node-2', T0);
      const [a2] = await store.assign([placement('job-1', 'att-2', 'node-2', T0 + 1_000_000)], T0 + 100_000);
      assert.ok(a2);
      assert.equal(await store.appendLogs('job-1', a2.id, [entry(0, 'x'), entry(1, 'y')]), 2);
      await assigned(store, 'job-2', 'att-other', 'node-1', T0);
      assert.equal(await store.appendLogs('job-2', 'att-other', [entry(0, 'other job')]), 1);

      const all = await store.readLogs('job-1', 0, 100);
      assert.deepEqual(
        all.map((e) => [e.attemptId, e.seq, e.data]),
        [
          ['att-1', 0, 'a'],
          ['att-1', 1, 'b'],
          ['att-1', 2, 'c'],
          ['att-1', 3, 'd'],
          ['att-2', 0, 'x'],
          ['att-2', 1, 'y'],
        ],
      );
      assert.deepEqual(all[1], { seq: 1, stream: 'stderr', data: 'b', at: T0 + 1, attemptId: 'att-1', cursor: all[1]?.cursor });
      for (let i = 1; i < all.length; i++) assert.ok((all[i]?.cursor ?? 0) > (all[i - 1]?.cursor ?? 0));
      const paged: string[] = [];
      let after = 0;
      for (;;) {
        const page = await store.readLogs('job-1', after, 4);
        if (page.length === 0) break;
        paged.push(...page.map((e) => e.data));
        after = page[page.length - 1]?.cursor ?? after;
      }
      assert.deepEqual(paged, ['a', 'b', 'c', 'd', 'x', 'y']);
      assert.deepEqual(await store.readLogs('job-1', all[5]?.cursor ?? 0, 10), []);
      assert.deepEqual(
        (await store.readLogs('job-2', 0, 10)).map((e) => e.data),
        ['other job'],
      );
    }));
}
