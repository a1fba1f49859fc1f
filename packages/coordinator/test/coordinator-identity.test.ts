/**
 * The coordinator's identity (issue 19): its key file (made once, reused, never replaced when corrupt, rotated
 * with an endorsement), and a seal on every order an agent acts on — assignments, cancels (heartbeat, work,
 * start, logs), challenges, registration answers — that checkSeal accepts with the identity route's keys and
 * refuses once any sealed field is changed. A refused assignment ends at no cost to the node and is placed again.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GpuxError } from '@gpux/core';
import {
  assignmentOrder,
  type Assignment,
  type ChallengeAssignment,
  CoordinatorIdentityResponse,
  canonicalDigest,
  checkSeal,
  enrollmentTokenFingerprint,
  type Order,
  RegisterResponse,
  type Seal,
  specDigest,
  trustedKeys,
  WorkResponse,
} from '@gpux/protocol';
import { loadCoordinatorConfig } from '../src/config.js';
import { keyChainView, loadOrCreateKeyFile, readKeyFile, rotateKey } from '../src/identity/key-file.js';
import { startCoordinator } from '../src/start.js';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const identityOf = async (url: string) => {
  const r = await call(url, 'GET', '/v1/coordinator/identity');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return CoordinatorIdentityResponse.parse(r.body);
};
/** What an agent trusts after pinning the chain's first key and following its endorsements. */
const trustedFrom = (id: CoordinatorIdentityResponse) => {
  const first = id.keys[0];
  assert.ok(first);
  return trustedKeys(new Map([[first.fingerprint, first.publicKey]]), id.keys);
};

function assertSealed(order: Order, seal: Seal | undefined, trusted: ReadonlyMap<string, string>): void {
  const res = checkSeal(order, seal, trusted, Date.now());
  assert.deepEqual(res, { ok: true }, `${order.kind} seal: ${JSON.stringify(res)}`);
}

function assertRefused(order: Order, seal: Seal | undefined, trusted: ReadonlyMap<string, string>, what: string): void {
  assert.equal(checkSeal(order, seal, trusted, Date.now()).ok, false, `a ${order.kind} with ${what} changed must not verify`);
}

describe('coordinator key file', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-key-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('made on first use (0600 in a 0700 directory), then reused as is', () => {
    const path = join(dir, 'fresh', 'coordinator-key.json');
    const first = loadOrCreateKeyFile(path, 1000);
    assert.equal(first.created, true);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(join(dir, 'fresh')).mode & 0o777, 0o700);
    assert.equal(first.file.keys.length, 1);
    assert.equal(first.file.keys[0]?.endorsement, null);
    const again = loadOrCreateKeyFile(path, 2000);
    assert.equal(again.created, false);
    assert.deepEqual(again.file, first.file);
  });

  test('a corrupt file is an error naming the path and the fix, and is never replaced', async () => {
    const path = join(dir, 'corrupt.json');
    for (const text of ['not json', '{"version":1,"keys":[]}', JSON.stringify({ version: 2, keys: [] })]) {
      writeFileSync(path, text);
      assert.throws(
        () => loadOrCreateKeyFile(path, 0),
        (e: unknown) => e instanceof GpuxError && e.message.includes(path) && e.message.includes('backup'),
      );
      assert.equal(readFileSync(path, 'utf8'), text, 'left as it was');
    }
    // A private key that is not its public key's, and a second key without a valid endorsement.
    const good = loadOrCreateKeyFile(join(dir, 'good.json'), 0).file;
    const other = loadOrCreateKeyFile(join(dir, 'other.json'), 0).file;
    const [g, o] = [good.keys[0], other.keys[0]];
    assert.ok(g && o);
    writeFileSync(path, JSON.stringify({ version: 1, keys: [{ ...g, privateKeyPem: o.privateKeyPem }] }));
    assert.throws(() => readKeyFile(path), /does not match its public key/);
    writeFileSync(path, JSON.stringify({ version: 1, keys: [g, { ...o, endorsement: { by: 'a'.repeat(64), signature: 'x' } }] }));
    assert.throws(() => readKeyFile(path), /without a valid endorsement/);
    // The coordinator refuses to start on it.
    const config = loadCoordinatorConfig({}, { dataDir: join(dir, 'corrupt-coord'), port: 0, logLevel: 'silent', coordinatorKeyFile: path });
    await assert.rejects(startCoordinator(config), /restore it from your backup/);
  });

  test('rotation appends a key endorsed by the newest one; a chain walk from the first key trusts it', () => {
    const path = join(dir, 'rotate.json');
    const first = loadOrCreateKeyFile(path, 0).file;
    const next = rotateKey(path, { activeFrom: 5000 });
    assert.equal(next.keys.length, 2);
    assert.deepEqual(next.keys[0], first.keys[0]);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(readKeyFile(path), next, 'written through');
    const view = keyChainView(next, 6000);
    assert.equal(view.signingKey, view.keys[1]?.fingerprint);
    assert.equal(keyChainView(next, 4000).signingKey, view.keys[0]?.fingerprint, 'not before its activeFrom');
    const trusted = trustedKeys(new Map([[view.keys[0]?.fingerprint as string, view.keys[0]?.publicKey as string]]), view.keys);
    assert.ok(trusted.has(view.keys[1]?.fingerprint as string));
    assert.throws(() => rotateKey(path, { activeFrom: 1000 }), /active before the newest key/);
  });
});

