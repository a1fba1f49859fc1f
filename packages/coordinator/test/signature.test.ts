/** Node request signatures: every forged, tampered, stale or replayed request → 401 and no state change. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { generateNodeKeyPair, MAX_CLOCK_SKEW_MS } from '@gpux/protocol';
import { call, type Harness, type Res, startHarness, TestAgent } from './helpers.js';

describe('node request signatures', () => {
  let h: Harness;
  let agent: TestAgent;
  before(async () => {
    h = await startHarness();
    agent = new TestAgent(h.url);
    assert.equal((await agent.register()).status, 200);
  });
  after(() => h.close());

  const rejected = (r: Res, what: string) => {
    assert.equal(r.status, 401, `${what}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.error.code, 'SIGNATURE_INVALID', what);
  };
  const lastHeartbeat = async () => (await h.coord.store.getNode(agent.nodeId))!.lastHeartbeatAt;

  test('unsigned, forged, tampered and stale requests', async () => {
    const before = await lastHeartbeat();
    await new Promise((r) => setTimeout(r, 5));
    rejected(await agent.heartbeat([], { unsigned: true }), 'unsigned');
    rejected(await agent.heartbeat([], { privateKeyPem: generateNodeKeyPair().privateKeyPem }), 'signed with another key');
    rejected(await agent.heartbeat([], { sendBody: JSON.stringify({ activeAttemptIds: ['att-x'] }) }), 'body tampered');
    rejected(await agent.heartbeat([], { timestamp: Date.now() - MAX_CLOCK_SKEW_MS - 5000 }), 'stale timestamp');
    rejected(await agent.heartbeat([], { timestamp: Date.now() + MAX_CLOCK_SKEW_MS + 5000 }), 'future timestamp');
    rejected(await agent.heartbeat([], { nonce: 'no' }), 'malformed nonce');
    rejected(await agent.work(0).then(() => agent.request('GET', '/v1/agent/work?waitMs=0', undefined, { privateKeyPem: generateNodeKeyPair().privateKeyPem })), 'GET forged');
    assert.equal(await lastHeartbeat(), before, 'no heartbeat was recorded');
  });

  test('a replayed nonce is refused', async () => {
    const nonce = 'replay-nonce-0001';
    const ok = await agent.heartbeat([], { nonce });
    assert.equal(ok.status, 200);
    const seen = await lastHeartbeat();
    await new Promise((r) => setTimeout(r, 5));
    rejected(await agent.heartbeat([], { nonce }), 'replay');
    assert.equal(await lastHeartbeat(), seen);
  });

  test('a request signed before the coordinator started is refused', async () => {
    rejected(await agent.heartbeat([], { timestamp: Date.now() - 10_000 }), 'older than start');
  });

  test('an unknown node may not call anything but register', async () => {
    const stranger = new TestAgent(h.url);
    rejected(await stranger.heartbeat(), 'unknown node');
    rejected(await stranger.work(0), 'unknown node work');
    assert.equal(await h.coord.store.getNode(stranger.nodeId), undefined);
  });

  test('register: the node id must derive from the key in the body, and the body must be signed by it', async () => {
    const mallory = new TestAgent(h.url);
    // Claims mallory's id with agent's public key.
    const r1 = await mallory.request('POST', '/v1/agent/register', { publicKey: agent.keys.publicKey, advertisement: mallory.ad });
    rejected(r1, 'id not derived from the key');
    // Right id and key, signed by another key.
    rejected(await mallory.register({ privateKeyPem: generateNodeKeyPair().privateKeyPem }), 'register forged');
    rejected(await mallory.request('POST', '/v1/agent/register', { advertisement: mallory.ad }), 'no key');
    assert.equal(await h.coord.store.getNode(mallory.nodeId), undefined);
    const list = await call(h.url, 'GET', '/v1/nodes', { token: h.operator });
    assert.equal(list.body.nodes.length, 1);
  });

  test('a valid signature with an invalid body is a 400 after authentication', async () => {
    const r = await agent.request('POST', '/v1/agent/heartbeat', { activeAttemptIds: 'nope' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'REQUEST_INVALID');
  });
});
