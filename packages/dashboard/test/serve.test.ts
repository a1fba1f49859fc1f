/** The coordinator serves a dashboard build at /: content types, caching, client routes, API 404s, no escape from dist/. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildApp, createLogger, cryptoRandom, loadCoordinatorConfig, openStore } from '@gpux/coordinator';
import { type Store, systemClock } from '@gpux/core';
import { type TempDir, tempDir } from '@gpux/testing';

type FastifyInstance = ReturnType<typeof buildApp>;

const INDEX = '<!doctype html><title>gpux test build</title><div id="root"></div>';

async function appWith(dir: TempDir, store: Store, dashboardDir: string): Promise<FastifyInstance> {
  const config = loadCoordinatorConfig({}, { dataDir: dir.path, host: '127.0.0.1', port: 0, logLevel: 'silent' });
  const app = buildApp({ store, config, clock: systemClock, random: cryptoRandom, logger: createLogger('silent'), dashboardDir });
  await app.ready();
  return app;
}

describe('dashboard files at /', () => {
  let dir: TempDir;
  let store: Store;
  let app: FastifyInstance;
  let bare: FastifyInstance;

  before(async () => {
    dir = tempDir('gpux-dashboard-serve');
    const dist = join(dir.path, 'dist');
    mkdirSync(join(dist, 'assets'), { recursive: true });
    writeFileSync(join(dist, 'index.html'), INDEX);
    writeFileSync(join(dist, 'assets', 'index-AbC123.js'), 'console.log("app")');
    writeFileSync(join(dist, 'assets', 'index-AbC123.css'), 'body{}');
    writeFileSync(join(dist, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    writeFileSync(join(dist, '.secret'), 'no');
    writeFileSync(join(dir.path, 'outside.txt'), 'outside the build');
    store = await openStore(`sqlite:${join(dir.path, 'c.db')}`);
    await store.migrate();
    app = await appWith(dir, store, dist);
    bare = await appWith(dir, store, join(dir.path, 'no-build-here'));
  });

  after(async () => {
    await app?.close();
    await bare?.close();
    await store?.close();
    await dir?.cleanup();
  });

  test('/ is index.html, revalidated on every load', async () => {
    const res = await app.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'text/html; charset=utf-8');
    assert.equal(res.headers['cache-control'], 'no-cache');
    assert.equal(res.body, INDEX);
    const head = await app.inject({ method: 'HEAD', url: '/' });
    assert.equal(head.statusCode, 200);
  });

  test('client routes get index.html; missing files and API paths do not', async () => {
    for (const url of ['/nodes', '/nodes/n-abc', '/jobs/job-1?x=1', '/market']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 200, url);
      assert.equal(res.body, INDEX, url);
    }
    assert.equal((await app.inject({ method: 'GET', url: '/assets/index-missing.js' })).statusCode, 404);
    for (const url of ['/v1/no-such-route', '/v1', '/metrics/x']) {
      const res = await app.inject({ method: 'GET', url });
      assert.equal(res.statusCode, 404, url);
      assert.equal(res.json().error.code, 'NOT_FOUND', url);
    }
    const post = await app.inject({ method: 'POST', url: '/nodes' });
    assert.equal(post.statusCode, 404);
    assert.equal(post.json().error.code, 'NOT_FOUND');
  });

  test('hashed assets are immutable for a year, with their content types', async () => {
    const js = await app.inject({ method: 'GET', url: '/assets/index-AbC123.js' });
    assert.equal(js.statusCode, 200);
    assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8');
    assert.equal(js.headers['cache-control'], 'public, max-age=31536000, immutable');
    assert.equal(js.body, 'console.log("app")');
    const css = await app.inject({ method: 'GET', url: '/assets/index-AbC123.css' });
    assert.equal(css.headers['content-type'], 'text/css; charset=utf-8');
    const svg = await app.inject({ method: 'GET', url: '/favicon.svg' });
    assert.equal(svg.headers['content-type'], 'image/svg+xml');
    assert.equal(svg.headers['cache-control'], 'no-cache', 'unhashed files are revalidated');
  });

  test('nothing outside the build, and no dotfiles', async () => {
    for (const url of ['/..%2foutside.txt', '/assets/..%2f..%2foutside.txt', '/%2e%2e/outside.txt', '/.secret', '/assets/%00.js']) {
      const res = await app.inject({ method: 'GET', url });
      assert.ok(!res.body.includes('outside the build') && res.body !== 'no', `${url} leaked`);
    }
  });

  test('without a build, / says how to make one and the API still works', async () => {
    const res = await bare.inject({ method: 'GET', url: '/' });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /text\/html/);
    assert.match(res.body, /npm run build -w @gpux\/dashboard/);
    assert.equal((await bare.inject({ method: 'GET', url: '/jobs' })).statusCode, 404);
    assert.equal((await bare.inject({ method: 'GET', url: '/healthz' })).statusCode, 200);
  });
});
