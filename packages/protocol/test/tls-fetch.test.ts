/**
 * tlsFetch against a real HTTPS server whose certificate a throwaway CA signed (openssl CLI): without the CA the
 * system roots refuse it; with it the call goes through; pins of the leaf or of the CA pass, a wrong pin is
 * refused even though the chain verifies; a CA file that cannot be read is an error naming the variable and path.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { certFingerprint, makeTestCa, OPENSSL_WHY, opensslAvailable, requireComponent, type TestCa } from '@gpux/testing';
import { normalizePin, tlsFetch, tlsFetchFromFiles } from '../src/tls-fetch.js';

/** The message of the innermost cause: undici reports TLS failures as "fetch failed" with the reason inside. */
function rootMessage(err: unknown): string {
  let e = err as { cause?: unknown; message?: string } | undefined;
  while (e?.cause) e = e.cause as typeof e;
  return e?.message ?? String(err);
}

describe('normalizePin', () => {
  test('accepts hex with or without colons, any case; refuses anything else with the reason', () => {
    const hex = 'ab'.repeat(32);
    assert.equal(normalizePin(hex.toUpperCase()), hex);
    assert.equal(normalizePin(hex.match(/../g)?.join(':') ?? ''), hex);
    assert.throws(() => normalizePin('abcd'), /not a sha256 fingerprint \(64 hex characters/);
    assert.throws(() => normalizePin('zz'.repeat(32)), /not a sha256 fingerprint/);
  });
});

describe('tlsFetch with a private CA and pins', requireComponent('openssl', opensslAvailable(), OPENSSL_WHY), () => {
  let dir: string;
  let pki: TestCa;
  let other: TestCa;
  let server: Server;
  let url: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-tls-fetch-'));
    pki = makeTestCa(dir, { servers: ['leaf'] });
    other = makeTestCa(dir, { servers: ['stranger'], prefix: 'other-' });
    const pair = pki.servers.leaf;
    assert.ok(pair);
    server = createServer({ cert: readFileSync(pair.cert), key: readFileSync(pair.key) }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });

  after(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const ca = () => readFileSync(pki.ca);
  const leafPin = () => certFingerprint(pki.servers.leaf?.cert ?? '');

  test('the system roots do not trust the private CA', async () => {
    await assert.rejects(tlsFetch()(url), (err) => /self[- ]signed|unable to (get|verify)/i.test(rootMessage(err)));
  });

  test('with the CA bundle the call goes through', async () => {
    const res = await tlsFetch({ ca: ca() })(url);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
  });

  test('another CA does not vouch for the server', async () => {
    await assert.rejects(tlsFetch({ ca: readFileSync(other.ca) })(url), (err) => /unable to (get|verify)|self[- ]signed/i.test(rootMessage(err)));
  });

  test('pinning the leaf passes', async () => {
    assert.equal((await tlsFetch({ ca: ca(), pins: [leafPin()] })(url)).status, 200);
  });

  test('pinning the issuing CA passes (it survives a renewal of the leaf)', async () => {
    assert.equal((await tlsFetch({ ca: ca(), pins: [certFingerprint(pki.ca).toLowerCase()] })(url)).status, 200);
  });

  test('a wrong pin is refused although the chain verifies', async () => {
    const wrong = certFingerprint(other.servers.stranger?.cert ?? '');
    await assert.rejects(tlsFetch({ ca: ca(), pins: [wrong] })(url), (err) => /matches none of the pinned fingerprints/.test(rootMessage(err)));
  });

  test('tlsFetchFromFiles reads the bundle; an unreadable or non-PEM file names the variable and the path', async () => {
    assert.equal((await tlsFetchFromFiles({ caFile: pki.ca })(url)).status, 200);
    const missing = join(dir, 'nope.pem');
    assert.throws(() => tlsFetchFromFiles({ caFile: missing }), (err: Error) => err.message.includes(`GPUX_CA_FILE=${JSON.stringify(missing)}`) && /ENOENT/.test(err.message));
    const junk = join(dir, 'junk.pem');
    writeFileSync(junk, 'not a certificate');
    assert.throws(() => tlsFetchFromFiles({ caFile: junk, source: '--ca-file' }), /--ca-file=.*junk\.pem.*holds no PEM certificate/);
  });
});
