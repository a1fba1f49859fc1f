/**
 * Abuse suite, issue 15: the peer summary exchange (POST /v1/federation/summary) against a real coordinator.
 * Unsigned, signed by a key that is not a peer's, a peer's key in the header over another key's signature, a
 * replayed nonce, a stale timestamp, an oversized, malformed or absurd body: each refused with its code, and
 * nothing recorded. A peer added at one coordinator's URL with another's key is marked unauthorized (the answer's
 * key is not the pinned one). The peer API is for operators, and checks what it is given.
 *
 * The forwarded-job routes (POST /v1/federation/jobs, GET …/:id, POST …/:id/cancel) the same way, and past
 * authentication: garbage specs, what the region cannot run, a market mismatch, the credit line exhausted, another
 * peer's (or a buyer's) job id. Every refusal after authentication is signed; nothing is made or touched.
 *
 * Outputs: a peer reads the bytes of the outputs its own ended job's status lists, and nothing else (another
 * peer's, a buyer's blob, a blob that is no output: 404). A hostile peer whose bytes differ from its signed listing
 * (other bytes, more bytes, a longer declared length), or whose listing contradicts itself (inline content that is
 * not its entry's, one path twice), is refused each try; after the tries the home lets the lease run out, and
 * nothing of those bytes is kept for the buyer. One lie and then the listed bytes: the next try brings them home.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  FEDERATION_HEADERS,
  type ForwardedJobView,
  generateNodeKeyPair,
  keyFingerprint,
  MAX_FORWARD_BODY_BYTES,
  MAX_SUMMARY_CLASSES,
  type NodeKeyPair,
  OUTPUT_UPLOAD_TOKEN_HEADER,
  type OutputFile,
  outputRootDigest,
  peerCanonicalAnswer,
  peerCanonicalRequest,
  publicKeyFromRaw,
  type RegionSummary,
  type ResultReport,
  signEd25519,
  verifyEd25519,
  WorkResponse,
} from '@gpux/protocol';
import { seededBytes, sha256Of } from '@gpux/testing';
import { MAX_TRIES } from '../../src/federation/forward-outputs.js';
import { placeholderCommitment, UNSIGNED } from '../commitment-helpers.js';
import { call, type Harness, type Res, spec, startHarness, TestAgent, waitFor } from '../helpers.js';

const PATH = '/v1/federation/summary';

const summary = (over: Partial<RegionSummary> = {}): RegionSummary => ({
  region: 'peer-one',
  sentAt: Date.now(),
  classes: [{ class: 'nvidia-h100-80gb', freeGpus: 3, totalGpus: 4, priceIndex: 2_000_000 }],
  queueDepth: 1,
  placementWaitP50Ms: null,
  ...over,
});

interface SignOpts {
  /** The key whose public part goes in the header (default: the signer). */
  headerKey?: string;
  timestamp?: number;
  nonce?: string;
}

/** A summary exchange signed by `keys`, sent as `raw` bytes. */
async function send(url: string, keys: NodeKeyPair, raw: string, o: SignOpts = {}) {
  const timestamp = o.timestamp ?? Date.now();
  const nonce = o.nonce ?? randomBytes(16).toString('hex');
  const keyId = keyFingerprint(keys.publicKey);
  const signature = signEd25519(peerCanonicalRequest({ method: 'POST', path: PATH, body: raw, timestamp, nonce, keyId }), createPrivateKey(keys.privateKeyPem));
  const headers = {
    [FEDERATION_HEADERS.key]: o.headerKey ?? keys.publicKey,
    [FEDERATION_HEADERS.timestamp]: String(timestamp),
    [FEDERATION_HEADERS.nonce]: nonce,
    [FEDERATION_HEADERS.signature]: signature,
  };
  return { res: await call(url, 'POST', PATH, { raw, headers }), nonce };
}

