/**
 * Abuse suite, issue 10 items 5, 6 and 10: what readers get. 1,000 junk events from the node do not hide
 * the job's end or its money events; a log page never passes the byte cap; concurrent long-polls are capped
 * per token and per node (429); many waiters woken by an append share one store read (counted, not timed).
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Store } from '@gpux/core';
import { GetJobResponse, JobLogsResponse, type LogEntry, SubmitJobResponse, TreasuryResponse, WorkResponse } from '@gpux/protocol';
import { openStore } from '../../src/store/index.js';
import { call, gpuAd, type Harness, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;
let labels = 0;

/** A fresh labelled node on `h` and a running attempt of a fresh job pinned to it. */
async function running(h: Harness, buyer: string, over: Record<string, unknown> = {}) {
  const label = `r${++labels}`;
  const agent = new TestAgent(h.url, { ...gpuAd(label), labels: { test: label } });
  const reg = await agent.register();
  assert.equal(reg.status, 200, JSON.stringify(reg.body));
  return { agent, ...(await runOn(h, buyer, agent, label, over)) };
}

async function runOn(h: Harness, buyer: string, agent: TestAgent, label: string, over: Record<string, unknown> = {}) {
  const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, constraints: { nodeLabels: { test: label } }, ...over }) } });
  assert.equal(sub.status, 201, JSON.stringify(sub.body));
  const jobId = SubmitJobResponse.parse(sub.body).job.id;
  const work = await waitFor(async () => {
    const w = WorkResponse.parse((await agent.work(1000)).body);
    return w.assignments.length ? w : undefined;
  }, 'an assignment');
  const attemptId = work.assignments[0]!.attemptId;
  assert.equal((await agent.start(attemptId)).status, 200);
  return { jobId, attemptId };
}

