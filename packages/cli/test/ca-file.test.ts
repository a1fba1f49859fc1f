/**
 * GPUX_CA_FILE and --ca-file (issue 19, "Private CA friendly"): a real coordinator serving HTTPS with a certificate
 * from a throwaway CA (openssl CLI). Without the CA a command fails with an error that says the certificate is not
 * trusted and to set GPUX_CA_FILE; with GPUX_CA_FILE or --ca-file it works; an unreadable file is a usage error
 * naming where the path came from.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { makeTestCa, OPENSSL_WHY, opensslAvailable, requireComponent, type TestCa } from '@gpux/testing';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

describe('gpux with a private CA', requireComponent('openssl', opensslAvailable(), OPENSSL_WHY), () => {
  let dir: string;
  let pki: TestCa;
  let coord: RunningCoordinator;
  let operator: string;
  const run = async (env: Record<string, string>, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), ...env });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const jobList = (env: Record<string, string>, ...extra: string[]) => run(env, ...extra, 'job', 'list', '--coordinator', coord.url, '--token', operator);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-ca-'));
    pki = makeTestCa(dir);
    const pair = pki.servers.server;
    assert.ok(pair);
    coord = await startCoordinator(
      loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, tlsCertFile: pair.cert, tlsKeyFile: pair.key }),
    );
    operator = coord.bootstrapOperatorToken ?? '';
    assert.match(coord.url, /^https:/);
  });
  after(async () => {
    await coord?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('without the CA: the certificate is not trusted, and the error says to set GPUX_CA_FILE', async () => {
    const r = await jobList({});
    assert.equal(r.code, 1, r.err);
    assert.match(r.err, /^error: the certificate of the coordinator at https:\/\/127\.0\.0\.1:\d+ is not trusted \(/);
    assert.match(r.err, /set GPUX_CA_FILE \(or --ca-file\) to your CA bundle/);
  });

  test('GPUX_CA_FILE or --ca-file (before or after the command) makes it work', async () => {
    for (const [env, extra] of [
      [{ GPUX_CA_FILE: pki.ca }, []],
      [{}, ['--ca-file', pki.ca]],
    ] as const) {
      const r = await jobList(env, ...extra);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, /no jobs|ID/i);
    }
    const after = await run({}, 'job', 'list', '--ca-file', pki.ca, '--coordinator', coord.url, '--token', operator);
    assert.equal(after.code, 0, after.err);
  });

  test('an unreadable CA file is a usage error naming its source and path', async () => {
    const missing = join(dir, 'nope.pem');
    const env = await jobList({ GPUX_CA_FILE: missing });
    assert.equal(env.code, 2);
    assert.match(env.err, new RegExp(`^error: GPUX_CA_FILE="${missing.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}" cannot be read \\(ENOENT\\)`));
    const flag = await jobList({ GPUX_CA_FILE: pki.ca }, '--ca-file', missing);
    assert.equal(flag.code, 2, 'the flag wins over the environment');
    assert.match(flag.err, /^error: --ca-file=".*nope\.pem" cannot be read/);
  });
});
