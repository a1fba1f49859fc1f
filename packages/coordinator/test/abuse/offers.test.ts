/**
 * Abuse suite, issue 16: the offers query and the quote body are bounded and checked like every buyer input. A bad
 * limit, count, price, flag or GPU text is 400 REQUEST_INVALID naming the field; an oversized or malformed spec
 * is 400 SPEC_INVALID as on submit; an extra body key is refused; a burst of quotes writes nothing; a node's
 * enrollment token and no token are refused.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MAX_SPEC_BYTES, OFFERS_MAX_LIMIT } from '@gpux/protocol';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent } from '../helpers.js';

describe('abuse: offers and quotes', () => {
  let h: Harness;
  let buyer: string;

  before(async () => {
    h = await startHarness({ market: true, devMint: true });
    buyer = await h.buyer();
    assert.equal((await new TestAgent(h.url, gpuAd('abuse-offers', 2)).register()).status, 200);
  });
  after(() => h?.close());

  const badQueries: Array<[string, RegExp]> = [
    [`limit=${OFFERS_MAX_LIMIT + 1}`, /^limit$/],
    ['limit=0', /^limit$/],
    ['count=-1', /^count$/],
    ['count=1e9', /^count$/],
    ['maxPrice=1.5', /^maxPrice$/],
    ['maxPrice=-1', /^maxPrice$/],
    ['proven=yes', /^proven$/],
    ['all=2', /^all$/],
    [`gpu=${'h'.repeat(65)}`, /^gpu$/],
    ['gpu=%1b%5b2J', /^gpu$/],
    [`region=${'r'.repeat(129)}`, /^region$/],
  ];
  for (const [query, field] of badQueries) {
    test(`offers ?${query.slice(0, 40)}: 400 naming the field`, async () => {
      const res = await call(h.url, 'GET', `/v1/offers?${query}`, { token: buyer });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal(res.body.error.code, 'REQUEST_INVALID');
      assert.ok(
        res.body.error.problems.some((p: { path: string }) => field.test(p.path)),
        JSON.stringify(res.body.error),
      );
    });
  }

  test('quote: a spec over MAX_SPEC_BYTES or malformed is SPEC_INVALID; an extra body key is REQUEST_INVALID; nothing is written', async () => {
    const huge = await call(h.url, 'POST', '/v1/jobs/quote', { token: buyer, body: { spec: spec({ args: Array(9).fill('a'.repeat(8192)) }) } });
    assert.equal(huge.status, 400);
    assert.equal(huge.body.error.code, 'SPEC_INVALID');
    assert.match(JSON.stringify(huge.body.error), new RegExp(`${MAX_SPEC_BYTES}`));
    const junk = await call(h.url, 'POST', '/v1/jobs/quote', { token: buyer, body: { spec: { image: 7, resources: 'all' } } });
    assert.equal(junk.status, 400);
    assert.equal(junk.body.error.code, 'SPEC_INVALID');
    const extra = await call(h.url, 'POST', '/v1/jobs/quote', { token: buyer, body: { spec: spec(), submit: true } });
    assert.equal(extra.status, 400);
    assert.equal(extra.body.error.code, 'REQUEST_INVALID');
    const raw = await call(h.url, 'POST', '/v1/jobs/quote', { token: buyer, raw: '{"spec":', headers: { 'content-type': 'application/json' } });
    assert.equal(raw.status, 400);
  });

  test('a burst of quotes writes no job, hold or ledger row', async () => {
    const before = (await call(h.url, 'GET', '/v1/ledger?limit=500', { token: h.operator })).body.transfers.length;
    const answers = await Promise.all(Array.from({ length: 50 }, () => call(h.url, 'POST', '/v1/jobs/quote', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, maxPricePerGpuHour: 3_000_000 }) } })));
    assert.ok(answers.every((r) => r.status === 200));
    assert.equal((await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs.length, 0);
    assert.equal((await call(h.url, 'GET', '/v1/ledger?limit=500', { token: h.operator })).body.transfers.length, before);
    const wallet = (await call(h.url, 'GET', '/v1/wallet', { token: buyer })).body.balances;
    assert.ok(wallet.every((b: { inEscrow: number }) => b.inEscrow === 0));
  });

  test('no token, or a node enrollment token: refused', async () => {
    assert.equal((await call(h.url, 'GET', '/v1/offers')).status, 401);
    assert.equal((await call(h.url, 'POST', '/v1/jobs/quote', { body: { spec: spec() } })).status, 401);
    assert.equal((await call(h.url, 'GET', '/v1/offers', { token: h.enrollment })).status, 401);
  });
});
