/**
 * The coordinator serves HTTPS itself: real certificates from a throwaway CA made with the openssl CLI, HSTS on
 * every response, plain HTTP refused, and a certificate swap picked up by new connections without a restart
 * while a kept-alive connection opened before carries on.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { TLSSocket } from 'node:tls';
import { certFingerprint, makeTestCa, OPENSSL_WHY, opensslAvailable, requireComponent } from '@gpux/testing';
import { loadCoordinatorConfig } from '../src/config.js';
import { HSTS } from '../src/http/security-headers.js';
import { createLogger } from '../src/logger.js';
import { startCoordinator } from '../src/start.js';
import { type Harness, startHarness } from './helpers.js';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  fingerprint: string;
  reused: boolean;
}

/** GET over HTTPS trusting only the test CA; `agent` undefined: a fresh connection (no session reuse). */
function get(url: string, ca: Buffer, agent?: https.Agent): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, agent ? { agent } : { ca, agent: false }, (res) => {
      const fingerprint = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, fingerprint, reused: req.reusedSocket }));
    });
    req.on('error', reject);
  });
}

const fingerprintOf = certFingerprint;

async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (ok(v)) return v;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('the coordinator over HTTPS', requireComponent('openssl', opensslAvailable(), OPENSSL_WHY), () => {
  let dir: string;
  let ca: Buffer;
  let h: Harness;
  /** The coordinator's error lines (JSON), to see a refused reload logged. */
  const errors: string[] = [];
  const file = (name: string) => join(dir, name);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-tls-test-'));
    // A CA and two server certificates (s1, s2) for 127.0.0.1 and localhost, each with its own key.
    makeTestCa(dir, { servers: ['s1', 's2'] });
    ca = readFileSync(file('ca.pem'));
    // The served pair lives at its own paths, which the test overwrites like a renewal would.
    writeFileSync(file('cert.pem'), readFileSync(file('s1.pem')));
    writeFileSync(file('key.pem'), readFileSync(file('s1.key')));
    h = await startHarness({ tlsCertFile: file('cert.pem'), tlsKeyFile: file('key.pem') }, {
      tlsWatchIntervalMs: 100,
      logger: createLogger('error', { write: (line: string) => void errors.push(line) }),
    });
  });

  after(async () => {
    await h?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('serves HTTPS with HSTS and reports an https:// url', async () => {
    assert.match(h.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const res = await get(`${h.url}/healthz`, ca);
    assert.equal(res.status, 200);
    assert.equal(res.headers['strict-transport-security'], HSTS);
    assert.equal(res.fingerprint, fingerprintOf(file('s1.pem')));
  });

  test('plain HTTP to the same port gets no answer', async () => {
    const plain = h.url.replace(/^https:/, 'http:');
    await assert.rejects(
      new Promise((resolve, reject) => {
        const req = http.get(`${plain}/healthz`, (res) => resolve(res.statusCode));
        req.on('error', reject);
        req.setTimeout(5000, () => req.destroy(new Error('timed out')));
      }),
    );
  });

  test('a swapped certificate reaches new connections; a bad pair is refused and a kept-alive connection stays', async () => {
    const kept = new https.Agent({ keepAlive: true, maxSockets: 1, ca });
    try {
      const first = await get(`${h.url}/healthz`, ca, kept);
      assert.equal(first.fingerprint, fingerprintOf(file('s1.pem')));

      // Half a renewal (the new certificate, the old key) is not a pair: the old one keeps being served.
      writeFileSync(file('cert.pem'), readFileSync(file('s2.pem')));
      await until('the refused reload logged', async () => errors.join(''), (log) => log.includes('TLS certificate change not applied') && log.includes('not a usable pair'));
      assert.equal((await get(`${h.url}/healthz`, ca)).fingerprint, fingerprintOf(file('s1.pem')));

      writeFileSync(file('key.pem'), readFileSync(file('s2.key')));
      const fresh = await until('the new certificate', () => get(`${h.url}/healthz`, ca), (r) => r.fingerprint === fingerprintOf(file('s2.pem')));
      assert.equal(fresh.status, 200);

      // The connection opened before the swap is still open, still on the certificate it was made with.
      const again = await get(`${h.url}/healthz`, ca, kept);
      assert.equal(again.status, 200);
      assert.equal(again.reused, true, 'the kept-alive connection was not dropped');
      assert.equal(again.fingerprint, fingerprintOf(file('s1.pem')));
    } finally {
      kept.destroy();
    }
  });

  test('a mismatched pair or a missing file at start is a clear error naming the files', async () => {
    const start = (tlsCertFile: string, tlsKeyFile: string) =>
      startCoordinator(loadCoordinatorConfig({}, { dataDir: file('unused'), port: 0, logLevel: 'silent', market: false, challenge: 'off', tlsCertFile, tlsKeyFile }));
    await assert.rejects(start(file('s1.pem'), file('s2.key')), (err: Error) => {
      assert.match(err.message, /GPUX_TLS_CERT_FILE=.*s1\.pem.*GPUX_TLS_KEY_FILE=.*s2\.key.*not a usable pair/);
      return true;
    });
    await assert.rejects(start(file('nope.pem'), file('s1.key')), /GPUX_TLS_CERT_FILE=.*nope\.pem.* does not exist/);
    writeFileSync(file('garbage.pem'), 'not a certificate');
    await assert.rejects(start(file('garbage.pem'), file('s1.key')), /not a usable pair/);
  });
});
