/** Several coordinator URLs from --coordinator, GPUX_URL or the profile: checked with a usage error, then failed over. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { main } from '../src/main.js';
import { writeProfile } from '../src/profile.js';
import { argv, captureIo, tempDir } from './helpers.js';

/** A coordinator stand-in answering every job list with an empty page; counts requests. */
async function jobsServer(t: { after(fn: () => unknown): void }): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const srv = createServer((_req, res) => {
    hits++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jobs: [], nextCursor: null }));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => srv.close(r)));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, hits: () => hits };
}

async function refusedUrl(): Promise<string> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}

describe('gpux with several coordinator URLs', () => {
  test('--coordinator A,B fails over from a dead A to B', async (t) => {
    const up = await jobsServer(t);
    const io = captureIo({ GPUX_HOME: tempDir(t) });
    assert.equal(await main(argv('job', 'list', '--coordinator', `${await refusedUrl()},${up.url}`, '--token', 'tok'), io), 0, io.stderr());
    assert.equal(io.stdout(), 'no jobs\n');
    assert.equal(up.hits(), 1);
  });

  test('GPUX_URL and the profile take the same list', async (t) => {
    const up = await jobsServer(t);
    const down = await refusedUrl();
    const viaEnv = captureIo({ GPUX_HOME: tempDir(t), GPUX_URL: `${down}, ${up.url}`, GPUX_TOKEN: 'tok' });
    assert.equal(await main(argv('job', 'list'), viaEnv), 0, viaEnv.stderr());
    const home = tempDir(t);
    writeProfile({ GPUX_HOME: home }, { url: `${down},${up.url}`, token: 'tok' });
    const viaProfile = captureIo({ GPUX_HOME: home });
    assert.equal(await main(argv('job', 'list'), viaProfile), 0, viaProfile.stderr());
    assert.equal(up.hits(), 2);
  });

  test('a bad entry is a usage error naming where it came from, which entry, and the expected form', async (t) => {
    const home = tempDir(t);
    const flag = captureIo({ GPUX_HOME: home });
    assert.equal(await main(argv('job', 'list', '--coordinator', 'http://a:1,localhost:8080', '--token', 'tok'), flag), 2);
    assert.match(flag.stderr(), /^error: --coordinator: coordinator URL 2 of 2: invalid coordinator URL "localhost:8080": only http and https are supported \(several coordinators: comma-separated, e\.g\. https:\/\/a\.example:8080,https:\/\/b\.example:8080\)\n$/);
    const env = captureIo({ GPUX_HOME: home, GPUX_URL: 'http://a:1,,http://b:2', GPUX_TOKEN: 'tok' });
    assert.equal(await main(argv('job', 'list'), env), 2);
    assert.match(env.stderr(), /^error: GPUX_URL: coordinator URL 2 of 3 is empty/);
    writeProfile({ GPUX_HOME: home }, { url: 'http://a:1,ftp://b', token: 'tok' });
    const profile = captureIo({ GPUX_HOME: home });
    assert.equal(await main(argv('job', 'list'), profile), 2);
    assert.match(profile.stderr(), /^error: the profile's url \(.*profile\.json\): coordinator URL 2 of 2: invalid coordinator URL "ftp:\/\/b": only http and https/);
  });

  test('all down: the error names both URLs', async (t) => {
    const a = await refusedUrl();
    const b = await refusedUrl();
    const io = captureIo({ GPUX_HOME: tempDir(t) });
    assert.equal(await main(argv('job', 'list', '--coordinator', `${a},${b}`, '--token', 'tok'), io), 1);
    assert.ok(io.stderr().includes(`tried ${a} (ECONNREFUSED), ${b} (ECONNREFUSED)`), io.stderr());
  });
});
