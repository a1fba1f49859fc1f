/**
 * Abuse suite, issue 19: guessing credentials from one address. Every failed authentication (a bad bearer
 * token, a bad enrollment token at registration, a bad node signature) takes from the address's bucket
 * (GPUX_AUTH_FAILURES_PER_MINUTE, 5 here); once empty, every request of that address that needs a credential
 * gets 429 RATE_LIMITED with Retry-After, a valid credential too, while other addresses and routes without
 * auth are untouched, and the block lifts as the bucket refills. Without GPUX_TRUST_PROXY a forged
 * X-Forwarded-For changes nothing. Clients are played from different 127.x addresses (all loopback on Linux).
 * The store plays no part (the limiter is in memory), so SQLite only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateNodeKeyPair, nodeIdFromPublicKey, signRequest } from '@gpux/protocol';
import { createLogger } from '../../src/logger.js';
import { callFrom } from '../http-from.js';
import { gpuAd, type Harness, type Res, startHarness, TestAgent } from '../helpers.js';

const LIMIT = 5;

describe('abuse: brute-forcing credentials from one address', () => {
  let h: Harness;
  let buyer: string;
  let offsetMs = 0;
  const logLines: string[] = [];
  const clock = { now: () => Date.now() + offsetMs };
  const jobsFrom = (from: string, token: string, headers: Record<string, string> = {}) => callFrom(h.url, 'GET', '/v1/jobs', { from, token, headers });
  const logs = () => logLines.map((l) => JSON.parse(l) as { level: number; msg: string; clientAddress?: string; code?: string });

  /** A signed node request from `from`, as the real agent signs it (with the clock the coordinator uses). */
  function signedFrom(from: string, path: string, body: unknown, keys = generateNodeKeyPair(), signWith = keys.privateKeyPem): Promise<Res> {
    const raw = JSON.stringify(body);
    const headers = signRequest({ method: 'POST', path, body: raw, nodeId: nodeIdFromPublicKey(keys.publicKey), timestamp: clock.now() }, signWith);
    return callFrom(h.url, 'POST', path, { from, body: raw, headers });
  }

  function assertLimited(res: Res, from: string): void {
    assert.equal(res.status, 429, JSON.stringify(res.body));
    assert.equal(res.body.error.code, 'RATE_LIMITED');
    assert.match(res.body.error.message, new RegExp(`too many failed authentications from ${from.replace(/\./g, '\\.')} .*GPUX_AUTH_FAILURES_PER_MINUTE`));
    assert.ok(Number(res.headers.get('retry-after')) >= 1, 'Retry-After says when');
  }

  before(async () => {
    h = await startHarness({ authFailuresPerMinute: LIMIT }, { clock, logger: createLogger('info', { write: (line: string) => void logLines.push(line) }) });
    buyer = await h.buyer();
  });
  after(async () => {
    await h?.close();
  });

  test('bad bearer tokens: 401 up to the limit, then 429 for that address even with a valid token; others unaffected', async () => {
    for (let i = 0; i < LIMIT; i++) assert.equal((await jobsFrom('127.0.0.2', `gpux_guess${i}`)).status, 401);
    assertLimited(await jobsFrom('127.0.0.2', buyer), '127.0.0.2');
    assertLimited(await callFrom(h.url, 'GET', '/v1/whoami', { from: '127.0.0.2', token: buyer }), '127.0.0.2');
    // Routes without a credential still answer, and another address is its own bucket.
    assert.equal((await callFrom(h.url, 'GET', '/healthz', { from: '127.0.0.2' })).status, 200);
    assert.equal((await jobsFrom('127.0.0.3', buyer)).status, 200);
    assert.equal((await jobsFrom('127.0.0.3', 'gpux_nope')).status, 401);

    const lines = logs();
    assert.ok(lines.some((l) => l.msg === 'authentication refused' && l.clientAddress === '127.0.0.2' && l.code === 'UNAUTHORIZED'), 'each refusal is logged with the address');
    assert.equal(lines.filter((l) => l.level === 40 && l.clientAddress === '127.0.0.2' && /too many failed authentications/.test(l.msg)).length, 1, 'one warning per block');
  });

  test('a forged X-Forwarded-For is ignored without GPUX_TRUST_PROXY', async () => {
    assertLimited(await jobsFrom('127.0.0.2', buyer, { 'x-forwarded-for': '198.51.100.7' }), '127.0.0.2');
    // Rotating forged addresses does not give a client new buckets.
    for (let i = 0; i < LIMIT; i++) assert.equal((await jobsFrom('127.0.0.6', 'gpux_bad', { 'x-forwarded-for': `203.0.113.${i}` })).status, 401);
    assertLimited(await jobsFrom('127.0.0.6', buyer, { 'x-forwarded-for': '203.0.113.200' }), '127.0.0.6');
  });

  test('bad enrollment tokens at registration count', async () => {
    for (let i = 0; i < LIMIT; i++) {
      const keys = generateNodeKeyPair();
      const res = await signedFrom('127.0.0.4', '/v1/agent/register', { publicKey: keys.publicKey, advertisement: gpuAd(`guess-${i}`), enrollmentToken: `gpux_enroll_guess${i}` }, keys);
      assert.equal(res.status, 401, JSON.stringify(res.body));
      assert.match(res.body.error.message, /unknown enrollment token/, 'the signature was fine: the token is what failed');
    }
    const keys = generateNodeKeyPair();
    const limited = await signedFrom('127.0.0.4', '/v1/agent/register', { publicKey: keys.publicKey, advertisement: gpuAd('real'), enrollmentToken: h.enrollment }, keys);
    assertLimited(limited, '127.0.0.4');
  });

  test('bad node signatures count', async () => {
    const agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
    const forger = generateNodeKeyPair();
    for (let i = 0; i < LIMIT; i++) {
      const res = await signedFrom('127.0.0.5', '/v1/agent/heartbeat', { activeAttemptIds: [] }, agent.keys, forger.privateKeyPem);
      assert.equal(res.status, 401);
      assert.equal(res.body.error.code, 'SIGNATURE_INVALID');
    }
    assertLimited(await signedFrom('127.0.0.5', '/v1/agent/heartbeat', { activeAttemptIds: [] }, agent.keys), '127.0.0.5');
    // The node itself, from its own address, is not blocked by a forger elsewhere.
    assert.equal((await agent.heartbeat()).status, 200);
  });

  test('the block lifts as the bucket refills, one try per refilled token', async () => {
    const limited = await jobsFrom('127.0.0.2', buyer);
    assertLimited(limited, '127.0.0.2');
    offsetMs += Number(limited.headers.get('retry-after')) * 1000;
    assert.equal((await jobsFrom('127.0.0.2', buyer)).status, 200);
    assert.equal((await jobsFrom('127.0.0.2', 'gpux_again')).status, 401);
    assertLimited(await jobsFrom('127.0.0.2', buyer), '127.0.0.2');
  });
});
