/** GpuxClient against a canned node:http server: validation, error mapping, retries, log following. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { GpuxApiError, GpuxClient, GpuxConnectionError, GpuxResponseError } from '../src/index.js';
import { json, jobView, logEntry, startFakeServer } from './fake-server.js';

describe('GpuxClient responses', () => {
  test('validates a good response, applies schema defaults, sends the bearer token', async (t) => {
    const srv = await startFakeServer((req, res) => json(res, 200, { job: jobView({ id: req.url.pathname.split('/')[3] }), attempts: [], events: [] }));
    t.after(() => srv.close());
    const client = new GpuxClient({ url: `${srv.url}/`, token: 'tok-b' });
    const got = await client.getJob('job/1');
    assert.equal(got.job.id, 'job%2F1');
    assert.deepEqual(got.job.spec.args, [], 'spec defaults are applied by the schema');
    assert.equal(srv.requests[0]?.headers.authorization, 'Bearer tok-b');
    assert.equal(srv.requests[0]?.url.pathname, '/v1/jobs/job%2F1');
  });

  test('a response that breaks the schema is a GpuxResponseError with paths', async (t) => {
    const srv = await startFakeServer((_req, res) => json(res, 200, { job: jobView({ state: 'exploded' }), attempts: [] }));
    t.after(() => srv.close());
    const err = await new GpuxClient({ url: srv.url, token: 't' }).getJob('job-1').catch((e: unknown) => e);
    assert.ok(err instanceof GpuxResponseError);
    assert.equal(err.status, 200);
    const paths = err.problems.map((p) => p.path);
    assert.ok(paths.includes('job.state'), paths.join());
    assert.ok(paths.includes('events'), paths.join());
  });

  test('a non-JSON 200 is a GpuxResponseError', async (t) => {
    const srv = await startFakeServer((_req, res) => void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy</html>'));
    t.after(() => srv.close());
    await assert.rejects(new GpuxClient({ url: srv.url }).whoami(), (e: unknown) => e instanceof GpuxResponseError && /not JSON/.test(e.message));
  });

  test('query parameters are sent and undefined ones left out', async (t) => {
    const srv = await startFakeServer((_req, res) => json(res, 200, { jobs: [jobView()], nextCursor: null }));
    t.after(() => srv.close());
    const out = await new GpuxClient({ url: srv.url, token: 't' }).listJobs({ state: 'queued,running', limit: 5 });
    assert.equal(out.jobs.length, 1);
    const q = srv.requests[0]!.url.searchParams;
    assert.equal(q.get('state'), 'queued,running');
    assert.equal(q.get('limit'), '5');
    assert.equal(q.has('cursor'), false);
  });
});

describe('GpuxClient errors', () => {
  const routes: Record<string, [number, unknown]> = {
    '/v1/jobs': [400, { error: { code: 'SPEC_INVALID', message: 'the job spec is invalid', problems: [{ path: 'resources.gpu.count', message: 'too big' }] } }],
    '/v1/jobs/nope': [404, { error: { code: 'JOB_NOT_FOUND', message: 'job nope not found' } }],
    '/v1/whoami': [401, { error: { code: 'UNAUTHORIZED', message: 'missing or invalid bearer token' } }],
    '/v1/nodes': [502, '<html>bad gateway</html>'],
  };

  test('non-2xx bodies become GpuxApiError with status, code, message and problems', async (t) => {
    const srv = await startFakeServer((req, res) => {
      const [status, body] = routes[req.url.pathname] ?? [500, {}];
      if (typeof body === 'string') res.writeHead(status).end(body);
      else json(res, status, body);
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 'bad' });

    const e400 = await client.submitJob({ name: 'x', image: 'busybox', command: ['true'] }).catch((e: unknown) => e);
    assert.ok(e400 instanceof GpuxApiError);
    assert.equal(e400.status, 400);
    assert.equal(e400.code, 'SPEC_INVALID');
    assert.deepEqual(e400.problems, [{ path: 'resources.gpu.count', message: 'too big' }]);
    assert.equal(srv.requests.filter((r) => r.url.pathname === '/v1/jobs').length, 1, 'a 400 is not retried');

    const e404 = await client.getJob('nope').catch((e: unknown) => e);
    assert.ok(e404 instanceof GpuxApiError);
    assert.equal(e404.status, 404);
    assert.equal(e404.code, 'JOB_NOT_FOUND');
    assert.equal(e404.message, 'job nope not found');
    assert.deepEqual(e404.problems, []);

    const e401 = await client.whoami().catch((e: unknown) => e);
    assert.ok(e401 instanceof GpuxApiError);
    assert.equal(e401.code, 'UNAUTHORIZED');

    const e502 = await client.listNodes().catch((e: unknown) => e);
    assert.ok(e502 instanceof GpuxApiError);
    assert.equal(e502.code, 'INTERNAL');
    assert.match(e502.message, /HTTP 502.*bad gateway/);
  });

  test('an unreachable coordinator is a GpuxConnectionError naming the URL', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const url = `http://127.0.0.1:${port}`;
    const err = await new GpuxClient({ url, token: 't' }).listJobs().catch((e: unknown) => e);
    assert.ok(err instanceof GpuxConnectionError);
    assert.equal(err.url, url);
    assert.match(err.message, new RegExp(`^cannot reach the coordinator at ${url.replace(/\./g, '\\.')}: is it running\\?`));
  });

  test('a slow coordinator times out as a GpuxConnectionError', async (t) => {
    const srv = await startFakeServer(() => undefined); // never answers
    t.after(() => srv.close());
    const err = await new GpuxClient({ url: srv.url, timeoutMs: 200 }).whoami().catch((e: unknown) => e);
    assert.ok(err instanceof GpuxConnectionError);
    assert.match(err.message, /timed out after 200 ms/);
  });

  test('a bad URL fails at construction', () => {
    assert.throws(() => new GpuxClient({ url: 'localhost:8080' }), /invalid coordinator URL/);
    assert.throws(() => new GpuxClient({ url: 'not a url' }), /invalid coordinator URL/);
  });

  test('a caller abort rejects with the abort reason, not a connection error', async (t) => {
    const srv = await startFakeServer(() => undefined);
    t.after(() => srv.close());
    const ac = new AbortController();
    const p = new GpuxClient({ url: srv.url }).whoami({ signal: ac.signal });
    setTimeout(() => ac.abort(new Error('stop')), 50);
    await assert.rejects(p, /stop/);
  });
});

describe('submitJob idempotency', () => {
  test('retries a dropped connection and a 503 with the same generated key', async (t) => {
    const srv = await startFakeServer((_req, res, n) => {
      if (n === 1) return void res.socket?.destroy();
      if (n === 2) return json(res, 503, { error: { code: 'UNAVAILABLE', message: 'database busy' } });
      json(res, 201, { job: jobView(), created: true });
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 't', retryDelayMs: 10 });
    const out = await client.submitJob({ name: 'hello', image: 'busybox', command: ['true'] });
    assert.equal(out.created, true);
    assert.equal(srv.requests.length, 3);
    const keys = srv.requests.map((r) => r.headers['idempotency-key']);
    assert.match(String(keys[0]), /^[0-9a-f-]{36}$/);
    assert.equal(new Set(keys).size, 1, `one key for every try: ${keys.join()}`);
    assert.deepEqual(srv.requests[0]?.body, { spec: { name: 'hello', image: 'busybox', command: ['true'] } });
  });

  test('uses the caller key and gives up after submitRetries', async (t) => {
    const srv = await startFakeServer((_req, res) => json(res, 503, { error: { code: 'UNAVAILABLE', message: 'down' } }));
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 't', retryDelayMs: 5, submitRetries: 2 });
    const err = await client.submitJob({ name: 'h', image: 'i', command: ['c'] }, { idempotencyKey: 'my-key' }).catch((e: unknown) => e);
    assert.ok(err instanceof GpuxApiError && err.status === 503);
    assert.equal(srv.requests.length, 3);
    assert.ok(srv.requests.every((r) => r.headers['idempotency-key'] === 'my-key'));
  });
});

describe('following a job', () => {
  test('followLogs pages with next and stops on done', async (t) => {
    let emptyServed = false;
    const srv = await startFakeServer((req, res) => {
      const after = Number(req.url.searchParams.get('after'));
      if (after === -1) return json(res, 200, { entries: [logEntry(0, 'a\n'), logEntry(1, 'b\n')], next: 1, done: false });
      if (after === 1 && !emptyServed) {
        emptyServed = true;
        return json(res, 200, { entries: [], next: 1, done: false });
      }
      if (after === 1) return json(res, 200, { entries: [logEntry(2, 'c\n')], next: 2, done: true });
      json(res, 500, { error: { code: 'INTERNAL', message: 'read past the end' } });
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 't' });
    const got: string[] = [];
    for await (const e of client.followLogs('job-1', { waitMs: 1000, idleMs: 5 })) got.push(e.data);
    assert.deepEqual(got, ['a\n', 'b\n', 'c\n']);
    assert.equal(srv.requests.length, 3);
    assert.ok(srv.requests.every((r) => r.url.searchParams.get('waitMs') === '1000' && r.url.pathname === '/v1/jobs/job-1/logs'));
  });

  test('waitForJob polls until a terminal state and reports each update', async (t) => {
    const states = ['queued', 'running', 'succeeded'];
    const srv = await startFakeServer((_req, res, n) => json(res, 200, { job: jobView({ state: states[Math.min(n - 1, 2)] }), attempts: [], events: [] }));
    t.after(() => srv.close());
    const seen: string[] = [];
    const job = await new GpuxClient({ url: srv.url, token: 't' }).waitForJob('job-1', { pollMs: 5, onUpdate: (j) => seen.push(j.state) });
    assert.equal(job.state, 'succeeded');
    assert.deepEqual(seen, states);
  });

  test('health reads /healthz; ready reads /readyz and returns a 503 body as an answer', async (t) => {
    let up = true;
    const srv = await startFakeServer((req, res) => {
      if (req.url.pathname === '/healthz') return json(res, 200, { status: 'ok' });
      if (req.url.pathname !== '/readyz') return json(res, 404, { error: { code: 'NOT_FOUND', message: 'no route' } });
      if (up) json(res, 200, { status: 'ok', checks: { store: 'ok' } });
      else json(res, 503, { status: 'unavailable', checks: { store: 'down' } });
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url });
    assert.deepEqual(await client.health(), { status: 'ok' });
    assert.equal((await client.ready()).status, 'ok');
    up = false;
    assert.deepEqual(await client.ready(), { status: 'unavailable', checks: { store: 'down' } });
  });
});

describe('disputes', () => {
  const verification = {
    state: 'refereeing',
    label: 'disputed',
    summary: 'disputed by the buyer; a referee run on an independent operator decides',
    attemptId: 'att-1',
    nodeId: 'node-1',
    p: 0.1,
    draw: 0.5,
    reason: 'sampled-out',
    windowClosesAt: 2_000,
    checks: [{ kind: 'referee', state: 'queued', agreed: null }],
    dispute: { reason: 'wrong', bond: 100_000, asset: 'usdc', at: 1_500 },
    verdict: null,
    resolvedAt: null,
  };

  test('disputeJob posts the reason and returns the step with the bond; a job carries its verification', async (t) => {
    const srv = await startFakeServer((req, res) => {
      if (req.method === 'POST') return json(res, 200, { verification, bond: 100_000, asset: 'usdc' });
      json(res, 200, { job: jobView({ verification }), attempts: [], events: [] });
    });
    t.after(() => srv.close());
    const client = new GpuxClient({ url: srv.url, token: 't' });
    const out = await client.disputeJob('job-1', 'wrong');
    assert.equal(out.verification.label, 'disputed');
    assert.equal(out.bond, 100_000);
    assert.equal(srv.requests[0]?.url.pathname, '/v1/jobs/job-1/dispute');
    assert.deepEqual(srv.requests[0]?.body, { reason: 'wrong' });
    const { job } = await client.getJob('job-1');
    assert.equal(job.verification?.label, 'disputed');
  });
});