describe('abuse: peer summary exchanges', () => {
  let h: Harness;
  let other: Harness;
  const peerKeys = generateNodeKeyPair();
  let peerId: string;

  before(async () => {
    [h, other] = await Promise.all([startHarness({ region: 'home', peerSummaryMs: 100 }), startHarness({ region: 'other', peerSummaryMs: 100 })]);
    const added = await call(h.url, 'POST', '/v1/federation/peers', { token: h.operator, body: { url: 'http://127.0.0.1:9', key: peerKeys.publicKey, name: 'peer-one' } });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    peerId = added.body.peer.id;
  });
  after(async () => {
    await Promise.all([h?.close(), other?.close()]);
  });

  const peerRow = async () => (await h.coord.store.getPeer(peerId))!;

  test('a signed summary from the peer is recorded and answered with this region summary, signed over the request nonce', async () => {
    const raw = JSON.stringify({ summary: summary() });
    const { res, nonce } = await send(h.url, peerKeys, raw);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.summary.region, 'home');
    const answerKey = res.headers.get(FEDERATION_HEADERS.key) ?? '';
    const identity = await call(h.url, 'GET', '/v1/coordinator/identity');
    assert.equal(keyFingerprint(answerKey), identity.body.signingKey, "the answer names the coordinator's signing key");
    const signature = res.headers.get(FEDERATION_HEADERS.signature) ?? '';
    assert.ok(verifyEd25519(peerCanonicalAnswer(nonce, JSON.stringify(res.body), keyFingerprint(answerKey)), signature, publicKeyFromRaw(answerKey)));
    assert.ok(!verifyEd25519(peerCanonicalAnswer('another-nonce', JSON.stringify(res.body), keyFingerprint(answerKey)), signature, publicKeyFromRaw(answerKey)), 'bound to this request');
    const row = await peerRow();
    assert.equal(row.summary?.classes[0]?.freeGpus, 3);
    assert.ok(row.lastSeenAt !== null);
  });

  test('unsigned, unknown key, a peer key over another signature, replay, stale: 401, nothing recorded', async () => {
    const raw = JSON.stringify({ summary: summary({ queueDepth: 999 }) });
    const unsigned = await call(h.url, 'POST', PATH, { raw });
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.body.error.code, 'SIGNATURE_INVALID');
    assert.match(unsigned.body.error.message, /missing or malformed x-gpux-peer-key/);

    const stranger = generateNodeKeyPair();
    const unknown = (await send(h.url, stranger, raw)).res;
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.code, 'UNAUTHORIZED');
    assert.match(unknown.body.error.message, /is not a peer of region home: its operator adds it with gpux region peer add/);

    // The stranger claims the peer's key in the header: its signature does not verify under that key.
    const impostor = (await send(h.url, stranger, raw, { headerKey: peerKeys.publicKey })).res;
    assert.equal(impostor.status, 401);
    assert.equal(impostor.body.error.code, 'SIGNATURE_INVALID');
    assert.match(impostor.body.error.message, /bad signature/);

    assert.notEqual((await peerRow()).summary?.queueDepth, 999, 'nothing recorded from refused requests');

    const first = await send(h.url, peerKeys, raw);
    assert.equal(first.res.status, 200);
    const replay = (await send(h.url, peerKeys, raw, { nonce: first.nonce })).res;
    assert.equal(replay.status, 401);
    assert.match(replay.body.error.message, /replay/);

    const stale = (await send(h.url, peerKeys, raw, { timestamp: Date.now() - 10 * 60_000 })).res;
    assert.equal(stale.status, 401);
    assert.match(stale.body.error.message, /more than 60000 ms from this coordinator's clock/);
    const future = (await send(h.url, peerKeys, raw, { timestamp: Date.now() + 10 * 60_000 })).res;
    assert.equal(future.status, 401);

    const badKey = (await send(h.url, peerKeys, raw, { headerKey: 'AAAA' })).res;
    assert.equal(badKey.status, 401);
  });

  test('an oversized, malformed or absurd body is refused (413, 400) and not recorded', async () => {
    const kept = (await peerRow()).summary;
    const huge = JSON.stringify({ summary: summary(), pad: 'x'.repeat(70 * 1024) });
    const big = (await send(h.url, peerKeys, huge)).res;
    assert.equal(big.status, 413, JSON.stringify(big.body));
    assert.equal(big.body.error.code, 'BODY_TOO_LARGE');

    const notJson = (await send(h.url, peerKeys, '{"summary":')).res;
    assert.equal(notJson.status, 400);
    assert.equal(notJson.body.error.code, 'REQUEST_INVALID');

    const absurd: Array<[string, unknown]> = [
      ['no summary', {}],
      ['negative free GPUs', { summary: summary({ classes: [{ class: 'nvidia-h100-80gb', freeGpus: -1, totalGpus: 4, priceIndex: 1 }] }) }],
      ['a billion billion GPUs', { summary: summary({ classes: [{ class: 'nvidia-h100-80gb', freeGpus: 1e18, totalGpus: 1e18, priceIndex: 1 }] }) }],
      ['a fractional price', { summary: summary({ classes: [{ class: 'nvidia-h100-80gb', freeGpus: 1, totalGpus: 1, priceIndex: 0.5 }] }) }],
      ['a queue past a billion', { summary: summary({ queueDepth: 2e9 }) }],
      ['a wait of years', { summary: summary({ placementWaitP50Ms: 10 * 365 * 86_400_000 }) }],
      ['a region with control characters', { summary: summary({ region: 'eu\u001b[31m' }) }],
      ['a class name with a newline', { summary: summary({ classes: [{ class: 'h100\nx', freeGpus: 1, totalGpus: 1, priceIndex: 1 }] }) }],
      [
        'too many classes',
        { summary: summary({ classes: Array.from({ length: MAX_SUMMARY_CLASSES + 1 }, (_, i) => ({ class: `c${i}`, freeGpus: 0, totalGpus: 0, priceIndex: 0 })) }) },
      ],
    ];
    for (const [what, body] of absurd) {
      const r = (await send(h.url, peerKeys, JSON.stringify(body))).res;
      assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'REQUEST_INVALID', what);
    }
    assert.deepEqual((await peerRow()).summary, kept, 'nothing recorded');
  });

  test("a peer added at one coordinator's URL with another key is unauthorized: the answer is signed by the key of who answers", async () => {
    const homeKey = (await call(h.url, 'GET', '/v1/federation/peers', { token: h.operator })).body.self.publicKey as string;
    // `other` knows home (so it answers), but home pins a made-up key for other's URL.
    assert.equal((await call(other.url, 'POST', '/v1/federation/peers', { token: other.operator, body: { url: h.url, key: homeKey } })).status, 201);
    const wrong = generateNodeKeyPair();
    const added = await call(h.url, 'POST', '/v1/federation/peers', { token: h.operator, body: { url: other.url, key: wrong.publicKey, name: 'wrong-key' } });
    assert.equal(added.status, 201);
    const peer = await waitFor(async () => {
      const p = await h.coord.store.getPeer(added.body.peer.id);
      return p?.status === 'unauthorized' ? p : undefined;
    }, 'the peer marked unauthorized');
    assert.match(peer.lastError ?? '', /answered with key [0-9a-f]{64}, not the pinned/);
    assert.equal(peer.summary, null, "nothing from a key we did not pin");
    // The peer at 127.0.0.1:9 (nothing listens) is unreachable, and backs off.
    const dead = await waitFor(async () => {
      const p = await peerRow();
      return p.status === 'unreachable' ? p : undefined;
    }, 'the dead peer marked unreachable');
    assert.match(dead.lastError ?? '', /cannot reach http:\/\/127\.0\.0\.1:9/);
    assert.ok(dead.nextTryAt !== null && dead.failures >= 1);
  });

  test('the peer API is for operators and checks what it is given', async () => {
    const buyer = await h.buyer();
    assert.equal((await call(h.url, 'GET', '/v1/federation/peers', { token: buyer })).status, 403);
    assert.equal((await call(h.url, 'POST', '/v1/federation/peers', { token: buyer, body: { url: 'https://x.example', key: 'a'.repeat(64) } })).status, 403);
    const add = (body: unknown) => call(h.url, 'POST', '/v1/federation/peers', { token: h.operator, body });
    const cases: Array<[unknown, number, RegExp]> = [
      [{ url: 'https://x.example', key: 'not-a-key' }, 400, /key: give the peer coordinator's key fingerprint/],
      [{ url: 'ftp://x.example', key: 'a'.repeat(64) }, 400, /is not http: or https:/],
      [{ url: 'https://user:pw@x.example', key: 'a'.repeat(64) }, 400, /without credentials/],
      [{ url: 'https://x.example', key: 'a'.repeat(64), name: 'bad\nname' }, 400, /name:/],
      [{ url: 'https://x.example', key: 'a'.repeat(64), extra: 1 }, 400, /extra|Unrecognized/],
      [{ url: 'http://127.0.0.1:9/', key: 'c'.repeat(64) }, 409, /already has the URL/],
      [{ url: 'https://y.example', key: peerKeys.publicKey }, 409, /already has the key/],
    ];
    const own = (await call(h.url, 'GET', '/v1/federation/peers', { token: h.operator })).body.self.keyFingerprint as string;
    cases.push([{ url: 'https://z.example', key: own }, 400, /this coordinator's own key/]);
    for (const [body, status, message] of cases) {
      const r = await add(body);
      assert.equal(r.status, status, `${JSON.stringify(body)}: ${JSON.stringify(r.body)}`);
      assert.match(r.body.error.message, message);
    }
    assert.equal((await call(h.url, 'POST', '/v1/federation/peers/peer-nope/remove', { token: h.operator })).status, 404);
  });
});

/** A peer call signed by `keys` (method, path with its query, raw body), with the answer and the nonce it was for. */
async function sendAs(url: string, keys: NodeKeyPair, method: 'GET' | 'POST', path: string, raw: string, o: SignOpts = {}) {
  const timestamp = o.timestamp ?? Date.now();
  const nonce = o.nonce ?? randomBytes(16).toString('hex');
  const keyId = keyFingerprint(keys.publicKey);
  const signature = signEd25519(peerCanonicalRequest({ method, path, body: raw, timestamp, nonce, keyId }), createPrivateKey(keys.privateKeyPem));
  const headers: Record<string, string> = {
    [FEDERATION_HEADERS.key]: o.headerKey ?? keys.publicKey,
    [FEDERATION_HEADERS.timestamp]: String(timestamp),
    [FEDERATION_HEADERS.nonce]: nonce,
    [FEDERATION_HEADERS.signature]: signature,
  };
  return { res: await call(url, method, path, { headers, ...(raw === '' ? {} : { raw }) }), nonce };
}

/** Peer the receiver with two signing regions, "one" and "two" (unreachable URLs: only their requests matter); one's peer id. */
async function peerWithTwo(h: Harness, one: NodeKeyPair, two: NodeKeyPair): Promise<string> {
  const ids: string[] = [];
  for (const [keys, name, url] of [
    [one, 'one', 'http://127.0.0.1:9'],
    [two, 'two', 'http://127.0.0.1:10'],
  ] as const) {
    const added = await call(h.url, 'POST', '/v1/federation/peers', { token: h.operator, body: { url, key: keys.publicKey, name } });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    ids.push(added.body.peer.id);
  }
  return ids[0] as string;
}

describe('abuse: forwarded-job routes', () => {
  const USDC = 1_000_000;
  let h: Harness;
  const one = generateNodeKeyPair();
  const two = generateNodeKeyPair();
  let oneId: string;
  let signingKey: string;
  // Held per job: 3 USDC per GPU-hour × 1 GPU × 600 s = 0.5 USDC; the credit line takes two.
  const forward = (attempt: string, over: Record<string, unknown> = {}) => ({
    homeJobId: `job-home-${attempt}`,
    homeAttemptId: attempt,
    spec: { name: 'forwarded', image: 'busybox:1.36', command: ['echo', 'hi'], resources: { gpu: { count: 1 } }, timeoutSeconds: 600 },
    payment: { asset: 'usdc', capPerUnitHour: 3 * USDC },
    ...over,
  });
  const post = (keys: NodeKeyPair, body: unknown, o: SignOpts = {}) => sendAs(h.url, keys, 'POST', '/v1/federation/jobs', typeof body === 'string' ? body : JSON.stringify(body), o);
  /** The answer is signed by this coordinator over the request's nonce (a refusal too, once the peer is known). */
  const signedFor = (res: Res, nonce: string) => {
    const key = res.headers.get(FEDERATION_HEADERS.key) ?? '';
    return keyFingerprint(key) === signingKey && verifyEd25519(peerCanonicalAnswer(nonce, JSON.stringify(res.body), signingKey), res.headers.get(FEDERATION_HEADERS.signature) ?? '', publicKeyFromRaw(key));
  };

  before(async () => {
    h = await startHarness({ region: 'receiver', market: true, devMint: true, peerCredit: 1 * USDC, peerSummaryMs: 60_000 });
    oneId = await peerWithTwo(h, one, two);
    signingKey = (await call(h.url, 'GET', '/v1/coordinator/identity')).body.signingKey;
  });
  after(async () => {
    await h?.close();
  });

  test('a forward is held on the credit line, idempotent by the home attempt; past the line: 402, nothing made', async () => {
    const first = await post(one, forward('att-one-1'));
    assert.equal(first.res.status, 200, JSON.stringify(first.res.body));
    assert.ok(signedFor(first.res, first.nonce));
    assert.equal(first.res.body.created, true);
    const remote = first.res.body.job.remoteJobId as string;
    const job = (await call(h.url, 'GET', `/v1/jobs/${remote}`, { token: h.operator })).body.job;
    assert.equal(job.buyerId, `region:${oneId}`);
    assert.equal(job.payment.held, USDC / 2);

    const again = await post(one, forward('att-one-1'));
    assert.deepEqual([again.res.status, again.res.body.created, again.res.body.job.remoteJobId], [200, false, remote], 'the same attempt again: the same job');
    const changed = await post(one, forward('att-one-1', { spec: { ...forward('x').spec, command: ['rm', '-rf', '/'] } }));
    assert.equal(changed.res.status, 409);
    assert.equal(changed.res.body.error.code, 'IDEMPOTENCY_KEY_REUSED');

    assert.equal((await post(one, forward('att-one-2'))).res.status, 200);
    const over = await post(one, forward('att-one-3'));
    assert.equal(over.res.status, 402, JSON.stringify(over.res.body));
    assert.equal(over.res.body.error.code, 'INSUFFICIENT_FUNDS');
    assert.match(over.res.body.error.message, /credit line/);
    assert.ok(signedFor(over.res, over.nonce), 'a refusal after authentication is signed: the home may trust that nothing was made');
    const clearing = (await h.coord.store.clearingBalances()).find((c) => c.peerId === oneId);
    assert.equal(clearing?.balance, -USDC, 'two holds drawn, the third refused');
    const jobs = (await call(h.url, 'GET', '/v1/jobs?limit=100', { token: h.operator })).body.jobs.filter((j: { buyerId: string }) => j.buyerId === `region:${oneId}`);
    assert.equal(jobs.length, 2);
  });

  test('unsigned, unknown key, impostor, replay, oversize: refused before anything is read', async () => {
    const raw = JSON.stringify(forward('att-x'));
    const unsigned = await call(h.url, 'POST', '/v1/federation/jobs', { raw });
    assert.equal(unsigned.status, 401);
    assert.equal(unsigned.body.error.code, 'SIGNATURE_INVALID');
    const stranger = generateNodeKeyPair();
    const unknown = (await post(stranger, raw)).res;
    assert.equal(unknown.status, 401);
    assert.equal(unknown.body.error.code, 'UNAUTHORIZED');
    const impostor = (await post(stranger, raw, { headerKey: one.publicKey })).res;
    assert.equal(impostor.status, 401);
    assert.match(impostor.body.error.message, /bad signature/);
    const first = await post(two, forward('att-two-1'));
    assert.equal(first.res.status, 200);
    const replay = (await post(two, forward('att-two-1'), { nonce: first.nonce })).res;
    assert.equal(replay.status, 401);
    assert.match(replay.body.error.message, /replay/);
    const huge = JSON.stringify({ ...forward('att-two-2'), pad: 'x'.repeat(MAX_FORWARD_BODY_BYTES) });
    const big = (await post(two, huge)).res;
    assert.equal(big.status, 413);
    assert.equal(big.body.error.code, 'BODY_TOO_LARGE');
    // The status and cancel routes check the same way.
    assert.equal((await call(h.url, 'GET', `/v1/federation/jobs/${first.res.body.job.remoteJobId}`)).status, 401);
    assert.equal((await call(h.url, 'POST', `/v1/federation/jobs/${first.res.body.job.remoteJobId}/cancel`)).status, 401);
    assert.equal((await sendAs(h.url, stranger, 'GET', `/v1/federation/jobs/${first.res.body.job.remoteJobId}?logsAfter=0`, '')).res.status, 401);
  });

  test('garbage and what this region cannot run: 400 with why, signed, nothing made', async () => {
    const before = (await call(h.url, 'GET', '/v1/jobs?limit=100', { token: h.operator })).body.jobs.length;
    const blob = { path: 'data.bin', blob: 'a'.repeat(64), size: 10 };
    const cases: Array<[string, unknown, RegExp]> = [
      ['not JSON', '{"spec":', /./],
      ['no spec', { homeJobId: 'j', homeAttemptId: 'a-1', payment: null }, /spec/],
      ['a spec without an image', forward('att-g1', { spec: { name: 'x', command: ['true'] } }), /image/],
      ['an attempt id with a slash', forward('att/../x'), /homeAttemptId/],
      ['an unknown field', forward('att-g2', { extra: 1 }), /extra|Unrecognized/],
      ['a negative cap', forward('att-g3', { payment: { asset: 'usdc', capPerUnitHour: -1 } }), /capPerUnitHour/],
      ['no payment on a market region', forward('att-g4', { payment: null }), /runs a market: a forwarded job must carry its buyer's cap/],
      ['a blob input', forward('att-g5', { spec: { ...forward('x').spec, inputs: [blob] } }), /blob in its home region's blob store/],
      ['a cap below every floor', forward('att-g6', { payment: { asset: 'usdc', capPerUnitHour: 1 } }), /below the price floor/],
    ];
    for (const [what, body, message] of cases) {
      const { res, nonce } = await post(one, body);
      assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
      assert.match(res.body.error.message, message, what);
      // Fastify's own parse error comes before authentication's answer helper: only the rest are signed.
      if (what !== 'not JSON') assert.ok(signedFor(res, nonce), `${what}: signed`);
    }
    assert.equal((await call(h.url, 'GET', '/v1/jobs?limit=100', { token: h.operator })).body.jobs.length, before, 'nothing made');
  });

  test("another peer's job, or a buyer's, is NOT_FOUND to a peer: never read, never cancelled", async () => {
    const theirs = await post(two, forward('att-two-9'));
    assert.equal(theirs.res.status, 200);
    const remote = theirs.res.body.job.remoteJobId as string;
    const buyer = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: 10 * USDC } })).status, 201);
    const own = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: { ...forward('x').spec, maxPricePerGpuHour: 3 * USDC } } });
    assert.equal(own.status, 201, JSON.stringify(own.body));
    for (const id of [remote, own.body.job.id as string, 'job-nope']) {
      const read = await sendAs(h.url, one, 'GET', `/v1/federation/jobs/${id}?logsAfter=0`, '');
      assert.equal(read.res.status, 404, JSON.stringify(read.res.body));
      assert.equal(read.res.body.error.code, 'NOT_FOUND');
      assert.ok(signedFor(read.res, read.nonce));
      const cancel = await sendAs(h.url, one, 'POST', `/v1/federation/jobs/${id}/cancel`, '');
      assert.equal(cancel.res.status, 404);
    }
    for (const id of [remote, own.body.job.id as string]) {
      const j = (await call(h.url, 'GET', `/v1/jobs/${id}`, { token: h.operator })).body.job;
      assert.deepEqual([j.state, j.cancelRequested], ['queued', false], `${id} untouched`);
    }
    const mine = await sendAs(h.url, two, 'GET', `/v1/federation/jobs/${remote}?logsAfter=0`, '');
    assert.equal(mine.res.status, 200);
    assert.deepEqual([mine.res.body.job.state, mine.res.body.job.charged, mine.res.body.job.logs], ['queued', 0, []]);
    const badCursor = await sendAs(h.url, two, 'GET', `/v1/federation/jobs/${remote}?logsAfter=-5`, '');
    assert.equal(badCursor.res.status, 400);
    const cancelled = await sendAs(h.url, two, 'POST', `/v1/federation/jobs/${remote}/cancel`, '');
    assert.equal(cancelled.res.status, 200);
    assert.equal(cancelled.res.body.job.state, 'cancelled');
    // Ended: what its hold did not spend goes back to the credit line on the next status read.
    await sendAs(h.url, two, 'GET', `/v1/federation/jobs/${remote}?logsAfter=0`, '');
    const twoId = (await call(h.url, 'GET', '/v1/federation/peers', { token: h.operator })).body.peers.find((p: { name: string }) => p.name === 'two').id;
    const wallet = await h.coord.store.getBalance(`wallet:region:${twoId}`, 'usdc');
    const clearing = (await h.coord.store.clearingBalances()).find((c) => c.peerId === twoId)?.balance;
    assert.equal(wallet, 0);
    assert.equal(clearing, -USDC / 2, "the other job of two (att-two-1) still holds; the cancelled one's hold is back");
  });
});

