/** Buyer API input handling: spec validation with every problem, idempotency, 404s, body limits, listing. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ListJobsResponse } from '@gpux/protocol';
import { call, type Harness, spec, startHarness } from './helpers.js';

describe('jobs API', () => {
  let h: Harness;
  let buyer: string;
  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
  });
  after(() => h.close());

  const stored = async () => (await h.coord.store.listJobs({ limit: 100 })).items.length;

  test('a bad spec: 400 SPEC_INVALID with every problem, paths relative to the spec; nothing stored', async () => {
    const bad = { name: '', image: 'x', command: [], resources: { gpu: { count: -1, colour: 'red' } }, inputs: [{ path: '../etc/passwd', content: '' }] };
    const r = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: bad } });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error.code, 'SPEC_INVALID');
    const paths = r.body.error.problems.map((p: { path: string }) => p.path);
    for (const p of ['name', 'command', 'resources.gpu.count', 'resources.gpu', 'inputs.0.path']) assert.ok(paths.includes(p), `${p} in ${paths}`);
    assert.equal(await stored(), 0);
  });

  test('a body that is not { spec }: 400 REQUEST_INVALID; invalid JSON: 400; wrong content type: 400', async () => {
    const a = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec(), extra: 1 } });
    assert.equal(a.status, 400);
    assert.equal(a.body.error.code, 'REQUEST_INVALID');
    const b = await call(h.url, 'POST', '/v1/jobs', { token: buyer, raw: '{"spec": ' });
    assert.equal(b.status, 400);
    assert.equal(b.body.error.code, 'REQUEST_INVALID');
    const c = await call(h.url, 'POST', '/v1/jobs', { token: buyer, raw: 'name: x', headers: { 'content-type': 'text/yaml' } });
    assert.equal(c.status, 400);
    assert.equal(c.body.error.code, 'REQUEST_INVALID');
    const d = await call(h.url, 'POST', '/v1/jobs', { token: buyer });
    assert.equal(d.status, 400);
    assert.equal(await stored(), 0);
  });

  test('a 5 MiB body: 413 BODY_TOO_LARGE', async () => {
    const big = spec({ env: { BLOB: 'x'.repeat(5 * 1024 * 1024) } });
    const r = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: big } });
    assert.equal(r.status, 413);
    assert.equal(r.body.error.code, 'BODY_TOO_LARGE');
    assert.equal(await stored(), 0);
  });

  test('idempotency: same key + same spec → same job (200, created=false); different spec → 409', async () => {
    const headers = { 'idempotency-key': 'order-42' };
    const first = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() }, headers });
    assert.equal(first.status, 201);
    assert.equal(first.body.created, true);
    // Defaults spelled out are the same spec.
    const again = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: { ...spec(), args: [], maxRetries: 3 } }, headers });
    assert.equal(again.status, 200, JSON.stringify(again.body));
    assert.equal(again.body.created, false);
    assert.equal(again.body.job.id, first.body.job.id);
    const other = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name: 'other' }) }, headers });
    assert.equal(other.status, 409);
    assert.equal(other.body.error.code, 'IDEMPOTENCY_KEY_REUSED');
    // Keys are per buyer.
    const someoneElse = await call(h.url, 'POST', '/v1/jobs', { token: await h.buyer(), body: { spec: spec() }, headers });
    assert.equal(someoneElse.status, 201);
    assert.notEqual(someoneElse.body.job.id, first.body.job.id);
  });

  test('unknown ids: 404 with the right code', async () => {
    for (const p of ['/v1/jobs/job-nope', '/v1/jobs/job-nope/logs', '/v1/jobs/job-nope/result']) {
      const r = await call(h.url, 'GET', p, { token: buyer });
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'JOB_NOT_FOUND');
    }
    const c = await call(h.url, 'POST', '/v1/jobs/job-nope/cancel', { token: buyer });
    assert.equal(c.body.error.code, 'JOB_NOT_FOUND');
    for (const p of ['/v1/nodes/n-nope', '/v1/nodes/n-nope/cordon', '/v1/nodes/n-nope/drain']) {
      const r = await call(h.url, p.endsWith('nope') ? 'GET' : 'POST', p, { token: h.operator });
      assert.equal(r.status, 404, p);
      assert.equal(r.body.error.code, 'NODE_NOT_FOUND');
    }
    const route = await call(h.url, 'GET', '/v1/nothing', { token: buyer });
    assert.equal(route.status, 404);
    assert.equal(route.body.error.code, 'NOT_FOUND');
  });

  test('cancel a queued job: cancelled at once', async () => {
    const job = (await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name: 'to-cancel' }) } })).body.job;
    const r = await call(h.url, 'POST', `/v1/jobs/${job.id}/cancel`, { token: buyer });
    assert.equal(r.status, 200);
    assert.equal(r.body.job.state, 'cancelled');
    const logs = await call(h.url, 'GET', `/v1/jobs/${job.id}/logs?waitMs=10000`, { token: buyer });
    assert.deepEqual(logs.body, { entries: [], next: -1, done: true }, 'a finished job does not long-poll');
    const res = await call(h.url, 'GET', `/v1/jobs/${job.id}/result`, { token: buyer });
    assert.equal(res.status, 409);
  });

  test('list: state filter, limit and cursor; bad query: 400', async () => {
    const mine = await h.buyer();
    for (let i = 0; i < 5; i++) await call(h.url, 'POST', '/v1/jobs', { token: mine, body: { spec: spec({ name: `j${i}` }) } });
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = `/v1/jobs?limit=2&state=queued,running${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = ListJobsResponse.parse((await call(h.url, 'GET', q, { token: mine })).body);
      ids.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor;
    } while (cursor);
    assert.equal(ids.length, 5);
    assert.equal(new Set(ids).size, 5);
    const none = await call(h.url, 'GET', '/v1/jobs?state=succeeded', { token: mine });
    assert.deepEqual(none.body.jobs, []);
    for (const q of ['state=sleeping', 'limit=0', 'limit=abc', 'state=queued,bogus']) {
      const r = await call(h.url, 'GET', `/v1/jobs?${q}`, { token: mine });
      assert.equal(r.status, 400, q);
      assert.equal(r.body.error.code, 'REQUEST_INVALID');
    }
  });
});