describe('sealed orders', () => {
  let h: Harness;
  let buyer: string;
  let identity: CoordinatorIdentityResponse;
  let trusted: Map<string, string>;
  before(async () => {
    // cordonFailures 1: a refusal that counted as the node's failure would cordon it at once.
    h = await startHarness({ retryBaseBackoffMs: 10, retryMaxBackoffMs: 10, cordonFailures: 1 });
    buyer = await h.buyer();
    identity = await identityOf(h.url);
    trusted = trustedFrom(identity);
  });
  after(() => h.close());

  /** Each node carries its hostname as a label, so a test's jobs go to its own nodes. */
  async function registered(hostname: string, group = hostname): Promise<TestAgent> {
    const agent = new TestAgent(h.url, { ...gpuAd(hostname), labels: { group } });
    const r = await agent.register();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    return agent;
  }

  /** Submit a job and take its assignment on `agent`. */
  async function assigned(agent: TestAgent, over = {}): Promise<{ jobId: string; a: Assignment }> {
    const group = agent.ad.labels?.group ?? '';
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: spec({ constraints: { nodeLabels: { group } }, ...over }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId = sub.body.job.id as string;
    const a = await waitFor(async () => WorkResponse.parse((await agent.work(200)).body).assignments.find((x) => x.jobId === jobId), 'the assignment');
    return { jobId, a };
  }

  test('the identity route: the chain and the signing key, cacheable for a few seconds, no auth', async () => {
    const r = await call(h.url, 'GET', '/v1/coordinator/identity');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('cache-control') ?? '', /max-age=5/);
    assert.equal(identity.keys.length, 1);
    assert.equal(identity.signingKey, identity.keys[0]?.fingerprint);
  });

  test('registration: the answer names the key and seals the node, its key and the server time', async () => {
    const agent = new TestAgent(h.url, gpuAd('reg'));
    const r = await agent.register();
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const res = RegisterResponse.parse(r.body);
    assert.ok(res.coordinator);
    assert.equal(res.coordinator.fingerprint, identity.signingKey);
    assert.equal(res.coordinator.publicKey, identity.keys[0]?.publicKey);
    const order: Order = { kind: 'registration', nodeId: agent.nodeId, nodePublicKey: agent.keys.publicKey, serverTime: res.serverTime };
    assertSealed(order, res.coordinator.seal, trusted);
    assertRefused({ ...order, serverTime: res.serverTime + 1 }, res.coordinator.seal, trusted, 'serverTime');
    assertRefused({ ...order, nodePublicKey: new TestAgent(h.url).keys.publicKey }, res.coordinator.seal, trusted, 'nodePublicKey');
  });

  test('an assignment is sealed over what the agent parsed; changing any sealed field breaks it', async () => {
    const agent = await registered('assign');
    const { a } = await assigned(agent, { env: { A: '1' } });
    assert.ok(a.seal);
    assert.ok(a.seal.expiresAt > Date.now());
    const order = assignmentOrder(a, agent.nodeId);
    assertSealed(order, a.seal, trusted);
    assertRefused({ ...order, attemptId: 'att-other' } as Order, a.seal, trusted, 'attemptId');
    assertRefused({ ...order, jobId: 'job-other' } as Order, a.seal, trusted, 'jobId');
    assertRefused({ ...order, nodeId: new TestAgent(h.url).nodeId } as Order, a.seal, trusted, 'nodeId');
    assertRefused({ ...order, specDigest: specDigest({ ...a.spec, command: ['rm', '-rf', '/'] }) } as Order, a.seal, trusted, 'the spec');
    assertRefused({ ...order, gpuIndices: [0, 1] } as Order, a.seal, trusted, 'gpuIndices');
    assertRefused({ ...order, leaseExpiresAt: a.leaseExpiresAt + 1 } as Order, a.seal, trusted, 'leaseExpiresAt');
    assertRefused({ ...order, gangDigest: canonicalDigest({ rank: 0 }) } as Order, a.seal, trusted, 'gangDigest');
    assertRefused(order, { ...a.seal, expiresAt: a.seal.expiresAt + 1 }, trusted, 'expiresAt');
    assertRefused(order, a.seal, new Map(), 'an untrusted key');
    assert.ok((await agent.start(a.attemptId)).status === 200);
  });

  test('every cancel is sealed: work long-poll, heartbeat, start and log answers', async () => {
    const agent = await registered('cancel');
    const { jobId, a } = await assigned(agent);
    const c = await call(h.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    const order: Order = { kind: 'cancel', attemptId: a.attemptId, nodeId: agent.nodeId };

    const work = WorkResponse.parse((await agent.work(0)).body);
    const wc = work.cancel?.find((x) => x.attemptId === a.attemptId);
    assertSealed(order, wc?.seal, trusted);
    const hb = await agent.heartbeat([a.attemptId]);
    assertSealed(order, hb.body.cancel.find((x: { attemptId: string }) => x.attemptId === a.attemptId)?.seal, trusted);
    const start = await agent.start(a.attemptId);
    assert.equal(start.body.cancel, true);
    assertSealed(order, start.body.cancelSeal, trusted);
    const logs = await agent.logs(a.attemptId, [{ seq: 0, stream: 'system', data: 'x\n', at: Date.now() }]);
    assert.equal(logs.body.cancel, true);
    assertSealed(order, logs.body.cancelSeal, trusted);
    assertRefused({ ...order, attemptId: 'att-other' }, start.body.cancelSeal, trusted, 'attemptId');
    assertRefused({ ...order, nodeId: new TestAgent(h.url).nodeId }, start.body.cancelSeal, trusted, 'nodeId');
    // A stray id the agent lists is sealed for this node only.
    const stray = await agent.heartbeat(['att-not-mine']);
    const strayCancel = stray.body.cancel.find((x: { attemptId: string }) => x.attemptId === 'att-not-mine');
    assertSealed({ kind: 'cancel', attemptId: 'att-not-mine', nodeId: agent.nodeId }, strayCancel?.seal, trusted);
    // A start or log answer without a cancel carries no seal.
    const other = await registered('no-cancel');
    const plain = await assigned(other);
    const s2 = await other.start(plain.a.attemptId);
    assert.deepEqual(s2.body, { ok: true, cancel: false });
  });

  test('an enrollment token made through the API carries the fingerprint of the signing key, and registers', async () => {
    const r = await call(h.url, 'POST', '/v1/enrollments', { token: h.provider, body: { name: 'fp' } });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(enrollmentTokenFingerprint(r.body.token), identity.signingKey);
    const agent = new TestAgent(h.url, gpuAd('fp-node'));
    const reg = await agent.register(undefined, r.body.token);
    assert.equal(reg.status, 200, JSON.stringify(reg.body));
    // The fingerprint is part of the credential: another one does not register.
    const swapped = `${(r.body.token as string).slice(0, -64)}${'0'.repeat(64)}`;
    assert.equal((await new TestAgent(h.url, gpuAd('fp-swap')).register(undefined, swapped)).status, 401);
  });

  test('a refused assignment ends at no cost to the node (no failure, no penalty), with the reason in the history, and is placed again', async () => {
    const a1 = await registered('refuser', 'refuse');
    const { jobId, a } = await assigned(a1);
    const reason = 'the assignment is signed by key 0123456789abcdef…, which this node does not trust';
    // Another node cannot refuse it.
    const intruder = await registered('intruder', 'refuse');
    const foreign = await intruder.refuse(a.attemptId, reason);
    assert.equal(foreign.status, 200, JSON.stringify(foreign.body));
    assert.deepEqual(foreign.body, { ok: true, ended: false });

    const r = await a1.refuse(a.attemptId, reason);
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { ok: true, ended: true });
    assert.deepEqual((await a1.refuse(a.attemptId, reason)).body, { ok: true, ended: false }, 'once only');
    const attempt = await h.coord.store.getAttempt(a.attemptId);
    assert.equal(attempt?.state, 'failed');
    const events = await h.coord.store.listEvents('job', jobId, 100);
    const refused = events.find((e) => e.type === 'attempt.refused');
    assert.deepEqual(refused?.data, { attemptId: a.attemptId, nodeId: a1.nodeId, reason });
    // No failure on the node's record (cordonFailures is 1), no penalty, still schedulable.
    const stats = (await h.coord.store.listNodeStats(0)).find((s) => s.nodeId === a1.nodeId);
    assert.deepEqual(stats?.stats.recentFailures ?? [], []);
    assert.equal(stats?.adminState ?? 'active', 'active');
    assert.equal((await h.coord.store.listPenalties(a1.nodeId, { limit: 10 })).items.length, 0);
    // Placed again (away from the refusing node) on the next node that asks.
    const again = await waitFor(async () => WorkResponse.parse((await intruder.work(200)).body).assignments.find((x) => x.jobId === jobId), 'the job placed again');
    assert.notEqual(again.attemptId, a.attemptId);
    // A started attempt cannot be refused.
    assert.equal((await intruder.start(again.attemptId)).status, 200);
    assert.deepEqual((await intruder.refuse(again.attemptId, reason)).body, { ok: true, ended: false });
    assert.equal((await h.coord.store.getAttempt(again.attemptId))?.state, 'running');
  });

  test('the refuse route validates its body', async () => {
    const agent = await registered('refuse-bad');
    const { a } = await assigned(agent);
    for (const body of [{}, { reason: '' }, { reason: 'x'.repeat(513) }, { reason: 'x', extra: 1 }]) {
      const r = await agent.request('POST', `/v1/agent/attempts/${a.attemptId}/refuse`, body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.code, 'REQUEST_INVALID');
    }
    assert.equal((await h.coord.store.getAttempt(a.attemptId))?.state, 'assigned', 'nothing changed');
  });
});

