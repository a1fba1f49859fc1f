/**
 * Fuzzing the request schemas (issue 10): arbitrary JSON, mutated near-valid bodies (huge numbers, -0,
 * Infinity through 1e400, deep nesting, unicode, prototype keys), malformed bytes and wrong content types,
 * and odd query strings, against a real coordinator (SQLite, market on). POST /v1/jobs with a buyer token;
 * every signed agent route signed correctly by a registered TestAgent. Whatever comes in: never a 5xx, an
 * error body always has a code, and /healthz still answers. Runs are bounded (GPUX_FUZZ_RUNS scales them;
 * a failure prints fast-check's seed, GPUX_FUZZ_SEED replays it).
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, test } from 'node:test';
import { signRequest, WorkResponse } from '@gpux/protocol';
import fc from 'fast-check';
import { call, gpuAd, type Harness, type Res, report, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const SCALE = Number(process.env.GPUX_FUZZ_RUNS ?? 1);
const runs = (n: number) => ({ numRuns: Math.max(1, Math.round(n * SCALE)), ...(process.env.GPUX_FUZZ_SEED ? { seed: Number(process.env.GPUX_FUZZ_SEED) } : {}) });
const USDC = 1_000_000;

/** A raw JSON token to splice in where JSON.stringify cannot write it (-0, 1e400, …). */
const RAW = '\u0001raw:';
const raw = (token: string) => `${RAW}${token}`;
/** JSON text of `v`, with raw(...) strings replaced by their bare tokens. */
function toJson(v: unknown): string {
  return (JSON.stringify(v) ?? 'null').replace(/"\\u0001raw:([^"]*)"/g, '$1');
}

const deep = (depth: number, open: string, close: string, leaf = '1') => open.repeat(depth) + leaf + close.repeat(depth);

