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
 */
import assert from 'node:assert/strict';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  FEDERATION_HEADERS,
  generateNodeKeyPair,
  keyFingerprint,
  MAX_FORWARD_BODY_BYTES,
  MAX_SUMMARY_CLASSES,
  type NodeKeyPair,
  peerCanonicalAnswer,
  peerCanonicalRequest,
  publicKeyFromRaw,
  type RegionSummary,
  signEd25519,
  verifyEd25519,
} from '@gpux/protocol';
import { call, type Harness, type Res, startHarness, waitFor } from '../helpers.js';

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
    for (const [keys, name, url] of [
      [one, 'one', 'http://127.0.0.1:9'],
      [two, 'two', 'http://127.0.0.1:10'],
    ] as const) {
      const added = await call(h.url, 'POST', '/v1/federation/peers', { token: h.operator, body: { url, key: keys.publicKey, name } });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      if (name === 'one') oneId = added.body.peer.id;
    }
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
