/**
 * Abuse suite, issue 15: the peer summary exchange (POST /v1/federation/summary) against a real coordinator.
 * Unsigned, signed by a key that is not a peer's, a peer's key in the header over another key's signature, a
 * replayed nonce, a stale timestamp, an oversized, malformed or absurd body: each refused with its code, and
 * nothing recorded. A peer added at one coordinator's URL with another's key is marked unauthorized (the answer's
 * key is not the pinned one). The peer API is for operators, and checks what it is given.
 */
import assert from 'node:assert/strict';
import { createPrivateKey, randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  FEDERATION_HEADERS,
  generateNodeKeyPair,
  keyFingerprint,
  MAX_SUMMARY_CLASSES,
  type NodeKeyPair,
  peerCanonicalAnswer,
  peerCanonicalRequest,
  publicKeyFromRaw,
  type RegionSummary,
  signEd25519,
  verifyEd25519,
} from '@gpux/protocol';
import { call, type Harness, startHarness, waitFor } from '../helpers.js';

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
