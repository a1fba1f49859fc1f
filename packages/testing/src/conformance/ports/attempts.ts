/**
 * Conformance, attempts port: startAttempt, finishAttempt (success, failure, infrastructure failure and
 * retries, idempotency, cancel requests, gangs), outputs, lease expiry and extension, logs and
 * attempt-reported job events. Budgeted node writes are in attempt-writes.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, type AttemptPriceRecord, backoffMs, DEFAULT_DEADLINE_POLICY, holdFor, move, transitionDecider } from '@gpux/core';
import type { LogEntry, OutputFile } from '@gpux/protocol';
import { advertisement, assigned, code, DIGEST_A, DIGEST_B, eventTypes, gang, type OpenStore, placement, register, result, spec, submit, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();

export function attemptTests(open: OpenStore): void {
  test('startAttempt: assigned -> running (job too), idempotent, wrong node or unknown attempt rejected, ended attempt conflicts', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await register(store, 'node-2', T0);
      await assert.rejects(store.startAttempt(a.id, 'node-2', T0 + 1), code('ATTEMPT_NOT_FOUND'));
      await assert.rejects(store.startAttempt('att-missing', 'node-1', T0 + 1), code('ATTEMPT_NOT_FOUND'));
      const s1 = await store.startAttempt(a.id, 'node-1', T0 + 5);
      assert.equal(s1.attempt.state, 'running');
      assert.equal(s1.attempt.startedAt, T0 + 5);
      assert.equal(s1.job.state, 'running');
      assert.equal(s1.job.startedAt, T0 + 5);
      assert.equal(s1.job.cancelRequested, false);
      const s2 = await store.startAttempt(a.id, 'node-1', T0 + 9);
      assert.equal(s2.attempt.startedAt, T0 + 5);
      assert.equal(s2.job.state, 'running');
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.assigned', 'attempt.started']);
      await store.requestCancel('job-1', T0 + 10);
      assert.equal((await store.startAttempt(a.id, 'node-1', T0 + 11)).job.cancelRequested, true);
      await store.finishAttempt(result(a.id, 'node-1', T0 + 12, { outcome: 'cancelled', exitCode: null }), decide);
      await assert.rejects(store.startAttempt(a.id, 'node-1', T0 + 13), code('CONFLICT'));
    }));

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

  test('expireLeases: lost attempt requeues away from the node; out of retries fails; cancel-requested cancels; healthy untouched', () =>
    withStore(open, async (store) => {
      const retry = await assigned(store, 'job-retry', 'att-retry', 'node-1', T0, { spec: { maxRetries: 2 } });
      const last = await assigned(store, 'job-last', 'att-last', 'node-1', T0, { spec: { maxRetries: 0 } });
      const cancel = await assigned(store, 'job-cancel', 'att-cancel', 'node-1', T0);
      const healthy = await assigned(store, 'job-ok', 'att-ok', 'node-2', T0);
      await store.startAttempt(retry.id, 'node-1', T0 + 1);
      await store.requestCancel('job-cancel', T0 + 2);
      await store.heartbeat('node-2', T0 + 3, T0 + 500_000);
      const now = T0 + 40_000; // past the 30 s leases of node-1
      const lost = await store.expireLeases(now, decide, 100);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.jobId, l.nodeId, l.jobState]).sort(),
        [
          ['att-cancel', 'job-cancel', 'node-1', 'cancelled'],
          ['att-last', 'job-last', 'node-1', 'failed'],
          ['att-retry', 'job-retry', 'node-1', 'queued'],
        ],
      );
      const r = await store.getJob('job-retry');
      assert.equal(r?.state, 'queued');
      assert.deepEqual(r?.avoidNodeIds, ['node-1']);
      assert.ok((r?.runAfter ?? 0) > now);
      assert.equal(r?.currentAttemptId, null);
      assert.equal((await store.getAttempt(retry.id))?.state, 'lost');
      assert.equal((await store.getAttempt(retry.id))?.finishedAt, now);
      assert.equal((await store.getJob('job-last'))?.state, 'failed');
      assert.equal((await store.getJob('job-cancel'))?.state, 'cancelled');
      assert.equal((await store.getAttempt(healthy.id))?.state, 'assigned');
      assert.deepEqual((await eventTypes(store, 'job', 'job-retry')).slice(-2), ['attempt.lost', 'job.requeued']);
      assert.deepEqual((await eventTypes(store, 'job', 'job-last')).slice(-2), ['attempt.lost', 'job.failed']);
      assert.deepEqual(await store.expireLeases(now, decide, 100), []);
      // The node reports after the coordinator declared the attempt lost: conflict.
      await assert.rejects(store.finishAttempt(result(last.id, 'node-1', now + 1), decide), code('CONFLICT'));
      await assert.rejects(store.finishAttempt(result(cancel.id, 'node-1', now + 1, { outcome: 'cancelled', exitCode: null }), decide), code('CONFLICT'));
    }));

  test('expireLeases honours its limit, oldest lease first', () =>
    withStore(open, async (store) => {
      await assigned(store, 'job-1', 'att-1', 'node-1', T0 + 2);
      await assigned(store, 'job-2', 'att-2', 'node-1', T0);
      await assigned(store, 'job-3', 'att-3', 'node-1', T0 + 1);
      const now = T0 + 100_000;
      assert.deepEqual(
        (await store.expireLeases(now, decide, 2)).map((l) => l.attemptId),
        ['att-2', 'att-3'],
      );
      assert.deepEqual(
        (await store.expireLeases(now, decide, 2)).map((l) => l.attemptId),
        ['att-1'],
      );
    }));

  test('extendActiveLeases pushes active leases up to a minimum and leaves ended attempts alone', () =>
    withStore(open, async (store) => {
      const short = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.heartbeat('node-1', T0, T0 + 100);
      const long = await assigned(store, 'job-2', 'att-2', 'node-2', T0 + 200_000);
      const done = await assigned(store, 'job-3', 'att-3', 'node-3', T0);
      await store.finishAttempt(result(done.id, 'node-3', T0 + 1), decide);
      assert.equal(await store.extendActiveLeases(T0 + 60_000), 1);
      assert.equal((await store.getAttempt(short.id))?.leaseExpiresAt, T0 + 60_000);
      assert.equal((await store.getAttempt(long.id))?.leaseExpiresAt, T0 + 230_000);
      assert.equal((await store.getAttempt(done.id))?.leaseExpiresAt, null);
      assert.deepEqual(await store.expireLeases(T0 + 59_999, decide, 10), []);
    }));

  test('gang: one member failing or lost stops the others and moves the job once', () =>
    withStore(open, async (store) => {
      for (const n of ['n1', 'n2', 'n3']) await register(store, n, T0);
      await submit(store, 'job-g', T0, { spec: { nodes: 3 } });
      await store.assign(gang('job-g', 'att-g', ['n1', 'n2', 'n3'], T0 + 30_000), T0 + 1);
      const f = await store.finishAttempt(result('att-g-r1', 'n2', T0 + 2, { outcome: 'failed', exitCode: null, error: 'executor failed' }), decide);
      assert.equal(f.job.state, 'queued');
      assert.deepEqual(f.job.avoidNodeIds, ['n2']);
      assert.equal((await store.getAttempt('att-g'))?.state, 'cancelled');
      assert.equal((await store.getAttempt('att-g-r2'))?.state, 'cancelled');
      assert.deepEqual(await store.listActiveAttempts(), []);
      assert.ok((await eventTypes(store, 'job', 'job-g')).includes('gang.stopped'));
      // Second round: every lease runs out at once; the job is requeued once, one member lost, the rest stopped.
      await store.assign(gang('job-g', 'att-h', ['n1', 'n2', 'n3'], T0 + 40_000), T0 + 3);
      const lost = await store.expireLeases(T0 + 50_000, decide, 100);
      assert.equal(lost.length, 1);
      const states = await Promise.all(['att-h', 'att-h-r1', 'att-h-r2'].map(async (id) => (await store.getAttempt(id))?.state));
      assert.deepEqual(states.sort(), ['cancelled', 'cancelled', 'lost']);
      const job = await store.getJob('job-g');
      assert.equal(job?.state, 'queued');
      assert.equal(job?.attemptCount, 2);
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

  test('appendJobEvents adds attempt-reported events to the job history, in order, after the existing ones', () =>
    withStore(open, async (store) => {
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.startAttempt(a.id, 'node-1', T0 + 1);
      const added = await store.appendJobEvents('job-1', a.id, [
        { type: 'image.pull.started', at: T0 + 2, data: { image: 'alpine:3' } },
        { type: 'image.pull.progress', at: T0 + 3, data: { layersDone: 1, layers: 2 } },
        { type: 'image.pull.finished', at: T0 + 4, data: { imageId: 'sha256:abc', seconds: 2 } },
      ]);
      assert.equal(added, 3);
      assert.equal(await store.appendJobEvents('job-1', a.id, []), 0);
      const events = await store.listEvents('job', 'job-1', 100);
      assert.deepEqual(
        events.map((e) => e.type),
        ['job.submitted', 'job.assigned', 'attempt.started', 'image.pull.started', 'image.pull.progress', 'image.pull.finished'],
      );
      assert.deepEqual(events[5]?.data, { imageId: 'sha256:abc', seconds: 2, attemptId: a.id });
      assert.equal(events[3]?.at, T0 + 2);
      assert.equal(events[3]?.subjectId, 'job-1');
    }));

  test('deadline (slow-loris): a heartbeating node is never leased past start + timeout + grace; expireLeases ends it as lost, the job requeued, charged no more than the timeout, a lease-abandoned penalty with cause deadline', () =>
    withStore(open, async (store) => {
      const { resultGraceMs } = DEFAULT_DEADLINE_POLICY;
      // 1 minor unit per ms of one GPU: the timeout (60 s) costs exactly 60000.
      const price: AttemptPriceRecord = { asset: 'usdc', pricePerUnitHour: 3_600_000, units: 1, feeBps: 500, providerId: 'prov-dl', stakeLock: 0, marketClass: 'h100-80gb' };
      const jobSpec = spec({ timeoutSeconds: 60, maxRetries: 1 });
      const held = holdFor(jobSpec, price.pricePerUnitHour);
      await store.registerNode({ id: 'node-dl', publicKey: 'key-node-dl', advertisement: advertisement(), now: T0, providerId: 'prov-dl' });
      await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet('buyer-dl'), amount: 10 * held }]), at: T0, memo: 'test funds' });
      await store.submitJob({ id: 'job-dl', buyerId: 'buyer-dl', spec: jobSpec, idempotencyKey: null, now: T0, payment: { asset: 'usdc', capPerUnitHour: price.pricePerUnitHour, units: 1, held } });
      const [a] = await store.assign([{ ...placement('job-dl', 'att-dl', 'node-dl', T0 + 30_000), price }], T0);
      assert.ok(a);
      const startedAt = T0 + 1_000;
      await store.startAttempt(a.id, 'node-dl', startedAt);
      const deadline = startedAt + 60_000 + resultGraceMs;
      // The node keeps heartbeating (30 s leases) and never reports.
      for (let now = T0 + 10_000; now <= deadline + 20_000; now += 10_000) {
        await store.heartbeat('node-dl', now, now + 30_000);
        const lease: number | null | undefined = (await store.getAttempt(a.id))?.leaseExpiresAt;
        assert.equal(lease, Math.min(now + 30_000, deadline), `the lease at ${now - T0}`);
        if (now <= deadline) assert.deepEqual(await store.expireLeases(now, decide, 10), [], `nothing ends before the deadline (${now - T0})`);
        // A settlement pass past the timeout charges the timeout, never more.
        if (now === T0 + 100_000) assert.equal(await store.settleRunning(now, 0, 10), 1);
      }
      const lost = await store.expireLeases(deadline + 1, decide, 10);
      assert.deepEqual(lost, [{ attemptId: a.id, jobId: 'job-dl', nodeId: 'node-dl', jobState: 'queued', outcome: 'lost', cause: 'deadline' }]);
      const why = "no result within the job's timeout (60 s) plus the grace: the node held the attempt without finishing it";
      const ended = await store.getAttempt(a.id);
      assert.equal(ended?.state, 'lost');
      assert.equal(ended?.error, why);
      const job = await store.getJob('job-dl');
      assert.equal(job?.state, 'queued');
      assert.equal(job?.error, why);
      assert.deepEqual(job?.avoidNodeIds, ['node-dl']);
      assert.ok((job?.runAfter ?? 0) > deadline + 1, 'requeued with a backoff');
      const lostEvent = (await store.listEvents('job', 'job-dl', 100)).find((e) => e.type === 'attempt.lost');
      assert.equal(lostEvent?.data.cause, 'deadline');
      const charged = (await store.jobTransfers('job-dl'))
        .filter((t) => t.kind === 'settlement')
        .flatMap((t) => t.postings)
        .filter((p) => p.account === ACCOUNTS.escrow('job-dl'))
        .reduce((sum, p) => sum - p.amount, 0);
      assert.equal(charged, 60_000, 'charged for the timeout, not for the stall');
      const penalties = (await store.listPenalties('node-dl', { limit: 10 })).items.filter((p) => p.kind === 'lease-abandoned');
      assert.equal(penalties.length, 1);
      assert.equal(penalties[0]?.attemptId, a.id);
      assert.equal(penalties[0]?.evidence.cause, 'deadline');
      assert.equal(penalties[0]?.evidence.deadlineAt, deadline);
      assert.equal(penalties[0]?.fee, 0, 'the first in 7 days is free');
      // A late report from the node changes nothing.
      await assert.rejects(store.finishAttempt(result(a.id, 'node-dl', deadline + 2), decide), code('CONFLICT'));
    }));

  test('deadline: an assignment held but never started ends at creation + the start grace; a restart extension past a deadline is kept, not shortened', () =>
    withStore(open, async (store) => {
      const { startGraceMs } = DEFAULT_DEADLINE_POLICY;
      const a = await assigned(store, 'job-1', 'att-1', 'node-1', T0);
      await store.heartbeat('node-1', T0 + startGraceMs - 1_000, T0 + startGraceMs + 29_000);
      assert.equal((await store.getAttempt(a.id))?.leaseExpiresAt, T0 + startGraceMs);
      assert.deepEqual(await store.expireLeases(T0 + startGraceMs, decide, 10), []);
      const lost = await store.expireLeases(T0 + startGraceMs + 1, decide, 10);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.outcome, l.cause]),
        [[a.id, 'lost', 'deadline']],
      );
      assert.equal((await store.getAttempt(a.id))?.error, 'not started within the grace: the node held the assignment without starting it');

      // A coordinator restart grants one more lease past the deadline; heartbeats keep it, then it ends.
      const b = await assigned(store, 'job-2', 'att-2', 'node-1', T0 + 100_000);
      await store.heartbeat('node-1', T0 + 100_000 + startGraceMs - 1, T0 + 100_000 + startGraceMs + 29_999);
      const restart = T0 + 100_000 + startGraceMs + 10_000;
      assert.equal(await store.extendActiveLeases(restart + 30_000), 1);
      await store.heartbeat('node-1', restart + 5_000, restart + 35_000);
      assert.equal((await store.getAttempt(b.id))?.leaseExpiresAt, restart + 30_000, 'a heartbeat never shortens a granted lease');
      assert.deepEqual(await store.expireLeases(restart + 30_000, decide, 10), []);
      assert.deepEqual(
        (await store.expireLeases(restart + 30_001, decide, 10)).map((l) => [l.attemptId, l.cause]),
        [[b.id, 'deadline']],
      );
    }));
}