/** A signed GET answered with bytes (call() would read them as text). */
function fetchAs(url: string, keys: NodeKeyPair, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const timestamp = Date.now();
  const nonce = randomBytes(16).toString('hex');
  const keyId = keyFingerprint(keys.publicKey);
  const signature = signEd25519(peerCanonicalRequest({ method: 'GET', path, body: '', timestamp, nonce, keyId }), createPrivateKey(keys.privateKeyPem));
  return fetch(url + path, {
    headers: { [FEDERATION_HEADERS.key]: keys.publicKey, [FEDERATION_HEADERS.timestamp]: String(timestamp), [FEDERATION_HEADERS.nonce]: nonce, [FEDERATION_HEADERS.signature]: signature, ...headers },
  });
}

/** A result report of these outputs (the fake agent signs its commitment). */
function outputsReport(outputs: OutputFile[]): ResultReport {
  const outputDigest = outputRootDigest(outputs);
  return { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs, metrics: { durationMs: 5 }, commitment: placeholderCommitment(outputDigest, 0), commitmentSignature: UNSIGNED };
}

describe('abuse: the output bytes of forwarded jobs, at the peer', () => {
  let h: Harness;
  const one = generateNodeKeyPair();
  const two = generateNodeKeyPair();
  /** one's job, ended with an inline and a blob output; two's job, queued. */
  let remote: string;
  let theirs: string;
  const big = seededBytes(200 * 1024, 31);
  const small = Buffer.from('done\n');
  const blobPath = (id: string, sha: string) => `/v1/federation/jobs/${id}/blobs/${sha}`;
  const forward = (attempt: string) => ({
    homeJobId: `job-home-${attempt}`,
    homeAttemptId: attempt,
    spec: { name: 'with-outputs', image: 'busybox:1.36', command: ['true'], resources: { gpu: { count: 1 } }, timeoutSeconds: 600 },
    payment: null,
  });

  before(async () => {
    h = await startHarness({ region: 'outputs-peer', peerSummaryMs: 60_000 });
    await peerWithTwo(h, one, two);
    const agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
    const sent = await sendAs(h.url, one, 'POST', '/v1/federation/jobs', JSON.stringify(forward('att-out-1')));
    assert.equal(sent.res.status, 200, JSON.stringify(sent.res.body));
    remote = sent.res.body.job.remoteJobId;
    const a = await waitFor(async () => WorkResponse.parse((await agent.work(200)).body).assignments.find((x) => x.jobId === remote), "an assignment of one's job");
    assert.equal((await agent.start(a.attemptId)).status, 200);
    const opened = await agent.request('POST', `/v1/agent/attempts/${a.attemptId}/outputs`, { path: 'out/model.bin', sha256: sha256Of(big), size: big.length });
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    const put = await call(h.url, 'PUT', `/v1/agent/uploads/${opened.body.uploadId}`, {
      raw: big,
      headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0', [OUTPUT_UPLOAD_TOKEN_HEADER]: opened.body.uploadToken },
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const outputs: OutputFile[] = [
      { path: 'out/done.txt', size: small.length, sha256: sha256Of(small), content: small.toString('base64') },
      { path: 'out/model.bin', size: big.length, sha256: sha256Of(big) },
    ];
    assert.equal((await agent.result(a.attemptId, outputsReport(outputs))).status, 200);
    const other = await sendAs(h.url, two, 'POST', '/v1/federation/jobs', JSON.stringify(forward('att-out-2')));
    assert.equal(other.res.status, 200, JSON.stringify(other.res.body));
    theirs = other.res.body.job.remoteJobId;
  });
  after(async () => {
    await h?.close();
  });

  test('the peer reads what its ended job lists: the status names each output, the bytes come whole or by Range', async () => {
    const status = await sendAs(h.url, one, 'GET', `/v1/federation/jobs/${remote}?logsAfter=0`, '');
    assert.equal(status.res.status, 200, JSON.stringify(status.res.body));
    const view = status.res.body.job as ForwardedJobView;
    assert.equal(view.state, 'succeeded');
    assert.deepEqual(view.outputs, [
      { path: 'out/done.txt', size: small.length, sha256: sha256Of(small), content: small.toString('base64') },
      { path: 'out/model.bin', size: big.length, sha256: sha256Of(big), blob: true },
    ]);
    assert.equal(view.outputDigest, outputRootDigest(view.outputs));

    const whole = await fetchAs(h.url, one, blobPath(remote, sha256Of(big)));
    assert.equal(whole.status, 200);
    assert.equal(whole.headers.get('content-length'), String(big.length));
    assert.ok(Buffer.from(await whole.arrayBuffer()).equals(big));
    const inline = await fetchAs(h.url, one, blobPath(remote, sha256Of(small)));
    assert.equal(inline.status, 200);
    assert.ok(Buffer.from(await inline.arrayBuffer()).equals(small), 'an inline output is served from its content');
    const part = await fetchAs(h.url, one, blobPath(remote, sha256Of(big)), { range: 'bytes=10-19' });
    assert.equal(part.status, 206);
    assert.ok(Buffer.from(await part.arrayBuffer()).equals(big.subarray(10, 20)));
  });

  test("another peer's output, a buyer's blob, a blob that is no output, an unsigned or buyer's request: refused", async () => {
    const buyer = await h.buyer();
    const mine = seededBytes(1024, 32);
    const begun = await call(h.url, 'POST', '/v1/blobs/uploads', { token: buyer, body: { sha256: sha256Of(mine), size: mine.length } });
    assert.equal(begun.status, 200, JSON.stringify(begun.body));
    const uploaded = await call(h.url, 'PUT', `/v1/blobs/uploads/${begun.body.uploadId}`, { token: buyer, raw: mine, headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0' } });
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));

    const cases: Array<[string, NodeKeyPair, string]> = [
      ["another peer's job's output", two, blobPath(remote, sha256Of(big))],
      ["that output under the other peer's own job", two, blobPath(theirs, sha256Of(big))],
      ["a buyer's blob", one, blobPath(remote, sha256Of(mine))],
      ['a blob name nobody has', one, blobPath(remote, 'a'.repeat(64))],
      ['not a blob name', one, blobPath(remote, 'NOT-HEX')],
      ['a job that does not exist', one, blobPath('job-nope', sha256Of(big))],
    ];
    for (const [what, keys, path] of cases) {
      const res = await fetchAs(h.url, keys, path);
      assert.equal(res.status, 404, what);
      const body = (await res.json()) as { error: { code: string } };
      assert.equal(body.error.code, 'NOT_FOUND', what);
      assert.ok(!JSON.stringify(body).includes(big.subarray(0, 16).toString('base64')), what);
    }
    const unsigned = await fetch(h.url + blobPath(remote, sha256Of(big)));
    assert.equal(unsigned.status, 401);
    await unsigned.arrayBuffer();
    const asBuyer = await fetch(h.url + blobPath(remote, sha256Of(big)), { headers: { authorization: `Bearer ${buyer}` } });
    assert.equal(asBuyer.status, 401, "a buyer's token is no peer signature");
    await asBuyer.arrayBuffer();
    const stranger = await fetchAs(h.url, generateNodeKeyPair(), blobPath(remote, sha256Of(big)));
    assert.equal(stranger.status, 401);
    await stranger.arrayBuffer();
  });
});

/** How the lying peer lies: about the bytes it serves, or in its signed listing itself. */
type LieMode = 'other bytes' | 'more bytes' | 'declares more' | 'inline content' | 'one path twice' | 'lies once';

/**
 * A hostile peer on loopback: it signs its answers like a region (summary, forward, status), lists one blob output
 * for every job it is sent, and serves bytes for it that are not the listed ones (or lists what cannot be).
 */
class LyingPeer {
  readonly keys = generateNodeKeyPair();
  readonly listed = seededBytes(64 * 1024, 41);
  readonly other = seededBytes(64 * 1024, 42);
  mode: LieMode = 'other bytes';
  /** Blob requests served, by the peer's job id. */
  readonly served = new Map<string, number>();
  private readonly jobs = new Map<string, string>();
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      void this.handle(req).then(
        (a) => {
          if ('bytes' in a) {
            res.writeHead(200, { 'content-type': 'application/octet-stream', ...(a.length === null ? {} : { 'content-length': String(a.length) }) });
            res.end(a.bytes);
            return;
          }
          const text = JSON.stringify(a.body);
          const nonce = String(req.headers[FEDERATION_HEADERS.nonce] ?? '');
          const signature = signEd25519(peerCanonicalAnswer(nonce, text, keyFingerprint(this.keys.publicKey)), createPrivateKey(this.keys.privateKeyPem));
          res.writeHead(a.status, { 'content-type': 'application/json', [FEDERATION_HEADERS.key]: this.keys.publicKey, [FEDERATION_HEADERS.signature]: signature });
          res.end(text);
        },
        () => res.destroy(),
      );
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  private view(remoteJobId: string): ForwardedJobView {
    const now = Date.now();
    const outputs: OutputFile[] = [{ path: 'out/weights.bin', size: this.listed.length, sha256: sha256Of(this.listed), blob: true }];
    if (this.mode === 'inline content') outputs.push({ path: 'out/note.txt', size: this.listed.length, sha256: sha256Of(this.listed), content: this.other.toString('base64') });
    if (this.mode === 'one path twice') outputs.push({ ...outputs[0]! });
    const homeAttemptId = this.jobs.get(remoteJobId) ?? '';
    return { remoteJobId, homeAttemptId, state: 'succeeded', createdAt: now, startedAt: now, endedAt: now, exitCode: 0, error: null, asset: null, charged: 0, logs: [], nextLogCursor: 0, moreLogs: false, outputDigest: outputRootDigest(outputs), outputs };
  }

  private async handle(req: IncomingMessage): Promise<{ status: number; body: unknown } | { bytes: Buffer; length: number | null }> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/v1/federation/summary') {
      return { status: 200, body: { summary: { region: 'far', sentAt: Date.now(), classes: [{ class: 'nvidia-h100-80gb', freeGpus: 8, totalGpus: 8, priceIndex: 1 }], queueDepth: 0, placementWaitP50Ms: null } } };
    }
    if (req.method === 'POST' && path === '/v1/federation/jobs') {
      const attempt = JSON.parse(Buffer.concat(chunks).toString('utf8')).homeAttemptId as string;
      const id = `job-far-${attempt}`;
      this.jobs.set(id, attempt);
      return { status: 200, body: { job: this.view(id), created: true } };
    }
    const blob = /^\/v1\/federation\/jobs\/([^/]+)\/blobs\/[0-9a-f]{64}$/.exec(path);
    if (blob?.[1]) {
      const served = (this.served.get(blob[1]) ?? 0) + 1;
      this.served.set(blob[1], served);
      const size = this.listed.length;
      if (this.mode === 'lies once') return { bytes: served === 1 ? this.other : this.listed, length: size };
      if (this.mode === 'other bytes') return { bytes: this.other, length: size };
      if (this.mode === 'more bytes') return { bytes: Buffer.concat([this.listed, this.other.subarray(0, 1024)]), length: null };
      return { bytes: Buffer.concat([this.listed, Buffer.from('x')]), length: size + 1 };
    }
    const job = /^\/v1\/federation\/jobs\/([^/]+)(\/cancel)?$/.exec(path);
    if (job?.[1] && this.jobs.has(job[1])) return { status: 200, body: { job: this.view(job[1]) } };
    return { status: 404, body: { error: { code: 'NOT_FOUND', message: 'no such job' } } };
  }
}

