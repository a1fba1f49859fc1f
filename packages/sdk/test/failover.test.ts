/** GpuxClient with several coordinator URLs: fail over, stickiness, no resend of an unsafe write, errors naming every URL. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { GpuxApiError, GpuxClient, GpuxClientError, GpuxConnectionError, GpuxInsecureTransportError, parseCoordinatorUrls } from '../src/index.js';
import { json, jobView, startFakeServer } from './fake-server.js';

const WHO = { accountId: 'acc-1', role: 'buyer', tokenId: 'tok-1' };

/** A loopback URL nothing listens on: connecting to it is refused. */
async function refusedUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}

describe('coordinator URL lists', () => {
  test('a comma-separated string or an array, normalized, duplicates dropped', () => {
    assert.deepEqual(parseCoordinatorUrls('http://a:1/, https://b:2'), ['http://a:1', 'https://b:2']);
    assert.deepEqual(parseCoordinatorUrls(['http://a:1', 'http://a:1/', 'http://c:3']), ['http://a:1', 'http://c:3']);
    assert.deepEqual(new GpuxClient({ url: 'http://a:1,http://b:2' }).urls, ['http://a:1', 'http://b:2']);
  });

  test('a bad or empty entry names its position and how to fix it', () => {
    assert.throws(() => parseCoordinatorUrls('http://a:1,localhost:8080'), (e: unknown) => e instanceof GpuxClientError && /^coordinator URL 2 of 2: invalid coordinator URL "localhost:8080"/.test(e.message));
    assert.throws(() => parseCoordinatorUrls('http://a:1,,http://b:2'), /coordinator URL 2 of 3 is empty: separate URLs with single commas/);
    assert.throws(() => new GpuxClient({ url: [] }), /no coordinator URL given/);
    assert.throws(() => new GpuxClient({ url: 'ftp://x' }), /^GpuxClientError: invalid coordinator URL "ftp:\/\/x": only http and https/);
  });

  test('a token is refused when any URL would carry it in clear', async () => {
    const client = new GpuxClient({ url: ['https://a.example', 'http://10.0.0.5:8080'], token: 't' });
    await assert.rejects(client.whoami(), (e: unknown) => e instanceof GpuxInsecureTransportError && e.url.startsWith('http://10.0.0.5'));
  });
});