describe('abuse: readers, on a market', () => {
  let h: Harness;
  let buyer: string;

  before(async () => {
    h = await startHarness({ market: true, devMint: true, settleChunkMs: 1000, logPageMaxBytes: 256 * 1024, logPollsPerToken: 3, workPollsPerNode: 2 });
    buyer = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 100 * USDC } })).status, 201);
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: h.provider, body: { amount: 1000 * USDC } })).status, 201);
  });
  after(() => h.close());

  /** A staked node for paid jobs. */
  async function stakedNode() {
    const label = `m${++labels}`;
    const agent = new TestAgent(h.url, { ...gpuAd(label), labels: { test: label } });
    assert.equal((await agent.register()).status, 200);
    const staked = await call(h.url, 'POST', `/v1/nodes/${agent.nodeId}/stake`, { token: h.provider, body: { amount: 200 * USDC } });
    assert.equal(staked.status, 200, JSON.stringify(staked.body));
    return { agent, label };
  }

  test('1,000 junk events do not hide the job’s end and its money events; older events page back; the ledger balances', async () => {
    const { agent, label } = await stakedNode();
    const { jobId, attemptId } = await runOn(h, buyer, agent, label, { maxPricePerGpuHour: 3 * USDC, timeoutSeconds: 600 });
    for (let b = 0; b < 10; b++) {
      const evs = Array.from({ length: 100 }, (_, i) => ({ type: 'image.pull.progress', at: Date.now(), data: { junk: b * 100 + i } }));
      const res = await agent.request('POST', `/v1/agent/attempts/${attemptId}/events`, { events: evs });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);

    const res = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
    assert.equal(res.status, 200, JSON.stringify(res.body).slice(0, 300));
    const page = GetJobResponse.parse(res.body);
    const own = page.events.filter((e) => !e.type.startsWith('image.pull.')).map((e) => e.type);
    for (const t of ['job.submitted', 'job.assigned', 'attempt.started', 'attempt.finished', 'job.succeeded', 'job.charged', 'job.escrow_released']) {
      assert.ok(own.includes(t), `${t} is shown: ${own.join(', ')}`);
    }
    assert.equal(page.events.filter((e) => e.type.startsWith('image.pull.')).length, 200, 'node events are capped per page');
    assert.equal(page.nodeEventsElided, 800);
    assert.equal(page.moreEventsBefore, null);
    assert.ok(page.events.every((e, i) => i === 0 || e.seq > page.events[i - 1]!.seq), 'oldest first');

    // Paging back two at a time reaches every one of the job's own events exactly once.
    const seen: string[] = [];
    let before: number | null | undefined;
    for (let n = 0; n < 50; n++) {
      const p = GetJobResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}?eventsLimit=2${before != null ? `&eventsBefore=${before}` : ''}`, { token: buyer })).body);
      seen.unshift(...p.events.filter((e) => !e.type.startsWith('image.pull.')).map((e) => e.type));
      before = p.moreEventsBefore;
      if (before == null) break;
    }
    assert.deepEqual(seen, own);
    const bad = await call(h.url, 'GET', `/v1/jobs/${jobId}?eventsLimit=5000`, { token: buyer });
    assert.equal(bad.status, 400);

    const treasury = TreasuryResponse.parse((await call(h.url, 'GET', '/v1/treasury', { token: h.operator })).body);
    assert.ok(treasury.assets.length > 0 && treasury.assets.every((a) => a.balanced), JSON.stringify(treasury));
  });

  test('a log page never passes the byte cap, and paging reads everything once', async () => {
    const { agent, label } = await stakedNode();
    const { jobId, attemptId } = await runOn(h, buyer, agent, label, { maxPricePerGpuHour: 3 * USDC });
    const line = (seq: number): LogEntry => ({ seq, stream: 'stdout', data: `${String(seq).padStart(4, '0')}${'z'.repeat(50_000)}\n`, at: Date.now() });
    for (let b = 0; b < 4; b++) assert.equal((await agent.logs(attemptId, Array.from({ length: 5 }, (_, i) => line(b * 5 + i)))).status, 200);
    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
    const seqs: number[] = [];
    let after = -1;
    for (let n = 0; n < 50; n++) {
      const page = JobLogsResponse.parse((await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${after}&limit=5000`, { token: buyer })).body);
      const bytes = page.entries.reduce((s, e) => s + Buffer.byteLength(e.data), 0);
      assert.ok(bytes <= 256 * 1024, `page of ${bytes} bytes`);
      seqs.push(...page.entries.map((e) => e.seq));
      after = page.next;
      if (page.done) break;
    }
    assert.deepEqual(
      seqs,
      Array.from({ length: 20 }, (_, i) => i),
    );
  });

  test('log long-polls past the per-token cap and work polls past the per-node cap are 429 LIMIT_EXCEEDED', async () => {
    const { agent: node, label } = await stakedNode();
    const { jobId, attemptId } = await runOn(h, buyer, node, label, { maxPricePerGpuHour: 3 * USDC });
    const poll = () => call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=20000`, { token: buyer });
    const parked = [poll(), poll(), poll()];
    const refused = await waitFor(async () => {
      // A probe that gets a slot returns at once (waitMs=1); the three may still be on their way in.
      const r = await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=1`, { token: buyer });
      return r.status === 429 ? r : undefined;
    }, 'a fourth long-poll to be refused');
    assert.equal(refused.body.error.code, 'LIMIT_EXCEEDED');
    assert.match(refused.body.error.message, /3 log long-polls \(the limit\)/);
    const plain = await call(h.url, 'GET', `/v1/jobs/${jobId}/logs`, { token: buyer });
    assert.equal(plain.status, 200, 'a read without waitMs is not a long-poll');
    const other = await h.buyer();
    assert.equal((await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=10`, { token: other })).status, 404, 'the cap is per token; another buyer still cannot see the job');

    // An append wakes them, the slots come back.
    assert.equal((await node.logs(attemptId, [{ seq: 0, stream: 'stdout', data: 'wake\n', at: Date.now() }])).status, 200);
    for (const r of await Promise.all(parked)) assert.equal(r.status, 200);
    assert.equal((await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${Number.MAX_SAFE_INTEGER}&waitMs=10`, { token: buyer })).status, 200);

    const w1 = node.work(3000);
    const w2 = node.work(3000);
    const w3 = await waitFor(async () => {
      const r = await node.work(1);
      return r.status === 429 ? r : undefined;
    }, 'a third work poll to be refused');
    assert.equal(w3.body.error.code, 'LIMIT_EXCEEDED');
    assert.match(w3.body.error.message, /2 work long-polls/);
    assert.equal((await w1).status, 200);
    assert.equal((await w2).status, 200);
    assert.equal((await node.work(0)).status, 200, 'slots come back');
    assert.equal((await node.result(attemptId, report('succeeded'))).status, 200);
  });

  test('long-polls whose client hung up give their slots back at once', async () => {
    const { agent: node, label } = await stakedNode();
    const { jobId, attemptId } = await runOn(h, buyer, node, label, { maxPricePerGpuHour: 3 * USDC });
    const url = `${h.url}/v1/jobs/${jobId}/logs?waitMs=25000`;
    const aborts = Array.from({ length: 3 }, () => new AbortController());
    const polls = aborts.map((c) => fetch(url, { headers: { authorization: `Bearer ${buyer}` }, signal: c.signal }).catch(() => 'aborted'));
    const probe = () => call(h.url, 'GET', `/v1/jobs/${jobId}/logs?waitMs=1`, { token: buyer });
    await waitFor(async () => (await probe()).status === 429, 'the three to hold every slot');
    for (const c of aborts) c.abort();
    assert.deepEqual(await Promise.all(polls), ['aborted', 'aborted', 'aborted']);
    const again = await waitFor(async () => {
      const r = await probe();
      return r.status === 200 ? r : undefined;
    }, 'the slots to come back long before the polls would have timed out', 10_000);
    assert.equal(again.status, 200);
    assert.equal((await node.result(attemptId, report('succeeded'))).status, 200);
  });
});

