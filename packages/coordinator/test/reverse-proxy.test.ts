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
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeTestCa, opensslAvailable, requireComponent, type TestCa } from '@gpux/testing';
import { callFrom } from './http-from.js';
import { call, type Harness, type Res, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const SHIPPED = new URL('../../../deploy/nginx/gpux.conf', import.meta.url);
const NGINX = ['/usr/sbin/nginx', '/usr/local/sbin/nginx', '/usr/local/nginx/sbin/nginx'].find((p) => existsSync(p));
const LIMIT = 5;

/** Replace one literal of the shipped file; a config edit that drops it fails here, not silently. */
function swap(text: string, from: string, to: string): string {
  assert.ok(text.includes(from), `deploy/nginx/gpux.conf no longer contains ${JSON.stringify(from)}: update the test's rendering`);
  return text.split(from).join(to);
}

/** The shipped site file with this test's ports and certificate; IPv6 listeners dropped (the test binds loopback). */
function renderSite(o: { httpsPort: number; httpPort: number; upstreamPort: number; cert: string; key: string }): string {
  let s = readFileSync(SHIPPED, 'utf8');
  s = swap(s, 'listen 443 ssl http2;', `listen 127.0.0.1:${o.httpsPort} ssl http2;`);
  s = swap(s, 'listen 80;', `listen 127.0.0.1:${o.httpPort};`);
  s = s.replace(/^\s*listen \[::\]:\d+.*$/gm, '');
  s = swap(s, '/etc/letsencrypt/live/gpux.example.com/fullchain.pem', o.cert);
  s = swap(s, '/etc/letsencrypt/live/gpux.example.com/privkey.pem', o.key);
  return swap(s, 'server 127.0.0.1:7070;', `server 127.0.0.1:${o.upstreamPort};`);
}

/** A main config around the site file, everything under `dir`, so nginx needs no root and touches nothing else. */
function mainConfig(dir: string): string {
  const tmp = (n: string) => `${n}_temp_path ${join(dir, 'tmp', n)};`;
  return [
    'worker_processes 1;',
    `pid ${join(dir, 'nginx.pid')};`,
    `error_log ${join(dir, 'error.log')} info;`,
    'events { worker_connections 256; }',
    'http {',
    `  access_log ${join(dir, 'access.log')};`,
    `  ${['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(tmp).join('\n  ')}`,
    `  include ${join(dir, 'gpux.conf')};`,
    '}',
    '',
  ].join('\n');
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

describe(
  'the shipped nginx config in front of the coordinator',
  requireComponent('nginx', NGINX !== undefined && opensslAvailable(), 'the reverse-proxy test runs the shipped config in nginx (apt-get install nginx-light openssl)'),
  () => {
    let dir: string;
    let pki: TestCa;
    let h: Harness;
    let nginx: ChildProcess | undefined;
    let nginxOut = '';
    let proxyUrl: string;
    let httpPort: number;
    let buyer: string;
    const errorLog = () => (existsSync(join(dir, 'error.log')) ? readFileSync(join(dir, 'error.log'), 'utf8') : '(no error log)');
    const viaProxy = (from: string, method: string, path: string, o: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
      callFrom(proxyUrl, method, path, { from, ca: readFileSync(pki.ca), ...o });

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'gpux-nginx-test-'));
      mkdirSync(join(dir, 'tmp'));
      pki = makeTestCa(dir);
      const pair = pki.servers.server;
      assert.ok(pair);
      h = await startHarness({ trustProxy: ['127.0.0.1'], authFailuresPerMinute: LIMIT });
      buyer = await h.buyer();
      const httpsPort = await freePort();
      httpPort = await freePort();
      writeFileSync(join(dir, 'gpux.conf'), renderSite({ httpsPort, httpPort, upstreamPort: h.coord.port, cert: pair.cert, key: pair.key }));
      writeFileSync(join(dir, 'nginx.conf'), mainConfig(dir));
      // -e: the error log before the config is read (else nginx tries /var/log/nginx); -p: relative paths under dir.
      nginx = spawn(NGINX as string, ['-p', dir, '-e', join(dir, 'error.log'), '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
      nginx.stdout?.on('data', (c: Buffer) => (nginxOut += c.toString()));
      nginx.stderr?.on('data', (c: Buffer) => (nginxOut += c.toString()));
      proxyUrl = `https://127.0.0.1:${httpsPort}`;
      await waitFor(
        async () => {
          if (nginx?.exitCode !== null) assert.fail(`nginx exited (${nginx?.exitCode}): ${nginxOut}\n${errorLog()}`);
          return (await viaProxy('127.0.0.1', 'GET', '/healthz').catch(() => null))?.status === 200;
        },
        'nginx to proxy /healthz',
        15_000,
      ).catch((err: Error) => {
        throw new Error(`${err.message}\nnginx output: ${nginxOut}\nerror log: ${errorLog()}`);
      });
    });

    after(async () => {
      if (nginx && nginx.exitCode === null) {
        const exited = new Promise((r) => nginx?.once('exit', r));
        nginx.kill('SIGQUIT'); // graceful: finish open requests, then exit
        await exited;
      }
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