describe('abuse: a peer serving output bytes that differ from its signed listing', () => {
  let home: Harness;
  const liar = new LyingPeer();
  let buyer: string;
  let peerId: string;
  /** Contact failures the forwarder recorded (each is cleared by the next good contact, so they are caught here). */
  const failures: string[] = [];

  before(async () => {
    await liar.start();
    home = await startHarness({ region: 'near', peerSummaryMs: 100, forwardPollMs: 100, forwardLeaseMs: 1500, expiryPassIntervalMs: 100, retryBaseBackoffMs: 50 });
    const added = await call(home.url, 'POST', '/v1/federation/peers', { token: home.operator, body: { url: liar.url, key: liar.keys.publicKey, name: 'liar' } });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    peerId = added.body.peer.id;
    buyer = await home.buyer();
    const store = home.coord.store;
    const record = store.recordForwardProgress.bind(store);
    store.recordForwardProgress = (q) => {
      if (q.error !== undefined) failures.push(q.error);
      return record(q);
    };
    await waitFor(async () => (await home.coord.store.getPeer(peerId))?.summary?.region === 'far', 'home to hear from the lying peer');
  });
  after(async () => {
    await home?.close();
    await liar.stop();
  });

  const why: Record<Exclude<LieMode, 'lies once'>, RegExp> = {
    'other bytes': /output out\/weights\.bin .*sha256/,
    'more bytes': /output out\/weights\.bin .*more than the 65536 bytes its signed listing names/,
    'declares more': /offered 65537 bytes for output [0-9a-f]{64}, which its signed listing says has 65536/,
    'inline content': /output out\/note\.txt: its inline content is not the 65536 bytes/,
    'one path twice': /lists one output path twice/,
  };
  for (const mode of Object.keys(why) as Array<keyof typeof why>) {
    test(`${mode}: refused each try; after ${MAX_TRIES} the lease runs out, the attempt is lost, nothing is kept for the buyer`, async () => {
      liar.mode = mode;
      failures.length = 0;
      const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name: mode, resources: { gpu: { count: 1 } }, constraints: { region: 'far' }, maxRetries: 0 }) } });
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const forward = await waitFor(async () => {
        const f = (await home.coord.store.listJobForwards(jobId))[0];
        return f?.state === 'ended' ? f : undefined;
      }, 'the forward booked');
      assert.equal(forward.charged, 0);
      const job = (await call(home.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body;
      assert.equal(job.attempts[0].state, 'lost', 'its lease ran out: the outputs never came home');
      assert.notEqual(job.job.state, 'succeeded');
      // A listing that lies about itself is refused before any byte is asked for.
      const fetches = mode === 'inline content' || mode === 'one path twice' ? undefined : MAX_TRIES;
      assert.equal(liar.served.get(forward.remoteJobId ?? ''), fetches, 'one fetch per try, then no more');
      assert.deepEqual(await home.coord.store.getOutputs(forward.attemptId), []);
      const tries = failures.filter((e) => e.startsWith('outputs from region far, try'));
      assert.equal(tries.length, MAX_TRIES, JSON.stringify(failures));
      for (const e of tries) assert.match(e, why[mode]);
    });
  }

  test('nothing of the bytes is kept: no hold, no upload, no file', async () => {
    const list = await call(home.url, 'GET', '/v1/blobs', { token: buyer });
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.blobs, []);
    assert.deepEqual([list.body.usage.blobBytes, list.body.usage.reservedBytes, list.body.usage.openUploads], [0, 0, 0]);
    for (const bytes of [liar.listed, liar.other]) {
      const sha = sha256Of(bytes);
      assert.equal((await call(home.url, 'GET', `/v1/blobs/${sha}/info`, { token: buyer })).status, 404);
      assert.ok(!existsSync(join(home.dir, 'blobs', sha.slice(0, 2), sha)), `no stored file ${sha}`);
    }
    const staging = join(home.dir, 'blobs', 'uploads');
    assert.deepEqual(existsSync(staging) ? readdirSync(staging) : [], [], 'no staged bytes left');
  });

  test('a lie once, then the listed bytes: the next try brings them home and the job succeeds with them', async () => {
    liar.mode = 'lies once';
    failures.length = 0;
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ name: 'lies once', resources: { gpu: { count: 1 } }, constraints: { region: 'far' }, maxRetries: 0 }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    await waitFor(async () => (await call(home.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer })).body.job.state === 'succeeded', 'the job succeeded');
    const forward = (await home.coord.store.listJobForwards(jobId))[0];
    assert.equal(liar.served.get(forward?.remoteJobId ?? ''), 2);
    assert.equal(failures.filter((e) => e.startsWith('outputs from region far, try')).length, 1);
    const result = (await call(home.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer })).body;
    assert.deepEqual(result.outputs, [{ path: 'out/weights.bin', size: liar.listed.length, sha256: sha256Of(liar.listed), blob: true }]);
    const dl = await fetch(`${home.url}/v1/blobs/${sha256Of(liar.listed)}`, { headers: { authorization: `Bearer ${buyer}` } });
    assert.ok(Buffer.from(await dl.arrayBuffer()).equals(liar.listed));
    assert.ok(!existsSync(join(home.dir, 'blobs', sha256Of(liar.other).slice(0, 2), sha256Of(liar.other))), 'the lie was not kept');
  });
});
