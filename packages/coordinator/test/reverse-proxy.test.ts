/**
 * The shipped nginx config (deploy/nginx/gpux.conf) in front of a real coordinator: the file is rendered with
 * this test's ports and certificates (a throwaway CA, openssl CLI), nginx runs as a child with its own prefix, and
 * the coordinator believes X-Forwarded-For from 127.0.0.1 only (GPUX_TRUST_PROXY). Over HTTPS through nginx: a
 * buyer request works, plain HTTP is redirected, and a client connecting from 127.0.0.2 that forges
 * X-Forwarded-For is still seen as 127.0.0.2, proven by the per-address limit of failed authentications: it gets
 * 429 while 127.0.0.3 through the same proxy still gets 401, and a direct forged request is not believed either.
 * A job log long-poll through nginx is answered when the node appends its log.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, makeTestCa, NGINX_BIN, opensslAvailable, requireComponent, type RunningNginx, startNginx, type TestCa } from '@gpux/testing';
import { callFrom } from './http-from.js';
import { call, type Harness, type Res, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const LIMIT = 5;

describe(
  'the shipped nginx config in front of the coordinator',
  requireComponent('nginx', NGINX_BIN !== undefined && opensslAvailable(), 'the reverse-proxy test runs the shipped config in nginx (apt-get install nginx-light openssl)'),
  () => {
    let dir: string;
    let pki: TestCa;
    let h: Harness;
    let nginx: RunningNginx | undefined;
    let proxyUrl: string;
    let httpPort: number;
    let buyer: string;
    const viaProxy = (from: string, method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
      callFrom(proxyUrl, method, path, { from, ca: readFileSync(pki.ca), ...o });

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'gpux-nginx-test-'));
      pki = makeTestCa(dir);
      const pair = pki.servers.server;
      assert.ok(pair);
      h = await startHarness({ trustProxy: ['127.0.0.1'], authFailuresPerMinute: LIMIT });
      buyer = await h.buyer();
      const httpsPort = await freePort();
      httpPort = await freePort();
      nginx = startNginx(dir, { httpsPort, httpPort, upstreams: [h.coord.port], cert: pair.cert, key: pair.key });
      proxyUrl = `https://127.0.0.1:${httpsPort}`;
      await waitFor(
        async () => {
          if (nginx?.child.exitCode !== null) assert.fail(nginx?.output());
          return (await viaProxy('127.0.0.1', 'GET', '/healthz').catch(() => null))?.status === 200;
        },
        'nginx to proxy /healthz',
        15_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\n${nginx?.output()}`);
      });
    });

    after(async () => {
      await nginx?.stop();
      await h?.close();
      if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('a buyer request works over HTTPS through nginx, with HSTS; plain HTTP is redirected', async () => {
      const sub = await viaProxy('127.0.0.1', 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const list = await viaProxy('127.0.0.1', 'GET', '/v1/jobs', { token: buyer });
      assert.equal(list.status, 200);
      assert.ok(list.body.jobs.some((j: { id: string }) => j.id === sub.body.job.id));
      assert.equal(list.headers.get('strict-transport-security'), 'max-age=31536000');
      const plain = await callFrom(`http://127.0.0.1:${httpPort}`, 'GET', '/v1/jobs', { from: '127.0.0.1' });
      assert.equal(plain.status, 301);
      assert.match(plain.headers.get('location') ?? '', /^https:\/\/127\.0\.0\.1\/v1\/jobs$/);
    });

    test('a forged X-Forwarded-For through nginx is replaced: 127.0.0.2 is limited as itself, 127.0.0.3 is not', async () => {
      const limited = (res: Res) => {
        assert.equal(res.status, 429, JSON.stringify(res.body));
        assert.equal(res.body.error.code, 'RATE_LIMITED');
        assert.match(res.body.error.message, /from 127\.0\.0\.2 /, 'the coordinator names the real client, not a forged one');
        assert.ok(Number(res.headers.get('retry-after')) >= 1);
      };
      // Each try claims another address; were it believed, no bucket would ever empty.
      for (let i = 0; i < LIMIT; i++) {
        const res = await viaProxy('127.0.0.2', 'GET', '/v1/jobs', { token: `gpux_guess${i}`, headers: { 'x-forwarded-for': `203.0.113.${i}` } });
        assert.equal(res.status, 401, JSON.stringify(res.body));
      }
      limited(await viaProxy('127.0.0.2', 'GET', '/v1/jobs', { token: buyer, headers: { 'x-forwarded-for': '203.0.113.9' } }));
      limited(await viaProxy('127.0.0.2', 'GET', '/v1/jobs', { token: buyer }));
      // Another client through the same proxy (same peer address for the coordinator) is its own bucket.
      assert.equal((await viaProxy('127.0.0.3', 'GET', '/v1/jobs', { token: 'gpux_wrong' })).status, 401);
      assert.equal((await viaProxy('127.0.0.3', 'GET', '/v1/jobs', { token: buyer, headers: { 'x-forwarded-for': '127.0.0.2' } })).status, 200);
    });

    test('a direct request from an untrusted address with a forged X-Forwarded-For is not believed either', async () => {
      for (const forged of ['203.0.113.9', '127.0.0.3']) {
        const res = await callFrom(h.url, 'GET', '/v1/jobs', { from: '127.0.0.2', token: buyer, headers: { 'x-forwarded-for': forged } });
        assert.equal(res.status, 429, `claimed ${forged}`);
        assert.match(res.body.error.message, /from 127\.0\.0\.2 /);
      }
    });

    test('a job log long-poll through nginx is answered when the node appends', async () => {
      const agent = new TestAgent(h.url);
      assert.equal((await agent.register()).status, 200);
      const poll = agent.work(20_000);
      const sub = await viaProxy('127.0.0.1', 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ resources: { gpu: { count: 1 } } }) } });
      assert.equal(sub.status, 201);
      const jobId = sub.body.job.id as string;
      await poll;
      // assignments: by attempt id.
      const attemptId = await waitFor(async () => {
        const found = [...agent.assignments].find(([, a]) => a.jobId === jobId)?.[0];
        if (!found) await agent.work(0);
        return found;
      }, 'the assignment');
      assert.equal((await agent.start(attemptId)).status, 200);

      const follow = viaProxy('127.0.0.1', 'GET', `/v1/jobs/${jobId}/logs?waitMs=20000`, { token: buyer });
      const appended = await agent.logs(attemptId, [{ seq: 0, stream: 'stdout', data: 'through the proxy\n', at: Date.now() }]);
      assert.equal(appended.status, 200);
      const page = await follow;
      assert.equal(page.status, 200, JSON.stringify(page.body));
      assert.equal(page.body.entries[0]?.data, 'through the proxy\n');
      // The coordinator saw these requests, through nginx, as from the proxy's client (no 5xx, nothing dropped).
      assert.equal((await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).status, 200);
    });
  },
);
