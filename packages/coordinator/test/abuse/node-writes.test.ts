/**
 * Abuse suite, issue 10 items 5 and 12: what a signed node may write into an attempt. Oversized entries and
 * deeply nested event data are 400s; a flood past the attempt's budget is accepted, dropped and marked once;
 * writes to an ended attempt are 410; another node's attempt is 404; output paths that would escape or carry
 * control characters are 400 with nothing stored, and the attempt can still be reported correctly. On SQLite
 * and on PostgreSQL (the budgets are kept in the store, in the transaction that inserts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { GetJobResponse, JobLogsResponse, LOG_ENTRY_MAX_BYTES, type LogEntry, outputRootDigest, sha256Hex, signRequest, SubmitJobResponse, WorkResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const BUDGET = 300 * 1024;

interface Database {
  /** A database URL; none: the harness's SQLite file. */
  db?: string;
  stop(): Promise<void>;
}

function nodeWrites(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`abuse: node writes (${name})`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let agent: TestAgent;
    let nodes = 0;

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), attemptLogMaxBytes: BUDGET, attemptLogMaxEntries: 10_000, attemptMaxEvents: 50 });
      buyer = await h.buyer();
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    /** A running attempt of a fresh job on a fresh node (`agent`), so one failed test cannot block the next. */
    async function running(): Promise<{ jobId: string; attemptId: string }> {
      const label = `n${++nodes}`;
      agent = new TestAgent(h.url, { ...gpuAd(label), labels: { test: label } });
      assert.equal((await agent.register()).status, 200);
      const poll = agent.work(20_000);
      const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { nodeLabels: { test: label } } }) } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId = SubmitJobResponse.parse(sub.body).job.id;
      let work = WorkResponse.parse((await poll).body);
      if (work.assignments.length === 0) {
        work = await waitFor(async () => {
          const w = WorkResponse.parse((await agent.work(1000)).body);
          return w.assignments.length ? w : undefined;
        }, 'an assignment');
      }
      const attemptId = work.assignments[0]!.attemptId;
      assert.equal((await agent.start(attemptId)).status, 200);
      return { jobId, attemptId };
    }

    const logsOf = async (jobId: string) => {
      const all: JobLogsResponse['entries'] = [];
      let after = -1;
      for (;;) {
        const page = JobLogsResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${after}`, { token: buyer })).body);
        all.push(...page.entries);
        if (page.entries.length === 0) return all;
        after = page.next;
      }
    };
    const events = (attemptId: string, evs: unknown[], who = agent) => who.request('POST', `/v1/agent/attempts/${attemptId}/events`, { events: evs });
    /** A signed POST of exactly these bytes. */
    const signedRaw = (who: TestAgent, path: string, raw: string) =>
      call(h.url, 'POST', path, { raw, headers: signRequest({ method: 'POST', path, body: raw, nodeId: who.nodeId }, who.keys.privateKeyPem) });
    const pull = (i: number) => ({ type: 'image.pull.progress', at: Date.now(), data: { layersDone: i, layers: 100 } });

    test('an entry over 64 KiB is 400 with the limit; nothing of the batch is stored', async () => {
      const { jobId, attemptId } = await running();
      const big = 'é'.repeat(LOG_ENTRY_MAX_BYTES / 2 + 1); // fewer characters than the limit, more bytes
      const res = await agent.logs(attemptId, [
        { seq: 0, stream: 'stdout', data: 'fine\n', at: Date.now() },
        { seq: 1, stream: 'stdout', data: big, at: Date.now() },
      ]);
      assert.equal(res.status, 400, JSON.stringify(res.body).slice(0, 300));
      assert.equal(res.body.error.code, 'REQUEST_INVALID');
      assert.match(res.body.error.message, /65536 bytes/);
      assert.equal(res.body.error.problems[0].path, 'entries.1.data');
      assert.deepEqual(await logsOf(jobId), []);
      const seqTooHigh = await agent.logs(attemptId, [{ seq: 2 ** 41, stream: 'stdout', data: 'x', at: 1 }]);
      assert.equal(seqTooHigh.status, 400, 'seqs above LOG_SEQ_MAX are the coordinator’s own');
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    });

    test('a flood past the attempt budget: accepted, dropped, one marker; stored bytes ≤ budget + marker', async () => {
      const { jobId, attemptId } = await running();
      const chunk = 'x'.repeat(60 * 1024);
      let seq = 0;
      const answers: { accepted: number; truncated?: boolean }[] = [];
      for (let b = 0; b < 4; b++) {
        const entries: LogEntry[] = Array.from({ length: 3 }, () => ({ seq: seq++, stream: 'stdout', data: chunk, at: Date.now() }));
        const res = await agent.logs(attemptId, entries);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        answers.push(res.body);
      }
      assert.deepEqual(
        answers.map((a) => [a.accepted, a.truncated ?? false]),
        [
          [3, false],
          [2, true],
          [0, true],
          [0, true],
        ],
        '5 × 60 KiB fit in 300 KiB; the rest is dropped and the answer says so',
      );
      const logs = await logsOf(jobId);
      const markers = logs.filter((e) => e.stream === 'system');
      assert.equal(markers.length, 1);
      assert.match(markers[0]!.data, /^\[gpux\] log limit of 300 KiB or 10000 entries per attempt reached; 430080 bytes in 7 entries dropped/);
      const stored = logs.filter((e) => e.stream !== 'system').reduce((n, e) => n + Buffer.byteLength(e.data), 0);
      assert.ok(stored <= BUDGET, `${stored} bytes stored`);
      assert.equal(logs.at(-1), markers[0], 'the marker ends the log');
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    });

    test('eight concurrent batches past the budget: together they store no more than the budget and one marker', async () => {
      const { jobId, attemptId } = await running();
      const chunk = 'c'.repeat(50 * 1024);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, b) => agent.logs(attemptId, Array.from({ length: 3 }, (_, i) => ({ seq: b * 3 + i, stream: 'stdout' as const, data: chunk, at: Date.now() })))),
      );
      for (const a of answers) assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(
        answers.reduce((n, a) => n + a.body.accepted, 0),
        6,
        '6 × 50 KiB fit in 300 KiB',
      );
      const logs = await logsOf(jobId);
      assert.equal(logs.filter((e) => e.stream === 'system').length, 1);
      assert.ok(logs.filter((e) => e.stream !== 'system').reduce((n, e) => n + Buffer.byteLength(e.data), 0) <= BUDGET);
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    });

    test('writes to an ended attempt are 410 GONE and store nothing', async () => {
      const { jobId, attemptId } = await running();
      assert.equal((await agent.logs(attemptId, [{ seq: 0, stream: 'stdout', data: 'before\n', at: Date.now() }])).status, 200);
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
      const late = await agent.logs(attemptId, [{ seq: 1, stream: 'stdout', data: 'after\n', at: Date.now() }]);
      assert.equal(late.status, 410, JSON.stringify(late.body));
      assert.equal(late.body.error.code, 'GONE');
      assert.match(late.body.error.message, /has ended \(succeeded\).*stop sending/);
      const lateEvents = await events(attemptId, [pull(1)]);
      assert.equal(lateEvents.status, 410);
      assert.deepEqual(
        (await logsOf(jobId)).map((e) => e.data),
        ['before\n'],
      );
      const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      assert.equal(job.events.filter((e) => e.type.startsWith('image.pull.')).length, 0);
    });

    test('a result whose inline content is not the bytes its entry names is 400; nothing is stored and the attempt stays running', async () => {
      const { jobId, attemptId } = await running();
      const r = report('succeeded', { 'out.txt': 'committed bytes' });
      const swapped = { ...r, outputs: r.outputs.map((f) => ({ ...f, content: Buffer.from('other bytes!!!!').toString('base64') })) };
      const res = await agent.result(attemptId, swapped);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, /out\.txt: its inline content is not the 15 bytes with sha256/);
      const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      assert.equal(job.job.state, 'running');
      assert.equal((await h.coord.store.getAttempt(attemptId))?.state, 'running');
      assert.equal((await agent.result(attemptId, r)).status, 200, 'the honest report is still taken');
    });

    test('another node cannot write into an attempt that is not its own: 404, nothing stored', async () => {
      const { jobId, attemptId } = await running();
      const other = new TestAgent(h.url);
      assert.equal((await other.register()).status, 200);
      const logs = await other.logs(attemptId, [{ seq: 0, stream: 'stdout', data: 'intruder\n', at: Date.now() }]);
      assert.equal(logs.status, 404);
      assert.equal(logs.body.error.code, 'ATTEMPT_NOT_FOUND');
      assert.equal((await events(attemptId, [pull(1)], other)).status, 404);
      assert.deepEqual(await logsOf(jobId), []);
      const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      assert.equal(job.events.filter((e) => e.type.startsWith('image.pull.')).length, 0);
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    });

    test('event data nested 50 (or 5,000) deep is 400, not 500; wide or large data too; nothing stored', async () => {
      const { jobId, attemptId } = await running();
      const nest = (n: number) => {
        let v: Record<string, unknown> = { leaf: 1 };
        for (let i = 0; i < n; i++) v = { a: v };
        return v;
      };
      for (const depth of [50, 5000]) {
        // Built as text: JSON.stringify itself overflows the stack on the deepest one.
        const data = `${'{"a":'.repeat(depth)}{"leaf":1}${'}'.repeat(depth)}`;
        const res = await signedRaw(agent, `/v1/agent/attempts/${attemptId}/events`, `{"events":[{"type":"image.pull.started","at":${Date.now()},"data":${data}}]}`);
        assert.equal(res.status, 400, `${depth} deep: ${JSON.stringify(res.body).slice(0, 200)}`);
        assert.equal(res.body.error.code, 'REQUEST_INVALID');
        assert.match(res.body.error.message, /nested deeper than 4 levels/);
      }
      const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
      assert.equal((await events(attemptId, [{ type: 'image.pull.started', at: Date.now(), data: wide }])).status, 400);
      const large = { s: Array.from({ length: 8 }, () => 'y'.repeat(1000)) };
      const res = await events(attemptId, [{ type: 'image.pull.started', at: Date.now(), data: large }]);
      assert.equal(res.status, 400);
      assert.match(res.body.error.message, /larger than 4096 bytes of JSON/);
      assert.equal((await events(attemptId, [{ type: 'image.pull.started', at: Date.now(), data: nest(2) }])).status, 200, 'shallow data is fine');
      const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      assert.equal(job.events.filter((e) => e.type.startsWith('image.pull.')).length, 1);
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    });

    test('events past the attempt budget are dropped with one attempt.events_dropped event', async () => {
      const { jobId, attemptId } = await running();
      const first = await events(
        attemptId,
        Array.from({ length: 40 }, (_, i) => pull(i)),
      );
      assert.deepEqual(first.body, { accepted: 40 });
      const second = await events(
        attemptId,
        Array.from({ length: 40 }, (_, i) => pull(i)),
      );
      assert.deepEqual(second.body, { accepted: 10, truncated: true });
      assert.deepEqual((await events(attemptId, [pull(0)])).body, { accepted: 0, truncated: true });
      assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
      const job = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}?eventsLimit=1000`, { token: buyer })).body);
      assert.equal(job.events.filter((e) => e.type === 'image.pull.progress').length, 50);
      assert.deepEqual(
        job.events.filter((e) => e.type === 'attempt.events_dropped').map((e) => e.data),
        [{ attemptId, limit: 50 }],
      );
    });

    test('output paths with "..", an absolute path or a control character are 400; nothing stored; the attempt is reported afterwards', async () => {
      const { jobId, attemptId } = await running();
      const file = (path: string) => ({ path, size: 2, sha256: sha256Hex('hi'), content: Buffer.from('hi').toString('base64') });
      for (const path of ['../escape.txt', '/etc/passwd', 'a/../../b', 'evil\u001b[2Jname.txt', 'bell\u0007', 'c1\u009b31m']) {
        const outputs = [file(path)];
        const res = await agent.result(attemptId, { ...report('succeeded'), outputDigest: outputRootDigest(outputs), outputs });
        assert.equal(res.status, 400, `${JSON.stringify(path)}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'REQUEST_INVALID');
        assert.equal(res.body.error.problems[0].path, 'outputs.0.path');
      }
      const mid = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body);
      assert.equal(mid.job.state, 'running', 'nothing was stored');
      assert.equal(mid.attempts[0]?.state, 'running');
      const ok = await agent.result(attemptId, report('succeeded', { 'out/result.txt': 'done' }));
      assert.equal(ok.status, 200, JSON.stringify(ok.body));
      const result = await call(h.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer });
      assert.equal(result.status, 200);
      assert.deepEqual(
        result.body.outputs.map((o: { path: string }) => o.path),
        ['out/result.txt'],
      );
    });
  });
}

nodeWrites('SQLite', async () => ({ stop: async () => {} }));
nodeWrites(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
