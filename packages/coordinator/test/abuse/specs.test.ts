/**
 * Abuse suite, issue 10 item 7: huge specs and a flooded queue. Oversized command, args, env, labels or a
 * whole spec over MAX_SPEC_BYTES are 400 SPEC_INVALID naming the limit, with nothing stored; a buyer at
 * GPUX_MAX_QUEUED_PER_BUYER gets 429 LIMIT_EXCEEDED with nothing written or held (market on, funded buyer,
 * ledger balanced); operators are exempt. The scheduling pass reads only each spec's scheduling view, and
 * after a restart queued jobs still place and reach their node with the whole spec. Issue 16: thousands of
 * unknown keys get one bounded problem, keys escaped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type JobSpecInput, MAX_ARG_CHARS, MAX_ARGV_ENTRIES, MAX_ENV_VALUE_CHARS, MAX_ENV_VARS, MAX_LABELS, MAX_SPEC_BYTES, WorkResponse } from '@gpux/protocol';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const USDC = 1_000_000;

describe('abuse: huge specs', () => {
  let h: Harness;
  let buyer: string;

  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
  });
  after(() => h?.close());

  const submit = (s: unknown, token = buyer) => call(h.url, 'POST', '/v1/jobs', { token, body: { spec: s } });

  const cases: Array<[string, Partial<JobSpecInput>, RegExp, RegExp]> = [
    ['command entries', { command: Array(MAX_ARGV_ENTRIES + 1).fill('x') }, /^command$/, new RegExp(`${MAX_ARGV_ENTRIES}`)],
    ['one argument', { args: ['a'.repeat(MAX_ARG_CHARS + 1)] }, /^args\.0$/, new RegExp(`${MAX_ARG_CHARS}`)],
    ['args entries', { args: Array(MAX_ARGV_ENTRIES + 1).fill('x') }, /^args$/, new RegExp(`${MAX_ARGV_ENTRIES}`)],
    ['env variables', { env: Object.fromEntries(Array.from({ length: MAX_ENV_VARS + 1 }, (_, i) => [`V${i}`, 'x'])) }, /^env$/, new RegExp(`at most ${MAX_ENV_VARS}`)],
    ['one env value', { env: { BIG: 'v'.repeat(MAX_ENV_VALUE_CHARS + 1) } }, /^env\.BIG$/, new RegExp(`${MAX_ENV_VALUE_CHARS}`)],
    ['labels', { labels: Object.fromEntries(Array.from({ length: MAX_LABELS + 1 }, (_, i) => [`l${i}`, 'x'])) }, /^labels$/, new RegExp(`at most ${MAX_LABELS}`)],
    ['GPU models', { resources: { gpu: { count: 1, models: Array(17).fill('H100') } } }, /^resources\.gpu\.models$/, /16/],
    ['region', { constraints: { region: 'r'.repeat(129) } }, /^constraints\.region$/, /128/],
    // Every entry within its own bound, the whole over MAX_SPEC_BYTES: 9 arguments of 8 KiB.
    ['the whole spec', { args: Array(9).fill('a'.repeat(MAX_ARG_CHARS)) }, /^\(root\)$/, new RegExp(`the most is ${MAX_SPEC_BYTES}`)],
  ];
  for (const [what, over, path, limit] of cases) {
    test(`too many or too large: ${what} → 400 SPEC_INVALID naming the limit, nothing stored`, async () => {
      const res = await submit(spec(over));
      assert.equal(res.status, 400, JSON.stringify(res.body).slice(0, 500));
      assert.equal(res.body.error.code, 'SPEC_INVALID');
      const problem = res.body.error.problems.find((p: { path: string }) => path.test(p.path));
      assert.ok(problem, JSON.stringify(res.body.error.problems).slice(0, 500));
      assert.match(problem.message, limit);
      assert.deepEqual((await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs, []);
    });
  }

  test('issue 16: thousands of unknown keys get one bounded problem naming the first few, with a did-you-mean', async () => {
    const junk = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}-${'x'.repeat(30)}`, 1]));
    const res = await submit({ ...spec({}), imagee: 'x', ...junk, '\u001b[31mred': 1 });
    assert.equal(res.status, 400);
    assert.equal(res.body.error.code, 'SPEC_INVALID');
    const problems = res.body.error.problems as Array<{ path: string; message: string }>;
    assert.equal(problems.length, 1, JSON.stringify(problems).slice(0, 500));
    assert.match(problems[0]?.message ?? '', /^unknown key 'imagee' — did you mean 'image'\?; unknown keys 'k0-x+', 'k1-x+', 'k2-x+', 'k3-x+' — the keys here are name, image, command, /);
    assert.match(problems[0]?.message ?? '', /; and 4997 more unknown keys$/);
    assert.ok((problems[0]?.message.length ?? 0) < 2000, 'bounded');
    const odd = await submit({ '\u001b[31mred': 1, ...spec({}) });
    assert.equal(odd.status, 400);
    assert.match(odd.body.error.problems[0].message, /^unknown key "\\u001b\[31mred" — the keys here are /, 'a key is escaped, never echoed raw');
  });

  test('a spec of exactly MAX_SPEC_BYTES is accepted; inline inputs are counted apart (their own 1 MiB)', async () => {
    const base = spec({ args: [], inputs: [{ path: 'in.txt', content: 'i'.repeat(512 * 1024) }] });
    // The spec as stored (defaults in) is a little longer than what was sent: find the arg length that lands on the limit.
    let n = MAX_SPEC_BYTES - 1024;
    let res = await submit({ ...base, args: Array(8).fill('a'.repeat(MAX_ARG_CHARS)).map((a, i) => (i === 7 ? a.slice(0, n - 7 * MAX_ARG_CHARS) : a)) });
    while (res.status === 400 && n > MAX_SPEC_BYTES - 4096) {
      n -= 64;
      res = await submit({ ...base, args: Array(8).fill('a'.repeat(MAX_ARG_CHARS)).map((a, i) => (i === 7 ? a.slice(0, n - 7 * MAX_ARG_CHARS) : a)) });
    }
    assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300));
    const job = await call(h.url, 'GET', `/v1/jobs/${res.body.job.id}`, { token: buyer });
    assert.equal(job.body.job.spec.inputs[0].content.length, 512 * 1024, 'the inputs come back whole');
    await call(h.url, 'POST', `/v1/jobs/${res.body.job.id}/cancel`, { token: buyer });
  });
});

describe('abuse: queued jobs per buyer (market on)', () => {
  let h: Harness;
  let buyer: string;
  const LIMIT = 3;

  before(async () => {
    h = await startHarness({ market: true, devMint: true, maxQueuedPerBuyer: LIMIT });
    buyer = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 100 * USDC } })).status, 201);
  });
  after(() => h?.close());

  const job = () => spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 2 * USDC });
  const wallet = async (token: string) => (await call(h.url, 'GET', '/v1/wallet', { token })).body.balances.find((b: { asset: string }) => b.asset === 'usdc');

  test(`the ${LIMIT + 1}th queued job is 429 LIMIT_EXCEEDED with the limit and the count; nothing written or held; the ledger balances`, async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job() } })).status, 201);
    const before = await wallet(buyer);
    const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job() }, headers: { 'idempotency-key': 'over-the-limit' } });
    assert.equal(res.status, 429, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'LIMIT_EXCEEDED');
    assert.match(res.body.error.message, new RegExp(`${LIMIT} of your jobs are queued; the most one buyer may have queued is ${LIMIT}`));
    assert.match(res.body.error.problems[0].message, /GPUX_MAX_QUEUED_PER_BUYER/);
    assert.deepEqual(await wallet(buyer), before, 'nothing held');
    assert.equal((await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs.length, LIMIT, 'nothing written');
    const t = (await call(h.url, 'GET', '/v1/treasury', { token: h.operator })).body.assets.find((x: { asset: string }) => x.asset === 'usdc');
    assert.equal(t.balanced, true);
    // Another buyer is not affected, and a cancelled job frees a place.
    const other = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: other, body: { amount: 10 * USDC } })).status, 201);
    assert.equal((await call(h.url, 'POST', '/v1/jobs', { token: other, body: { spec: job() } })).status, 201);
    const first = (await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs[0].id;
    assert.equal((await call(h.url, 'POST', `/v1/jobs/${first}/cancel`, { token: buyer })).status, 200);
    assert.equal((await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job() } })).status, 201);
    assert.equal((await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job() } })).status, 429);
  });

  test('operators are exempt from the queued-jobs limit', async () => {
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: h.operator, body: { amount: 100 * USDC } })).status, 201);
    for (let i = 0; i < LIMIT + 2; i++) {
      const res = await call(h.url, 'POST', '/v1/jobs', { token: h.operator, body: { spec: job() } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
  });
});

describe('abuse: the pass reads the scheduling view; a restart keeps queued jobs whole', () => {
  let h: Harness;
  let buyer: string;

  before(async () => {
    h = await startHarness();
    buyer = await h.buyer();
  });
  after(() => h?.close());

  test('queued jobs submitted before a restart place after it, and the node gets each spec whole', async () => {
    const big = (i: number): JobSpecInput =>
      spec({
        name: `big-${i}`,
        command: ['sh', '-c', `echo ${i}`],
        args: Array(7).fill(`${i}`.padEnd(MAX_ARG_CHARS, 'a')),
        env: { SECRET: 's'.repeat(4096), N: `${i}` },
        labels: { n: `${i}` },
        inputs: [{ path: 'data/in.txt', content: `${i}`.padEnd(256 * 1024, 'z') }],
        resources: { gpu: { count: 1 } },
      });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: big(i) } });
      assert.equal(res.status, 201, JSON.stringify(res.body).slice(0, 300));
      ids.push(res.body.job.id);
    }
    await h.restart();
    // fetch's keep-alive pool may still hold sockets the old server closed: spend them on pings.
    for (let i = 0; i < 10; i++) await call(h.url, 'GET', '/healthz').catch(() => undefined);
    const agent = new TestAgent(h.url, gpuAd('big-box', 4));
    assert.equal((await agent.register()).status, 200);
    const work = await waitFor(async () => {
      const w = WorkResponse.parse((await agent.work(1000)).body);
      return w.assignments.length === 3 ? w : undefined;
    }, 'three assignments');
    for (const a of work.assignments) {
      const i = ids.indexOf(a.jobId);
      assert.ok(i >= 0);
      const want = big(i);
      assert.deepEqual([a.spec.command, a.spec.args, a.spec.env, a.spec.labels], [want.command, want.args, want.env, want.labels]);
      const content = (f: object | undefined) => (f && 'content' in f ? f.content : undefined);
      assert.equal(content(a.spec.inputs[0]), content(want.inputs?.[0]));
    }
  });
});
