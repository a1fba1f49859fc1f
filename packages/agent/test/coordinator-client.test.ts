import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { buildCommitment, keyFingerprint, publicKeyFromRaw, SIGNATURE_HEADERS, verifySignature } from '@gpux/protocol';
import { CoordinatorApiError, CoordinatorClient, CoordinatorUnreachableError, loadOrCreateIdentity } from '../src/index.js';
import { tempDir } from './helpers.js';

interface Seen {
  method: string;
  url: string;
  body: string;
  contentType: string | undefined;
  verified: boolean;
}

async function server(t: { after(fn: () => unknown): void }, publicKey: string, answer: (req: Seen) => [number, unknown]) {
  const seen: Seen[] = [];
  const srv = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const h = (n: string) => String(req.headers[n] ?? '');
      const verified = verifySignature(
        { method: req.method ?? '', path: req.url ?? '', body, nodeId: h(SIGNATURE_HEADERS.node), timestamp: Number(h(SIGNATURE_HEADERS.timestamp)), nonce: h(SIGNATURE_HEADERS.nonce) },
        h(SIGNATURE_HEADERS.signature),
        publicKeyFromRaw(publicKey),
      );
      const s = { method: req.method ?? '', url: req.url ?? '', body, contentType: req.headers['content-type'], verified };
      seen.push(s);
      const [status, json] = answer(s);
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(json));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => srv.close(r)));
  return { url: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, seen };
}

describe('CoordinatorClient', () => {
  test('signs every request over method, path+query and body; parses answers', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const { url, seen } = await server(t, identity.publicKey, (req) => {
      if (req.url.startsWith('/v1/agent/work')) return [200, { assignments: [] }];
      if (req.url.endsWith('/start')) return [200, { ok: true, cancel: false }];
      return [200, { cancel: [{ attemptId: 'a-1' }], heartbeatIntervalMs: 1000, serverTime: 1 }];
    });
    const client = new CoordinatorClient({ baseUrl: `${url}/`, identity });
    assert.deepEqual(await client.heartbeat(['a-1', 'a-2']), { cancel: [{ attemptId: 'a-1' }], heartbeatIntervalMs: 1000, serverTime: 1 });
    assert.deepEqual(await client.work(10), { assignments: [] });
    assert.deepEqual(await client.start('a/1'), { ok: true, cancel: false });
    assert.deepEqual(
      seen.map((s) => [s.method, s.url, s.verified, s.contentType]),
      [
        ['POST', '/v1/agent/heartbeat', true, 'application/json'],
        ['GET', '/v1/agent/work?waitMs=10', true, undefined],
        ['POST', '/v1/agent/attempts/a%2F1/start', true, undefined],
      ],
    );
    assert.deepEqual(JSON.parse(seen[0]?.body ?? ''), { activeAttemptIds: ['a-1', 'a-2'] });
    assert.equal(seen[2]?.body, '');
  });

  test('refuse() and identity() use their routes (issue 19)', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const key = { publicKey: identity.publicKey, fingerprint: keyFingerprint(identity.publicKey), activeFrom: 1, endorsement: null };
    const { url, seen } = await server(t, identity.publicKey, (req) =>
      req.url.endsWith('/refuse') ? [200, { ok: true, ended: true }] : [200, { signingKey: key.fingerprint, keys: [key] }],
    );
    const client = new CoordinatorClient({ baseUrl: url, identity });
    assert.deepEqual(await client.refuse('a-1', 'x'.repeat(600)), { ok: true, ended: true });
    assert.deepEqual(await client.identity(), { signingKey: key.fingerprint, keys: [key] });
    assert.deepEqual(
      seen.map((s) => [s.method, s.url]),
      [
        ['POST', '/v1/agent/attempts/a-1/refuse'],
        ['GET', '/v1/coordinator/identity'],
      ],
    );
    assert.equal(JSON.parse(seen[0]?.body ?? '').reason.length, 512, 'the reason is cut to the protocol limit');
  });

  test('error bodies become typed errors', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const { url } = await server(t, identity.publicKey, (req) =>
      req.url.includes('result') ? [409, { error: { code: 'CONFLICT', message: 'attempt already ended' } }] : [503, { error: { code: 'UNAVAILABLE', message: 'draining' } }],
    );
    const client = new CoordinatorClient({ baseUrl: url, identity });
    const commitment = buildCommitment({ jobId: 'j-1', attemptId: 'a-1', nodeId: identity.nodeId, inputs: [], outputDigest: '0'.repeat(64), exitCode: 0, metrics: { durationMs: 1 } });
    const report = { outcome: 'succeeded' as const, exitCode: 0, error: null, outputDigest: '0'.repeat(64), outputs: [], metrics: { durationMs: 1 }, commitment, commitmentSignature: client.signCommitment(commitment) };
    await assert.rejects(client.result('a-1', report), (e) => e instanceof CoordinatorApiError && e.status === 409 && e.code === 'CONFLICT' && /already ended/.test(e.message));
    await assert.rejects(client.heartbeat([]), CoordinatorUnreachableError);
  });

  test('a malformed answer is an error, not a crash later', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const { url } = await server(t, identity.publicKey, () => [200, { assignments: 'nope' }]);
    await assert.rejects(new CoordinatorClient({ baseUrl: url, identity }).work(0), /unexpected answer/);
  });

  test('nobody listening: CoordinatorUnreachableError', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const srv = http.createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const port = (srv.address() as AddressInfo).port;
    await new Promise((r) => srv.close(r));
    await assert.rejects(new CoordinatorClient({ baseUrl: `http://127.0.0.1:${port}`, identity }).heartbeat([]), (e) => e instanceof CoordinatorUnreachableError && /ECONNREFUSED/.test(e.message));
  });

  test('an aborted long-poll rejects without counting as an outage', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const srv = http.createServer(() => {}); // never answers
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    t.after(() => {
      srv.closeAllConnections();
      return new Promise((r) => srv.close(r));
    });
    const ac = new AbortController();
    const p = new CoordinatorClient({ baseUrl: `http://127.0.0.1:${(srv.address() as AddressInfo).port}`, identity }).work(20_000, ac.signal);
    setTimeout(() => ac.abort(), 50);
    await assert.rejects(p, (e) => !(e instanceof CoordinatorUnreachableError));
  });
});