describe('key rotation on a running coordinator', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({}, { keyWatchIntervalMs: 20 });
  });
  after(() => h.close());

  test('a rotated key is announced at once, signs from its activeFrom, and is trusted through the old key', async () => {
    const before = await identityOf(h.url);
    const old = before.keys[0];
    assert.ok(old);
    rotateKey(h.coord.config.coordinatorKeyFile, { activeFrom: Date.now() + 300 });
    const announced = await waitFor(async () => {
      const id = await identityOf(h.url);
      return id.keys.length === 2 ? id : undefined;
    }, 'the new key in the chain');
    const next = announced.keys[1];
    assert.ok(next);
    assert.equal(next.endorsement?.by, old.fingerprint);
    await waitFor(async () => (await identityOf(h.url)).signingKey === next.fingerprint, 'the new key signing');
    const agent = new TestAgent(h.url, gpuAd('after-rotation'));
    const res = RegisterResponse.parse((await agent.register()).body);
    assert.equal(res.coordinator?.seal.keyId, next.fingerprint);
    const order: Order = { kind: 'registration', nodeId: agent.nodeId, nodePublicKey: agent.keys.publicKey, serverTime: res.serverTime };
    // An agent that pinned the old key follows the endorsement; one that knows only the old key refuses.
    assertSealed(order, res.coordinator?.seal, trustedKeys(new Map([[old.fingerprint, old.publicKey]]), announced.keys));
    assertRefused(order, res.coordinator?.seal, new Map([[old.fingerprint, old.publicKey]]), 'a key not yet followed');
    // Restart: the same chain (the first call may meet a connection the old server closed).
    await h.restart();
    const reread = await waitFor(() => identityOf(h.url).catch(() => undefined), 'the restarted coordinator');
    assert.deepEqual(reread.keys, announced.keys);
  });
});

describe('sealed challenges', () => {
  let h: Harness;
  before(async () => {
    h = await startHarness({ challenge: 'required', challengeSizing: { n: 128, maxProducts: 4 } });
  });
  after(() => h.close());

  test('the challenge in a heartbeat is sealed until its deadline over the assignment without its seal', async () => {
    const agent = new TestAgent(h.url, { ...gpuAd('chl'), gpus: [] });
    assert.equal((await agent.register()).status, 200);
    const c: ChallengeAssignment = (await agent.heartbeat()).body.challenge;
    assert.ok(c?.seal);
    assert.equal(c.seal.expiresAt, c.deadlineAt);
    const { seal, ...bare } = c;
    const trusted = trustedFrom(await identityOf(h.url));
    const order: Order = { kind: 'challenge', challengeId: c.id, nodeId: agent.nodeId, challengeDigest: canonicalDigest(bare) };
    assertSealed(order, seal, trusted);
    assertRefused({ ...order, challengeDigest: canonicalDigest({ ...bare, seed: '00'.repeat(32) }) }, seal, trusted, 'the seed');
    assertRefused({ ...order, nodeId: new TestAgent(h.url).nodeId }, seal, trusted, 'nodeId');
  });
});
