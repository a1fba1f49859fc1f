/** The agent's client with several coordinator URLs: every call moves on after an outage, signed anew, and sticks. */
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { publicKeyFromRaw, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';
import { CoordinatorApiError, CoordinatorClient, CoordinatorUnreachableError, coordinatorUrlsOf, loadAgentConfig, loadOrCreateIdentity } from '../src/index.js';
import { tempDir } from './helpers.js';

const HEARTBEAT = { cancel: [], heartbeatIntervalMs: 1000, serverTime: 1 };

interface Seen {
  url: string;
  nonce: string;
  verified: boolean;
}

/** A coordinator stand-in: checks each request's signature, answers with `answer` (null: drop the connection). */
async function server(t: { after(fn: () => unknown): void }, publicKey: string, answer: (req: Seen) => [number, unknown] | null) {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const h = (n: string) => String(req.headers[n] ?? '');
      const body = Buffer.concat(chunks).toString('utf8');
      const verified = verifySignature(
        { method: req.method ?? '', path: req.url ?? '', body, nodeId: h(SIGNATURE_HEADERS.node), timestamp: Number(h(SIGNATURE_HEADERS.timestamp)), nonce: h(SIGNATURE_HEADERS.nonce) },
        h(SIGNATURE_HEADERS.signature),
        publicKeyFromRaw(publicKey),
      );
      const s = { url: req.url ?? '', nonce: h(SIGNATURE_HEADERS.nonce), verified };
      seen.push(s);
      const a = answer(s);
      if (a === null) return void req.socket.destroy();
      res.writeHead(a[0], { 'content-type': 'application/json' });
      res.end(JSON.stringify(a[1]));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => {
    srv.closeAllConnections();
    return new Promise((r) => srv.close(r));
  });
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

async function refusedUrl(): Promise<string> {
  const srv = http.createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as AddressInfo;
  await new Promise((r) => srv.close(r));
  return `http://127.0.0.1:${port}`;
}

describe('agent coordinator URLs', () => {
  test('--coordinator takes a comma-separated list; every URL is checked', () => {
    const c = loadAgentConfig({ GPUX_COORDINATOR_URL: 'https://a.example:8080/, https://b.example:8080' });
    assert.equal(c.coordinatorUrl, 'https://a.example:8080');
    assert.deepEqual(coordinatorUrlsOf(c), ['https://a.example:8080', 'https://b.example:8080']);
    assert.equal(loadAgentConfig({}, { coordinatorUrl: 'http://c' }).coordinatorUrls, undefined, 'one URL: no list');
    assert.deepEqual(coordinatorUrlsOf(loadAgentConfig({}, { coordinatorUrl: 'http://c' })), ['http://c']);
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'http://a,,http://b' }), /coordinatorUrl: URL 2 of 3: empty \(several coordinators: comma-separated/);
    assert.throws(() => loadAgentConfig({}, { coordinatorUrl: 'http://a,b:1' }), /coordinatorUrl: URL 2 of 2: "b:1" is not a valid http\(s\) URL/);
    // The enrollment token may go to any of them, so each must be safe for it; pins need https everywhere.
    const token = 'gpux_enroll_secret';
    assert.throws(() => loadAgentConfig({ GPUX_ENROLLMENT_TOKEN: token }, { coordinatorUrl: 'https://a.example,http://10.0.0.5:8080' }), /refusing to send an enrollment token.*10\.0\.0\.5/);
    assert.throws(
      () => loadAgentConfig({}, { coordinatorUrl: 'https://a.example,http://127.0.0.1:1', coordinatorCertSha256: 'ab'.repeat(32) }),
      /certificate pins need an https coordinator URL \(got http:\/\/127\.0\.0\.1:1\)/,
    );
  });

  test('a refused URL, a dropped connection and a 502/503/504 each move a call on, signed with a fresh nonce', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    for (const outage of ['refused', 'dropped', 502, 503, 504] as const) {
      const down = outage === 'refused' ? { url: await refusedUrl(), seen: [] as Seen[] } : await server(t, identity.publicKey, () => (outage === 'dropped' ? null : [outage, { error: 'bad gateway' }]));
      const up = await server(t, identity.publicKey, () => [200, HEARTBEAT]);
      const client = new CoordinatorClient({ baseUrl: [down.url, up.url], identity });
      assert.deepEqual(await client.heartbeat([]), HEARTBEAT, String(outage));
      assert.equal(client.baseUrl, up.url, `${outage}: sticks to the URL that answered`);
      await client.heartbeat([]);
      assert.equal(down.seen.length, outage === 'refused' ? 0 : 1, `${outage}: the failed URL is not asked again`);
      assert.equal(up.seen.length, 2);
      assert.ok(up.seen.every((s) => s.verified));
      const nonces = [...down.seen, ...up.seen].map((s) => s.nonce);
      assert.equal(new Set(nonces).size, nonces.length, 'every try has its own nonce');
    }
  });

  test('the work long-poll and registration fail over too; an error answer is kept, not retried elsewhere', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const down = await refusedUrl();
    const up = await server(t, identity.publicKey, (req) => {
      if (req.url.startsWith('/v1/agent/work')) return [200, { assignments: [] }];
      return [404, { error: { code: 'NOT_FOUND', message: 'unknown attempt' } }];
    });
    const client = new CoordinatorClient({ baseUrl: [down, up.url], identity });
    assert.deepEqual(await client.work(10), { assignments: [] });
    const other = new CoordinatorClient({ baseUrl: [up.url, down], identity });
    await assert.rejects(other.start('a-1'), (e: unknown) => e instanceof CoordinatorApiError && e.status === 404);
    assert.equal(other.baseUrl, up.url);
  });

  test('all down: the error names every URL; the caller tries again later from the next one', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const a = await refusedUrl();
    const busy = await server(t, identity.publicKey, () => [503, { error: { code: 'UNAVAILABLE', message: 'the store is unreachable' } }]);
    const client = new CoordinatorClient({ baseUrl: [a, busy.url], identity });
    const err = await client.heartbeat([]).catch((e: unknown) => e);
    assert.ok(err instanceof CoordinatorUnreachableError, String(err));
    assert.match(err.message, /^no coordinator answered POST \/v1\/agent\/heartbeat: /);
    assert.ok(err.message.includes(`coordinator ${a} unreachable: ECONNREFUSED`), err.message);
    assert.ok(err.message.includes(`${busy.url}: POST /v1/agent/heartbeat: the store is unreachable`), err.message);
  });

  test('a streamed upload is not resent; its retry starts at the next URL', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const dropping = await server(t, identity.publicKey, () => null);
    const up = await server(t, identity.publicKey, () => [200, { uploadId: 'u-1', offset: 3, size: 3, chunkBytes: 1024, blob: null }]);
    const client = new CoordinatorClient({ baseUrl: [dropping.url, up.url], identity });
    const body = async function* () {
      yield new Uint8Array([1, 2, 3]);
    };
    const err = await client.appendUpload('u-1', 'tok', 0, 3, body()).catch((e: unknown) => e);
    assert.ok(err instanceof CoordinatorUnreachableError, String(err));
    assert.match(err.message, /a streamed upload is not resent here/);
    assert.equal(up.seen.length, 0);
    assert.equal(client.baseUrl, up.url, 'the next try goes to the other URL');
  });
});
