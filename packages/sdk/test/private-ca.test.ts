/**
 * A coordinator behind a certificate from a private CA (issue 19, "Private CA friendly"): a real HTTPS server with
 * a throwaway CA made by the openssl CLI. Without the CA the client fails with GpuxTlsError (untrusted) and does
 * not retry it; with `caFile` or `ca` it goes through; an unreadable CA file is refused when the client is built.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeTestCa, OPENSSL_WHY, opensslAvailable, requireComponent, type TestCa } from '@gpux/testing';
import { GpuxClient, GpuxClientError, GpuxConnectionError, GpuxTlsError } from '../src/index.js';

describe('GpuxClient with a private CA', requireComponent('openssl', opensslAvailable(), OPENSSL_WHY), () => {
  let dir: string;
  let pki: TestCa;
  let server: Server;
  let url: string;
  /** TCP connections the server accepted: one per try. */
  let connections = 0;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-sdk-ca-'));
    pki = makeTestCa(dir);
    const pair = pki.servers.server;
    assert.ok(pair);
    server = createServer({ cert: readFileSync(pair.cert), key: readFileSync(pair.key) }, (req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(req.url === '/healthz' ? JSON.stringify({ status: 'ok' }) : JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'down' } }));
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('without the CA: GpuxTlsError that says the certificate is not trusted and how to fix it', async () => {
    const err = await new GpuxClient({ url }).health().catch((e: unknown) => e);
    assert.ok(err instanceof GpuxTlsError, String(err));
    assert.ok(err instanceof GpuxConnectionError, 'still a connection error for callers that catch those');
    assert.equal(err.untrusted, true);
    assert.match(err.message, /the certificate of the coordinator at https:\/\/127\.0\.0\.1:\d+ is not trusted \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)/);
    assert.match(err.message, /caFile or ca/);
  });

  test('a TLS failure is not retried by submitJob', async () => {
    const before = connections;
    const client = new GpuxClient({ url, token: 'gpux_x', submitRetries: 3, retryDelayMs: 1 });
    await assert.rejects(client.submitJob({ name: 'x', image: 'busybox', command: ['true'] }), GpuxTlsError);
    assert.equal(connections - before, 1, 'one try, no retries');
  });

  test('with caFile or ca the call goes through', async () => {
    assert.deepEqual(await new GpuxClient({ url, caFile: pki.ca }).health(), { status: 'ok' });
    assert.deepEqual(await new GpuxClient({ url, ca: readFileSync(pki.ca) }).health(), { status: 'ok' });
    assert.deepEqual(await new GpuxClient({ url, ca: readFileSync(pki.ca, 'utf8') }).health(), { status: 'ok' });
  });

  test('an unreadable CA file, or fetch with a CA, is refused when the client is built', () => {
    const missing = join(dir, 'missing.pem');
    assert.throws(
      () => new GpuxClient({ url, caFile: missing }),
      (err: Error) => err instanceof GpuxClientError && err.message.includes(`caFile=${JSON.stringify(missing)} cannot be read (ENOENT)`),
    );
    assert.throws(() => new GpuxClient({ url, caFile: pki.ca, fetch: globalThis.fetch }), /either fetch or ca \/ caFile/);
    assert.throws(() => new GpuxClient({ url, caFile: pki.ca, ca: 'x' }), /either ca .* or caFile/);
  });
});
