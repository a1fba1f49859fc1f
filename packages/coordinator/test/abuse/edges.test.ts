/**
 * Abuse suite, issue 10 item 14 (files and edges, tokens aside): the SQLite database and its data dir are private
 * (0600/0700, whatever the umask, an existing wider one tightened with a notice); /metrics needs an operator token
 * or the metrics token unless GPUX_METRICS=open (401 UNAUTHORIZED / 403 FORBIDDEN otherwise); every response carries
 * a strict Content-Security-Policy, frame-ancestors 'none', X-Frame-Options DENY, nosniff and no referrer.
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '@gpux/core';
import { buildApp } from '../../src/app.js';
import { loadCoordinatorConfig } from '../../src/config.js';
import { API_CSP, DASHBOARD_CSP } from '../../src/http/security-headers.js';
import { createLogger } from '../../src/logger.js';
import { cryptoRandom } from '../../src/random.js';
import { openSqliteStore } from '../../src/store/index.js';
import { call, type Harness, spec, startHarness } from '../helpers.js';

const mode = (path: string) => statSync(path).mode & 0o777;

function scratchDir(t: { after(fn: () => unknown): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-edges-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe('abuse: data files readable by other local users', () => {
  test('a new database: its dirs 0700, the file and its -wal/-shm 0600, even under umask 000', async (t) => {
    const root = scratchDir(t);
    const path = join(root, 'a', 'b', 'coordinator.db');
    const before = process.umask(0);
    let store: Awaited<ReturnType<typeof openSqliteStore>>;
    try {
      store = await openSqliteStore(path);
    } finally {
      process.umask(before);
    }
    try {
      await store.countTokens();
      assert.equal(mode(join(root, 'a')), 0o700);
      assert.equal(mode(join(root, 'a', 'b')), 0o700);
      for (const f of [path, `${path}-wal`, `${path}-shm`]) assert.equal(mode(f), 0o600, f);
    } finally {
      await store.close();
    }
  });

  test('an existing data dir 0755 with a database 0644 (as before this fix): tightened at start, with a notice each', async (t) => {
    const dataDir = join(scratchDir(t), 'coordinator');
    const path = join(dataDir, 'coordinator.db');
    await (await openSqliteStore(path)).close();
    chmodSync(dataDir, 0o755);
    chmodSync(path, 0o644);
    const notices: string[] = [];
    const store = await openSqliteStore(path, { onModeFixed: (m) => notices.push(m) });
    await store.close();
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(path), 0o600);
    assert.equal(notices.length, 2, notices.join('\n'));
    assert.match(notices.join('\n'), /the data dir .*coordinator was open to other local users \(mode 0755\); now 0700/);
    assert.match(notices.join('\n'), /coordinator\.db was readable by other local users \(mode 0644\); now 0600/);
  });

  test('an empty data dir made just before (as gpux dev does) is made 0700 without a notice', async (t) => {
    const dataDir = join(scratchDir(t), 'coordinator');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    const notices: string[] = [];
    await (await openSqliteStore(join(dataDir, 'coordinator.db'), { onModeFixed: (m) => notices.push(m) })).close();
    assert.equal(mode(dataDir), 0o700);
    assert.deepEqual(notices, []);
  });

  test('a database in a dir that holds other things (a project, /tmp) leaves the dir alone but not the file', async (t) => {
    const project = scratchDir(t);
    chmodSync(project, 0o755);
    writeFileSync(join(project, 'README'), 'mine');
    const notices: string[] = [];
    const store = await openSqliteStore(join(project, 'gpux.db'), { onModeFixed: (m) => notices.push(m) });
    await store.close();
    assert.equal(mode(project), 0o755, 'not the coordinator’s dir to change');
    assert.equal(mode(join(project, 'gpux.db')), 0o600);
    assert.deepEqual(notices, [], 'a new file is created 0600: nothing to fix');
  });

  test('the coordinator’s own data dir (a harness start): 0700 and 0600', async () => {
    const h = await startHarness();
    try {
      assert.equal(mode(h.dir), 0o700);
      for (const f of ['coordinator.db', 'coordinator.db-wal', 'coordinator.db-shm']) assert.equal(mode(join(h.dir, f)), 0o600, f);
    } finally {
      await h.close();
    }
  });
});

describe('abuse: /metrics open to anyone', () => {
  const metricsToken = 'scrape-secret-0123456789';
  let h: Harness;
  before(async () => {
    h = await startHarness({ metricsToken });
  });
  after(() => h?.close());

  const metrics = (headers: Record<string, string> = {}) => call(h.url, 'GET', '/metrics', { headers });

  test('no token: 401 UNAUTHORIZED saying how to get in; a buyer token: 403 FORBIDDEN; an unknown token: 401', async () => {
    const none = await metrics();
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, 'UNAUTHORIZED');
    assert.match(none.body.error.message, /^\/metrics needs a token: .*operator token or the metrics token \(GPUX_METRICS_TOKEN\).*GPUX_METRICS=open/);
    assert.doesNotMatch(JSON.stringify(none.body), /gpux_jobs/);

    const buyer = await metrics({ authorization: `Bearer ${await h.buyer()}` });
    assert.deepEqual([buyer.status, buyer.body.error.code], [403, 'FORBIDDEN']);
    assert.match(buyer.body.error.message, /needs an operator token or the metrics token, not a buyer's/);

    for (const bad of ['Bearer gpux_not-a-real-token', 'Bearer scrape-secret-wrong', 'Basic abc']) {
      const res = await metrics({ authorization: bad });
      assert.deepEqual([res.status, res.body.error.code], [401, 'UNAUTHORIZED'], bad);
    }
  });

  test('served with an operator token or the metrics token', async () => {
    for (const token of [h.operator, metricsToken]) {
      const res = await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(res.status, 200);
      assert.match(await res.text(), /gpux_jobs\{state="queued"\}/);
    }
  });

  test('GPUX_METRICS=open serves it to anyone; bad values are refused at start', async () => {
    const open = await startHarness({ metrics: loadCoordinatorConfig({ GPUX_METRICS: 'open' }).metrics });
    try {
      const res = await fetch(`${open.url}/metrics`);
      assert.equal(res.status, 200);
      assert.match(await res.text(), /gpux_jobs/);
    } finally {
      await open.close();
    }
    assert.equal(loadCoordinatorConfig({}).metrics, 'operator', 'the default needs a token');
    assert.equal(loadCoordinatorConfig({}).metricsToken, null);
    assert.throws(() => loadCoordinatorConfig({ GPUX_METRICS: 'public' }), /GPUX_METRICS="public" is invalid: expected operator or open/);
    assert.throws(() => loadCoordinatorConfig({ GPUX_METRICS_TOKEN: 'short' }), (e: Error) => /GPUX_METRICS_TOKEN.*at least 16/.test(e.message) && !e.message.includes('short'));
  });
});

describe('abuse: dashboard framed or scripted from elsewhere', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness();
  });
  after(() => h?.close());

  const common = (headers: Headers, what: string) => {
    assert.equal(headers.get('x-frame-options'), 'DENY', what);
    assert.equal(headers.get('x-content-type-options'), 'nosniff', what);
    assert.equal(headers.get('referrer-policy'), 'no-referrer', what);
    assert.match(headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, what);
  };

  test('API routes, errors and system routes: CSP default-src none, no framing, nosniff, no referrer', async () => {
    const buyer = await h.buyer();
    const submitted = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec() } });
    const responses = [
      ['POST /v1/jobs', submitted],
      ['GET /v1/jobs', await call(h.url, 'GET', '/v1/jobs', { token: buyer })],
      ['401', await call(h.url, 'GET', '/v1/jobs')],
      ['404', await call(h.url, 'GET', '/v1/no-such-route')],
      ['/healthz', await call(h.url, 'GET', '/healthz')],
      ['/metrics', await call(h.url, 'GET', '/metrics', { token: h.operator })],
    ] as const;
    for (const [what, res] of responses) {
      common(res.headers, what);
      assert.equal(res.headers.get('content-security-policy'), API_CSP, what);
    }
    assert.equal(submitted.status, 201);
  });

  test('the dashboard: a strict CSP (own origin only, no inline script), no framing', async (t) => {
    const dist = scratchDir(t);
    mkdirSync(join(dist, 'assets'));
    writeFileSync(join(dist, 'index.html'), '<!doctype html><title>t</title><div id="root"></div>');
    writeFileSync(join(dist, 'assets', 'index-x.js'), 'console.log(1)');
    const config = loadCoordinatorConfig({}, { dataDir: dist, logLevel: 'silent', market: false });
    const app = buildApp({ store: h.coord.store, config, clock: systemClock, random: cryptoRandom, logger: createLogger('silent'), dashboardDir: dist });
    t.after(() => app.close());
    for (const url of ['/', '/nodes/n-1', '/assets/index-x.js']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      const headers = new Headers(res.headers as Record<string, string>);
      common(headers, url);
      const csp = headers.get('content-security-policy') ?? '';
      if (url !== '/assets/index-x.js') {
        assert.equal(csp, DASHBOARD_CSP, url);
        assert.match(csp, /script-src 'self'(;|$)/);
        assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|\*/);
      }
    }
    // No build yet: the how-to page, still never framed.
    const bare = buildApp({ store: h.coord.store, config, clock: systemClock, random: cryptoRandom, logger: createLogger('silent'), dashboardDir: join(dist, 'none') });
    t.after(() => bare.close());
    const page = await bare.inject({ method: 'GET', url: '/' });
    const headers = new Headers(page.headers as Record<string, string>);
    common(headers, 'not built');
    assert.match(headers.get('content-security-policy') ?? '', /^default-src 'none'; style-src 'unsafe-inline'/);
  });
});
