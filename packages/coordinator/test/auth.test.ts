/** Bearer tokens: missing or wrong → 401; buyers see only their own jobs (404 for others'); operators see all. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CreateTokenResponse, WhoAmIResponse } from '@gpux/protocol';
import { call, type Harness, spec, startHarness } from './helpers.js';

describe('bearer auth', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h.close());

  test('missing, malformed or unknown tokens get 401 UNAUTHORIZED', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic abc' }, { authorization: 'Bearer nope' }, { authorization: `Bearer gpux_${'A'.repeat(43)}` }]) {
      const r = await call(h.url, 'GET', '/v1/jobs', { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.equal(r.body.error.code, 'UNAUTHORIZED');
    }
    const sub = await call(h.url, 'POST', '/v1/jobs', { body: { spec: spec() } });
    assert.equal(sub.status, 401);
    assert.equal((await h.coord.store.listJobs({ limit: 10 })).items.length, 0, 'nothing stored');
  });

  test('tokens are stored as hashes only', async () => {
    const buyer = await h.buyer();
    const who = WhoAmIResponse.parse((await call(h.url, 'GET', '/v1/whoami', { token: buyer })).body);
    assert.equal(who.role, 'buyer');
    assert.match(who.accountId, /^acct-/);
    assert.equal(await h.coord.store.findTokenByHash(buyer), undefined);
  });

  test('operators create tokens; buyers may not (403)', async () => {
    const buyer = await h.buyer();
    const denied = await call(h.url, 'POST', '/v1/tokens', { token: buyer, body: { role: 'buyer', name: 'x' } });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.error.code, 'FORBIDDEN');
    const made = await call(h.url, 'POST', '/v1/tokens', { token: h.operator, body: { role: 'buyer', name: 'alice' } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const t = CreateTokenResponse.parse(made.body);
    assert.match(t.token, /^gpux_[A-Za-z0-9_-]{43}$/);
    const who = WhoAmIResponse.parse((await call(h.url, 'GET', '/v1/whoami', { token: t.token })).body);
    assert.deepEqual(who, { accountId: t.accountId, role: 'buyer', tokenId: t.id });
    const bad = await call(h.url, 'POST', '/v1/tokens', { token: h.operator, body: { role: 'admin', name: '' } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'REQUEST_INVALID');
    assert.deepEqual(bad.body.error.problems.map((p: { path: string }) => p.path).sort(), ['name', 'role']);
  });

  test("a buyer cannot see or touch another buyer's job; the operator sees all", async () => {
    const alice = await h.buyer();
    const bob = await h.buyer();
    const job = (await call(h.url, 'POST', '/v1/jobs', { token: alice, body: { spec: spec() } })).body.job;
    for (const [m, p] of [
      ['GET', `/v1/jobs/${job.id}`],
      ['GET', `/v1/jobs/${job.id}/logs`],
      ['GET', `/v1/jobs/${job.id}/result`],
      ['POST', `/v1/jobs/${job.id}/cancel`],
    ] as const) {
      const r = await call(h.url, m, p, { token: bob });
      assert.equal(r.status, 404, `${m} ${p}`);
      assert.equal(r.body.error.code, 'JOB_NOT_FOUND');
    }
    assert.equal((await h.coord.store.getJob(job.id))?.cancelRequested, false, 'bob could not cancel it');
    const bobs = await call(h.url, 'GET', '/v1/jobs', { token: bob });
    assert.deepEqual(bobs.body.jobs, []);
    const alices = await call(h.url, 'GET', '/v1/jobs', { token: alice });
    assert.deepEqual(alices.body.jobs.map((j: { id: string }) => j.id), [job.id]);
    const op = await call(h.url, 'GET', `/v1/jobs/${job.id}`, { token: h.operator });
    assert.equal(op.status, 200);
    const all = await call(h.url, 'GET', '/v1/jobs', { token: h.operator });
    assert.ok(all.body.jobs.some((j: { id: string }) => j.id === job.id));
  });

  test('operator routes refuse buyer tokens', async () => {
    const buyer = await h.buyer();
    const r = await call(h.url, 'GET', '/v1/nodes', { token: buyer });
    assert.equal(r.status, 403);
    assert.equal((await call(h.url, 'GET', '/v1/nodes', { token: h.operator })).status, 200);
  });
});