/** Values that have broken parsers and arithmetic before. */
const nasty: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    raw('-0'),
    raw('1e400'),
    raw('-1e400'),
    raw('1e-400'),
    raw('123456789012345678901234567890'),
    raw(deep(2000, '[', ']')),
    raw(deep(2000, '{"a":', '}')),
    2 ** 31,
    2 ** 32,
    Number.MAX_SAFE_INTEGER,
    2 ** 53,
    2 ** 53 + 2,
    -(2 ** 63),
    Number.MAX_VALUE,
    Number.MIN_VALUE,
    1e21,
    0.1,
    -1,
    'NaN',
    'Infinity',
    '-0',
    '',
    '\u0000',
    '\ud800',
    '𝕏'.repeat(300),
    'é'.repeat(40_000),
    '../../etc/passwd',
    '__proto__',
    'constructor',
    { __proto__: null, polluted: true },
    JSON.parse('{"__proto__": {"polluted": true}}'),
    { constructor: { prototype: { polluted: true } } },
    [],
    {},
    null,
    true,
  ),
  fc.jsonValue({ maxDepth: 4 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.string({ unit: 'binary', maxLength: 64 }),
);

/** Set `v` at `path` inside a clone of `base` (creating objects on the way). */
function mutate(base: unknown, path: readonly (string | number)[], v: unknown): unknown {
  const root = structuredClone(base) as Record<string | number, unknown>;
  let o = root;
  for (const k of path.slice(0, -1)) {
    const next = o[k];
    if (next === null || typeof next !== 'object') o[k] = {};
    o = o[k] as Record<string | number, unknown>;
  }
  const last = path.at(-1) as string | number;
  if (last === '__proto__') Object.defineProperty(o, last, { value: v, enumerable: true, configurable: true, writable: true });
  else o[last] = v;
  return root;
}

/** A near-valid body: `base` with one to three fields (from `paths`) set to nasty values, or a key added. */
function nearValid(base: unknown, paths: readonly (readonly (string | number)[])[]): fc.Arbitrary<unknown> {
  const one = fc.tuple(fc.constantFrom(...paths, ['__proto__'], ['constructor'], ['extra']), nasty);
  return fc.array(one, { minLength: 1, maxLength: 3 }).map((ms) => ms.reduce((b, [p, v]) => mutate(b, p, v), base));
}

const SPEC_PATHS: (string | number)[][] = [
  ['name'],
  ['image'],
  ['command'],
  ['command', 0],
  ['args'],
  ['args', 0],
  ['env'],
  ['env', 'A'],
  ['env', '__proto__'],
  ['resources'],
  ['resources', 'gpu'],
  ['resources', 'gpu', 'count'],
  ['resources', 'gpu', 'models'],
  ['resources', 'gpu', 'minVramGb'],
  ['resources', 'gpu', 'vendor'],
  ['resources', 'cpuCores'],
  ['resources', 'memoryGb'],
  ['inputs'],
  ['inputs', 0, 'path'],
  ['inputs', 0, 'content'],
  ['inputs', 0, 'encoding'],
  ['timeoutSeconds'],
  ['queueTimeoutSeconds'],
  ['maxRetries'],
  ['network'],
  ['labels'],
  ['labels', 'team'],
  ['constraints'],
  ['constraints', 'region'],
  ['constraints', 'nodeLabels'],
  ['constraints', 'nodeLabels', '__proto__'],
  ['constraints', 'minTrustTier'],
  ['priority'],
  ['nodes'],
  ['maxPricePerGpuHour'],
  ['asset'],
];

const VALID_SPEC = spec({
  resources: { gpu: { count: 1, models: ['H100'] }, cpuCores: 1 },
  inputs: [{ path: 'in.txt', content: 'aGk=', encoding: 'base64' }],
  labels: { team: 'a' },
  constraints: { region: 'eu' },
  timeoutSeconds: 60,
  maxPricePerGpuHour: 2 * USDC,
});

describe('fuzz: no 5xx for any input', () => {
  let h: Harness;
  let buyer: string;
  let agent: TestAgent;
  let attemptId: string;

  before(async () => {
    h = await startHarness({ market: true, devMint: true, maxQueuedPerBuyer: 1_000_000 });
    buyer = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 1_000_000 * USDC } })).status, 201);
    agent = new TestAgent(h.url, gpuAd('fuzz-box', 1));
    assert.equal((await agent.register()).status, 200);
    // One running attempt on the agent (staked by the harness's provider), so its attempt routes have a real target.
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: h.provider, body: { amount: 1000 * USDC } })).status, 201);
    const stake = await call(h.url, 'POST', `/v1/nodes/${agent.nodeId}/stake`, { token: h.provider, body: { amount: 500 * USDC } });
    assert.equal(stake.status, 200, JSON.stringify(stake.body));
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: 3600, maxPricePerGpuHour: 5 * USDC }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const work = await waitFor(async () => {
      const w = WorkResponse.parse((await agent.work(500)).body);
      return w.assignments.length ? w : undefined;
    }, 'an assignment');
    attemptId = work.assignments[0]?.attemptId as string;
    assert.equal((await agent.start(attemptId)).status, 200);
  });
  after(() => h?.close());
  afterEach(async () => {
    const hz = await call(h.url, 'GET', '/healthz');
    assert.equal(hz.status, 200, 'the coordinator still answers /healthz');
  });

  function ok(res: Res, what: string): void {
    const show = () => `${what} → ${res.status} ${typeof res.body === 'string' ? res.body.slice(0, 300) : JSON.stringify(res.body).slice(0, 300)}`;
    assert.ok(res.status < 500, show());
    if (res.status >= 400) assert.equal(typeof res.body?.error?.code, 'string', show());
  }

  const submitRaw = (text: string) => call(h.url, 'POST', '/v1/jobs', { token: buyer, raw: text });

  test('POST /v1/jobs: arbitrary JSON, as the body or as its spec', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue({ maxDepth: 6 }), nasty), fc.boolean(), async (v, wrap) => {
        const text = toJson(wrap ? { spec: v } : v);
        ok(await submitRaw(text), `body ${text.slice(0, 200)}`);
      }),
      runs(120),
    );
  });

  test('POST /v1/jobs: near-valid specs with one to three fields set to nasty values', async () => {
    await fc.assert(
      fc.asyncProperty(nearValid(VALID_SPEC, SPEC_PATHS), async (s) => {
        const text = toJson({ spec: s });
        ok(await submitRaw(text), `spec ${text.slice(0, 300)}`);
      }),
      runs(250),
    );
  });

  test('POST /v1/jobs: odd Idempotency-Key headers', async () => {
    // Latin-1 without DEL: what fetch lets a client put in a header at all.
    const latin1 = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.integer({ min: 0x80, max: 0xff })).map((c) => String.fromCharCode(c));
    const key = fc.oneof(fc.string({ unit: latin1, maxLength: 300 }), fc.constantFrom('', ' ', 'k'.repeat(5000), '\u00ff'.repeat(64)));
    await fc.assert(
      fc.asyncProperty(key, async (k) => {
        const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: VALID_SPEC }, headers: { 'idempotency-key': k } });
        ok(res, `key ${JSON.stringify(k.slice(0, 80))}`);
      }),
      runs(40),
    );
  });

  test('path parameters: odd ids on every route that takes one', async () => {
    const id = fc.oneof(fc.string({ maxLength: 60 }), fc.constantFrom('..', '.', '%2e%2e', 'job-'.padEnd(5000, 'x'), '\u0000', '\ud800', ' ', '__proto__', 'constructor'));
    const buyerPaths = ['', '/logs', '/explain', '/result', '/bill'];
    await fc.assert(
      fc.asyncProperty(id, fc.constantFrom(...buyerPaths, 'cancel', 'node', 'cordon', 'stake', 'start'), async (raw, what) => {
        const enc = encodeURIComponent(raw.replace(/[\ud800-\udfff]/g, '?'));
        let res: Res;
        if (what === 'cancel') res = await call(h.url, 'POST', `/v1/jobs/${enc}/cancel`, { token: buyer });
        else if (what === 'node') res = await call(h.url, 'GET', `/v1/nodes/${enc}`, { token: h.operator });
        else if (what === 'cordon') res = await call(h.url, 'POST', `/v1/nodes/${enc}/cordon`, { token: h.operator });
        else if (what === 'stake') res = await call(h.url, 'GET', `/v1/nodes/${enc}/stake`, { token: buyer });
        else if (what === 'start') res = await signed('POST', `/v1/agent/attempts/${enc}/start`, '');
        else res = await call(h.url, 'GET', `/v1/jobs/${enc}${what}`, { token: buyer });
        ok(res, `${what} ${enc.slice(0, 100)}`);
      }),
      runs(120),
    );
  });

  test('POST /v1/jobs: malformed bytes, wrong content types, odd encodings', async () => {
    const bodies = fc.oneof(
      fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
      fc.string({ maxLength: 200 }).map((s) => Buffer.from(s)),
      fc.constantFrom(
        Buffer.from(`\ufeff${JSON.stringify({ spec: VALID_SPEC })}`),
        Buffer.from('{"spec": {"name": "a"'),
        Buffer.from('{"spec": {"name": "\\ud800", "image": "x", "command": ["\\u0000"]}}'),
        Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]),
        Buffer.from('{"spec": 1, "spec": {"__proto__": {"x": 1}}}'),
        Buffer.from(deep(100_000, '[', ']')),
        Buffer.from(''),
      ),
    );
    const types = fc.constantFrom(
      'application/json',
      'application/json; charset=latin1',
      'application/json; charset=utf-16',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      'APPLICATION/JSON',
      '',
    );
    await fc.assert(
      fc.asyncProperty(bodies, types, async (body, type) => {
        const res = await call(h.url, 'POST', '/v1/jobs', { token: buyer, raw: body, headers: type ? { 'content-type': type } : {} });
        ok(res, `${type}: ${body.subarray(0, 80).toString('hex')}`);
      }),
      runs(120),
    );
  });

  /** Signed agent routes with a body, and a valid body of each to mutate. */
  const agentRoutes = () => {
    const now = Date.now();
    return [
      { path: '/v1/agent/register', base: { publicKey: agent.keys.publicKey, advertisement: agent.ad, enrollmentToken: agent.enrollmentToken } },
      { path: '/v1/agent/heartbeat', base: { activeAttemptIds: [attemptId], rttMs: 3 } },
      { path: `/v1/agent/attempts/${attemptId}/logs`, base: { entries: [{ seq: 0, stream: 'stdout', data: 'hi', at: now }] } },
      { path: `/v1/agent/attempts/${attemptId}/events`, base: { events: [{ type: 'image.pull.progress', at: now, data: { layersDone: 1, layers: 2 } }] } },
      { path: `/v1/agent/attempts/${attemptId}/result`, base: { ...report('failed', {}, 3), outcome: 'failed' } },
      { path: `/v1/agent/attempts/${attemptId}/start`, base: undefined },
      { path: '/v1/agent/attempts/att-unknown/logs', base: { entries: [{ seq: 0, stream: 'stdout', data: 'hi', at: now }] } },
      // Issues 13 and 19: refusals, output and checkpoint uploads, the encrypted job's output key.
      { path: `/v1/agent/attempts/${attemptId}/refuse`, base: { reason: 'the seal did not verify' } },
      { path: `/v1/agent/attempts/${attemptId}/outputs`, base: { path: 'out.bin', sha256: 'a'.repeat(64), size: 10 } },
      { path: `/v1/agent/attempts/${attemptId}/checkpoints`, base: { sha256: 'b'.repeat(64), size: 10 } },
      { path: `/v1/agent/attempts/${attemptId}/output-key`, base: { wrappedKey: `${'A'.repeat(107)}=` } },
      // Issue 14: the work exchange. Its near-valid bodies carry a start or waitMs 0, so each is answered at once.
      { path: '/v1/agent/work', base: { waitMs: 0, started: [attemptId] }, longPoll: true },
    ];
  };
  /** Arbitrary bodies: not the exchange, where `{}` is a valid 25 s long-poll. */
  const noLongPolls = () => agentRoutes().filter((r) => !('longPoll' in r));
  const AGENT_PATHS: (string | number)[][] = [
    ['publicKey'],
    ['advertisement'],
    ['advertisement', 'cpuCores'],
    ['advertisement', 'memoryMb'],
    ['advertisement', 'gpus'],
    ['advertisement', 'gpus', 0, 'vramMb'],
    ['advertisement', 'gpus', 0, 'uuid'],
    ['advertisement', 'hostname'],
    ['advertisement', 'labels'],
    ['enrollmentToken'],
    ['activeAttemptIds'],
    ['activeAttemptIds', 0],
    ['rttMs'],
    ['entries'],
    ['entries', 0, 'seq'],
    ['entries', 0, 'data'],
    ['entries', 0, 'at'],
    ['entries', 0, 'stream'],
    ['reason'],
    ['path'],
    ['sha256'],
    ['size'],
    ['wrappedKey'],
    ['events'],
    ['events', 0, 'type'],
    ['events', 0, 'at'],
    ['events', 0, 'data'],
    ['events', 0, 'data', 'layers'],
    ['outcome'],
    ['exitCode'],
    ['error'],
    ['outputDigest'],
    ['outputs'],
    ['outputs', 0],
    ['outputs', 0, 'path'],
    ['outputs', 0, 'size'],
    ['outputs', 0, 'content'],
    ['metrics'],
    ['metrics', 'durationMs'],
    ['waitMs'],
    ['started'],
    ['started', 0],
  ];

  /** Send `text` signed correctly by the agent (the signature covers exactly these bytes). */
  function signed(method: 'GET' | 'POST', path: string, text: string, headers: Record<string, string> = {}) {
    const sig = signRequest({ method, path, body: text, nodeId: agent.nodeId }, agent.keys.privateKeyPem);
    return call(h.url, method, path, { headers: { ...sig, ...headers }, ...(text !== '' ? { raw: text } : {}) });
  }

  test('signed agent routes: arbitrary JSON bodies', async () => {
    const routes = noLongPolls();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), fc.oneof(fc.jsonValue({ maxDepth: 6 }), nasty), async (r, v) => {
        const text = toJson(v);
        ok(await signed('POST', r.path, text), `${r.path} ${text.slice(0, 200)}`);
      }),
      runs(150),
    );
  });

  test('signed agent routes: near-valid bodies with nasty fields', async () => {
    const routes = agentRoutes().filter((r) => r.base !== undefined);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes).chain((r) => fc.tuple(fc.constant(r), nearValid(r.base, AGENT_PATHS))), async ([r, body]) => {
        const text = toJson(body);
        ok(await signed('POST', r.path, text), `${r.path} ${text.slice(0, 300)}`);
      }),
      runs(250),
    );
  });

  test('signed agent routes: malformed bytes and content types, signed as sent', async () => {
    const routes = noLongPolls();
    const texts = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc.constantFrom('{', '{"entries": [', deep(50_000, '[', ']'), '\ufeff{}', 'null', '"x"', '[]', `{"events": [{"type": "image.pull.progress", "at": 1, "data": ${deep(5000, '{"a":', '}')}}]}`),
    );
    const types = fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-16', '');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), texts, types, async (r, text, type) => {
        ok(await signed('POST', r.path, text, type ? { 'content-type': type } : {}), `${r.path} ${type} ${JSON.stringify(text.slice(0, 100))}`);
      }),
      runs(120),
    );
  });

  test('other JSON routes (money, asks, stake, enrollments, tokens, payouts): arbitrary and near-valid bodies', async () => {
    const other = await h.buyer();
    const routes = [
      { path: '/v1/wallet/deposits', token: other, base: { amount: 1000, asset: 'usdc' } },
      { path: '/v1/wallet/withdrawals', token: other, base: { amount: 10, destination: 'iban:DE00' } },
      { path: '/v1/market/asks', token: h.provider, base: { class: 'nvidia-h100-80gb', pricePerGpuHour: 100 } },
      { path: `/v1/nodes/${agent.nodeId}/stake`, token: h.provider, base: { amount: 1 } },
      { path: `/v1/nodes/${agent.nodeId}/unstake`, token: h.provider, base: { amount: 1 } },
      { path: '/v1/enrollments', token: other, base: { name: 'fuzz', maxNodes: 2, expiresInSeconds: 3600 } },
      { path: '/v1/enrollments/enr-unknown/revoke', token: other, base: { removeNodes: false } },
      { path: '/v1/tokens', token: h.operator, base: { role: 'buyer', name: 'fuzz' } },
      { path: '/v1/payouts/pay-unknown/complete', token: h.operator, base: { reference: 'r' } },
      { path: '/v1/payouts/pay-unknown/reject', token: h.operator, base: { reason: 'r' } },
    ];
    const paths: (string | number)[][] = [['amount'], ['asset'], ['destination'], ['class'], ['pricePerGpuHour'], ['name'], ['maxNodes'], ['expiresInSeconds'], ['accountId'], ['removeNodes'], ['role'], ['reference'], ['reason']];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes).chain((r) => fc.tuple(fc.constant(r), fc.oneof(nearValid(r.base, paths), fc.jsonValue({ maxDepth: 4 }), nasty))),
        async ([r, body]) => {
          const text = toJson(body);
          ok(await call(h.url, 'POST', r.path, { token: r.token, raw: text }), `${r.path} ${text.slice(0, 200)}`);
        },
      ),
      runs(200),
    );
  });

  test('after all of it the ledger still balances', async () => {
    const t = await call(h.url, 'GET', '/v1/treasury', { token: h.operator });
    assert.equal(t.status, 200);
    for (const a of t.body.assets as { asset: string; balanced: boolean }[]) assert.equal(a.balanced, true, `${a.asset} balances`);
  });

  test('query strings: odd values on every route that reads one', async () => {
    const value = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.constantFrom('-1', '1e309', 'NaN', '0x10', '99999999999999999999999', '0.5', '', '%00', '[]', '{}', '\ud800', 'é'.repeat(3000), 'queued,running', 'bogus'),
    );
    const buyerRoutes = ['/v1/jobs', `/v1/jobs/${attemptId}`, '/v1/jobs/job-x/logs', '/v1/wallet/history', '/v1/market/history', '/v1/wallet/payouts', '/v1/tokens', '/v1/enrollments'];
    const keys = fc.constantFrom('state', 'limit', 'cursor', 'after', 'eventsBefore', 'asset', 'class', 'jobId', 'account', 'waitMs', '__proto__', 'constructor');
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...buyerRoutes, '/v1/ledger', '/v1/nodes', '/v1/payouts'), fc.array(fc.tuple(keys, value), { maxLength: 4 }), async (path, params) => {
        // A positive waitMs long-polls: keep it short so the run stays bounded.
        const q = params.map(([k, v]) => [k, k === 'waitMs' && Number(v) > 0 ? '1' : v] as const);
        const qs = q.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v.replace(/[\ud800-\udfff]/g, '?'))}`).join('&');
        const token = ['/v1/ledger', '/v1/nodes', '/v1/payouts'].includes(path) ? h.operator : buyer;
        ok(await call(h.url, 'GET', `${path}?${qs}`, { token }), `${path}?${qs}`);
      }),
      runs(150),
    );
    await fc.assert(
      fc.asyncProperty(value, async (v) => {
        const w = Number(v) > 0 ? '1' : v;
        const path = `/v1/agent/work?waitMs=${encodeURIComponent(w.replace(/[\ud800-\udfff]/g, '?'))}`;
        ok(await signed('GET', path, ''), path);
      }),
      runs(60),
    );
  });
});