describe('abuse: long-poll amplification', () => {
  let h: Harness;
  let store: Store;
  const reads = { logs: 0 };

  before(async () => {
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const inner = await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'gpux-amp-')), 'c.db')}`);
    store = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'readLogs') {
          return (...args: Parameters<Store['readLogs']>) => {
            reads.logs++;
            return target.readLogs(...args);
          };
        }
        return Reflect.get(target, prop, receiver);
      },
    });
    h = await startHarness({ logPollsPerToken: 1000 }, { store });
  });
  after(async () => {
    await h.close();
    await store.close();
  });

  test('N waiters woken by one append share one store read (200 waiters, 3 appends)', async () => {
    const buyer = await h.buyer();
    const { agent, jobId, attemptId } = await running(h, buyer);
    const N = 200;
    let after = -1;
    for (let round = 0; round < 3; round++) {
      const polls = Array.from({ length: N }, () => call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${after}&waitMs=20000`, { token: buyer }));
      // Parked: every poll has made its first read and the count stops moving.
      let last = -1;
      await waitFor(async () => {
        const now = reads.logs;
        const stable = now === last;
        last = now;
        if (!stable) await new Promise((r) => setTimeout(r, 150));
        return stable && now > 0;
      }, 'the polls to park');
      await new Promise((r) => setTimeout(r, 300));
      reads.logs = 0;
      const res = await agent.logs(attemptId, [{ seq: round, stream: 'stdout', data: `line ${round}\n`, at: Date.now() }]);
      assert.equal(res.status, 200);
      const answers = await Promise.all(polls);
      for (const a of answers) {
        assert.equal(a.status, 200);
        assert.deepEqual(
          a.body.entries.map((e: { data: string }) => e.data),
          [`line ${round}\n`],
        );
      }
      // Without sharing this is N reads per append; a straggler or two may read on its own.
      assert.ok(reads.logs <= 10, `round ${round}: ${reads.logs} store reads for ${N} waiters`);
      after = answers[0]!.body.next;
    }
    assert.equal((await agent.result(attemptId, report('succeeded'))).status, 200);
  });
});