describe('fail over', () => {
  test('a read moves on from a refused URL and stays on the one that answered', async (t) => {
    const down = await refusedUrl();
    const up = await startFakeServer((_req, res) => json(res, 200, WHO));
    t.after(() => up.close());
    const client = new GpuxClient({ url: [down, up.url], token: 't' });
    assert.equal((await client.whoami()).accountId, 'acc-1');
    assert.equal(client.url, up.url, 'sticky: the answering URL is current');
    await client.whoami();
    assert.equal(up.requests.length, 2);
  });

  test('a 502/503/504 moves a read on; the busy URL is not asked again while the other answers', async (t) => {
    for (const status of [502, 503, 504]) {
      const busy = await startFakeServer((_req, res) => json(res, status, { error: { code: 'UNAVAILABLE', message: 'no upstream' } }));
      const up = await startFakeServer((_req, res) => json(res, 200, WHO));
      t.after(() => Promise.all([busy.close(), up.close()]));
      const client = new GpuxClient({ url: [busy.url, up.url], token: 't' });
      await client.whoami();
      await client.whoami();
      assert.deepEqual([busy.requests.length, up.requests.length], [1, 2], `HTTP ${status}`);
    }
  });

  test('a read that times out on one URL is answered by the next', async (t) => {
    const silent = await startFakeServer(() => undefined);
    const up = await startFakeServer((_req, res) => json(res, 200, WHO));
    t.after(() => Promise.all([silent.close(), up.close()]));
    // 1.5 s, not less: the timeout also bounds the answering URL, and a loaded CI machine once took over 200 ms there.
    const client = new GpuxClient({ url: [silent.url, up.url], token: 't', timeoutMs: 1_500 });
    assert.equal((await client.whoami()).tokenId, 'tok-1');
    assert.equal(silent.requests.length, 1, 'the silent URL was asked first');
  });

  test('submitJob moves on after a dropped connection with the same idempotency key', async (t) => {
    const dropping = await startFakeServer((_req, res) => void res.socket?.destroy());
    const up = await startFakeServer((_req, res) => json(res, 201, { job: jobView(), created: true }));
    t.after(() => Promise.all([dropping.close(), up.close()]));
    const client = new GpuxClient({ url: [dropping.url, up.url], token: 't', retryDelayMs: 5 });
    assert.equal((await client.submitJob({ name: 'h', image: 'busybox', command: ['true'] })).created, true);
    const keys = [...dropping.requests, ...up.requests].map((r) => r.headers['idempotency-key']);
    assert.equal(keys.length, 2);
    assert.equal(new Set(keys).size, 1, 'one key on both URLs');
  });

  test('a write without an idempotency key is not sent again after it may have arrived', async (t) => {
    const dropping = await startFakeServer((_req, res) => void res.socket?.destroy());
    const up = await startFakeServer((_req, res) => json(res, 200, { job: jobView({ state: 'cancelled' }) }));
    t.after(() => Promise.all([dropping.close(), up.close()]));
    const client = new GpuxClient({ url: [dropping.url, up.url], token: 't' });
    const err = await client.cancelJob('job-1').catch((e: unknown) => e);
    assert.ok(err instanceof GpuxConnectionError, String(err));
    assert.equal(up.requests.length, 0, 'the cancel was not resent to the second URL');
    assert.ok(err.message.includes(dropping.url), err.message);
    assert.match(err.message, /not sent to the other URLs: it may have reached the last one tried, and is not safe to send twice/);
    // The failed URL is left behind: the next request starts at the other one.
    await client.cancelJob('job-1');
    assert.deepEqual([dropping.requests.length, up.requests.length], [1, 1]);
  });

  test('a write without an idempotency key is not resent after a 503 either', async (t) => {
    const busy = await startFakeServer((_req, res) => json(res, 503, { error: { code: 'UNAVAILABLE', message: 'store down' } }));
    const up = await startFakeServer((_req, res) => json(res, 200, { job: jobView({ state: 'cancelled' }) }));
    t.after(() => Promise.all([busy.close(), up.close()]));
    const err = await new GpuxClient({ url: [busy.url, up.url], token: 't' }).cancelJob('job-1').catch((e: unknown) => e);
    assert.ok(err instanceof GpuxApiError && err.status === 503, String(err));
    assert.equal(up.requests.length, 0);
  });

  test('a write whose connection was refused goes to the next URL (nothing was sent)', async (t) => {
    const down = await refusedUrl();
    const up = await startFakeServer((_req, res) => json(res, 200, { job: jobView({ state: 'cancelled' }) }));
    t.after(() => up.close());
    const res = await new GpuxClient({ url: [down, up.url], token: 't' }).cancelJob('job-1');
    assert.equal(res.job.state, 'cancelled');
    assert.equal(up.requests[0]?.method, 'POST');
  });

  test('all down: the error names every URL and what each did', async (t) => {
    const a = await refusedUrl();
    const busy = await startFakeServer((_req, res) => json(res, 503, { error: { code: 'UNAVAILABLE', message: 'draining' } }));
    const b = await refusedUrl();
    t.after(() => busy.close());
    const refused = await new GpuxClient({ url: [a, b], token: 't' }).whoami().catch((e: unknown) => e);
    assert.ok(refused instanceof GpuxConnectionError, String(refused));
    assert.deepEqual(refused.tried, [a, b]);
    assert.match(refused.message, new RegExp(`tried ${a.replace(/\./g, '\\.')} \\(ECONNREFUSED\\), ${b.replace(/\./g, '\\.')} \\(ECONNREFUSED\\)`));
    const mixed = await new GpuxClient({ url: [a, busy.url], token: 't' }).whoami().catch((e: unknown) => e);
    assert.ok(mixed instanceof GpuxApiError && mixed.status === 503, String(mixed));
    assert.match(mixed.message, /^draining \(tried .*\(ECONNREFUSED\), .*\(HTTP 503\)\)$/);
  });

  test('one URL keeps the single-coordinator messages', async () => {
    const down = await refusedUrl();
    const err = await new GpuxClient({ url: down }).whoami().catch((e: unknown) => e);
    assert.ok(err instanceof GpuxConnectionError);
    assert.match(err.message, /^cannot reach the coordinator at .*: is it running\? \(ECONNREFUSED\)$/);
  });

  test('readiness answers 503 as an answer and does not move on', async (t) => {
    const notReady = await startFakeServer((_req, res) => json(res, 503, { status: 'unavailable', checks: { store: 'down' } }));
    const up = await startFakeServer((_req, res) => json(res, 200, { status: 'ok' }));
    t.after(() => Promise.all([notReady.close(), up.close()]));
    assert.equal((await new GpuxClient({ url: [notReady.url, up.url] }).ready()).status, 'unavailable');
    assert.equal(up.requests.length, 0);
  });
});
