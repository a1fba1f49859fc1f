/**
 * End-to-end encryption from the CLI (issue 13), through main() against a real in-process coordinator and a
 * hand-driven signed node (the real agent's side comes with the agent work): `gpux keys create`, `gpux job submit
 * --encrypt` (the coordinator gets ciphertext only), `gpux job keys release` (only to a node whose key its identity
 * signed), the node decrypts its input, and `gpux job result --out` decrypts the outputs with the buyer key.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { e2eSpecDigest, generateNodeKeyPair, JobSpec, nodeIdFromPublicKey, outputRootDigest, sha256Hex, signCommitment, buildCommitment, signNodeEncryptionKey, signRequest } from '@gpux/protocol';
import { decryptBuffer, encryptBuffer, generateX25519KeyPair, unwrapKey, wrapKey, x25519Fingerprint } from '@gpux/protocol/e2e';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

describe('gpux keys, job submit --encrypt, job keys release, job result --out', () => {
  let coord: RunningCoordinator;
  let dir: string;
  let buyer: string;
  let enrollment: string;
  const node = generateNodeKeyPair();
  const nodeId = nodeIdFromPublicKey(node.publicKey);
  const enc = generateX25519KeyPair();
  const run = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args, '--coordinator', coord.url, '--token', buyer), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const runBare = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  /** A signed node request (the agent's signature scheme); JSON or raw bytes back. */
  const nodeCall = async (method: 'GET' | 'POST', path: string, body?: unknown) => {
    const raw = body === undefined ? '' : JSON.stringify(body);
    const headers = { ...signRequest({ method, path, body: raw, nodeId }, node.privateKeyPem), ...(raw ? { 'content-type': 'application/json' } : {}) };
    const res = await fetch(coord.url + path, { method, headers, ...(raw ? { body: raw } : {}) });
    const bytes = Buffer.from(await res.arrayBuffer());
    const json = res.headers.get('content-type')?.includes('json') ? JSON.parse(bytes.toString()) : undefined;
    return { status: res.status, json, bytes };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-e2e-'));
    const config = loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, verify: false, challenge: 'off' });
    coord = await startCoordinator(config);
    const p = await issueToken(coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
    enrollment = (await issueEnrollment(coord.store, { accountId: p.accountId, name: 'nodes' }, systemClock, cryptoRandom)).token;
    buyer = (await issueToken(coord.store, { role: 'buyer', name: 'buyer' }, systemClock, cryptoRandom)).token;
  });
  after(async () => {
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('the whole buyer path, with the coordinator holding ciphertext and wrapped keys only', async () => {
    const created = await runBare('keys', 'create', '--json');
    assert.equal(created.code, 0, created.err);
    const buyerPub = JSON.parse(created.out).publicKey as string;
    assert.equal(statSync(join(dir, 'home', 'e2e-key.json')).mode & 0o777, 0o600);
    assert.notEqual((await runBare('keys', 'create')).code, 0, 'an existing key is not replaced without --force');
    assert.match((await runBare('keys', 'show')).out, new RegExp(x25519Fingerprint(buyerPub)));

    const secret = Buffer.concat([Buffer.from('MARKER-secret-input '), randomBytes(200_000)]);
    writeFileSync(join(dir, 'data.bin'), secret);
    writeFileSync(join(dir, 'job.yaml'), `name: enc\nimage: busybox\ncommand: [cat]\nencrypted: true\ninputs:\n  - { path: data.bin, file: ./data.bin }\n`);
    const sub = await run('job', 'submit', join(dir, 'job.yaml'), '--json');
    assert.equal(sub.code, 0, sub.err);
    const job = JSON.parse(sub.out).job;
    assert.equal(job.spec.encryption.buyerKey, buyerPub);
    const input = job.spec.inputs[0];
    assert.deepEqual(input.encrypted, { sha256: sha256Hex(secret), size: secret.length });
    assert.notEqual(input.blob, sha256Hex(secret), 'the blob is ciphertext');
    assert.equal(statSync(join(dir, 'home', 'e2e-jobs', `${job.id}.json`)).mode & 0o777, 0o600);

    const ad = { hostname: 'enc-node', agentVersion: '0.0.0-test', os: 'linux', arch: 'x64', cpuCores: 8, memoryMb: 32768, gpus: [], docker: { available: false }, executors: ['process'] };
    const reg = await nodeCall('POST', '/v1/agent/register', { publicKey: node.publicKey, advertisement: ad, enrollmentToken: enrollment, encryptionKey: signNodeEncryptionKey(enc.publicKey, node.privateKeyPem) });
    assert.equal(reg.status, 200, JSON.stringify(reg.json));
    let assignment: { attemptId: string; jobId: string; spec: unknown } | undefined;
    for (let i = 0; i < 50 && !assignment; i++) assignment = (await nodeCall('GET', '/v1/agent/work?waitMs=200')).json?.assignments?.[0];
    assert.ok(assignment, 'the node is assigned the job');
    assert.equal((await nodeCall('GET', `/v1/agent/attempts/${assignment.attemptId}/key`)).status, 404);

    const rel = await run('job', 'keys', 'release', job.id);
    assert.equal(rel.code, 0, rel.err);
    assert.match(rel.err, new RegExp(`released the data key to node ${nodeId}`));
    const got = await nodeCall('GET', `/v1/agent/attempts/${assignment.attemptId}/key`);
    assert.equal(got.status, 200);
    // The node: the spec digest it computes from its assignment must be the one the buyer wrapped for.
    const specDigest = e2eSpecDigest(JobSpec.parse(assignment.spec));
    const dataKey = await unwrapKey(got.json.wrappedKey, enc.privateKey, { purpose: 'input', jobId: job.id, attemptId: assignment.attemptId, recipientFingerprint: x25519Fingerprint(enc.publicKey), specDigest });
    const blob = await nodeCall('GET', `/v1/agent/attempts/${assignment.attemptId}/inputs/${input.blob}`);
    assert.equal(blob.status, 200);
    assert.ok(!blob.bytes.includes(Buffer.from('MARKER-secret-input')), 'the coordinator serves ciphertext');
    assert.deepEqual(decryptBuffer(blob.bytes, dataKey), secret);

    // The node reports an encrypted output to the buyer's key.
    assert.equal((await nodeCall('POST', `/v1/agent/attempts/${assignment.attemptId}/start`)).status, 200);
    const outputKey = new Uint8Array(randomBytes(32));
    const wrappedOut = await wrapKey(outputKey, buyerPub, { purpose: 'output', jobId: job.id, attemptId: assignment.attemptId, recipientFingerprint: x25519Fingerprint(buyerPub) });
    const plainOut = Buffer.from('MARKER-secret-output\n');
    const ct = encryptBuffer(plainOut, outputKey);
    const outputs = [{ path: 'result.txt', size: ct.length, sha256: sha256Hex(ct), content: ct.toString('base64'), encrypted: { sha256: sha256Hex(plainOut), size: plainOut.length } }];
    const outputDigest = outputRootDigest([{ path: 'result.txt', sha256: sha256Hex(plainOut) }]);
    const metrics = { durationMs: 10 };
    const ciphertextDigest = outputRootDigest(outputs);
    const commitment = buildCommitment({ jobId: job.id, attemptId: assignment.attemptId, nodeId, inputs: job.spec.inputs, outputDigest, exitCode: 0, metrics, ciphertextDigest });
    const result = { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs, outputKey: wrappedOut, metrics, commitment, commitmentSignature: signCommitment(commitment, node.privateKeyPem) };
    const posted = await nodeCall('POST', `/v1/agent/attempts/${assignment.attemptId}/result`, result);
    assert.equal(posted.status, 200, JSON.stringify(posted.json));

    const out = join(dir, 'out');
    const res = await run('job', 'result', job.id, '--out', out);
    assert.equal(res.code, 0, res.err);
    assert.deepEqual(readFileSync(join(out, 'result.txt')), plainOut);
    const shown = await run('job', 'result', job.id);
    assert.equal(shown.code, 0, `the output digest over plaintext digests checks out: ${shown.err}`);
  });

  test('an encrypted spec may not hold inline inputs', async () => {
    writeFileSync(join(dir, 'inline.yaml'), `name: enc\nimage: busybox\ncommand: [cat]\ninputs:\n  - { path: a.txt, content: hi }\n`);
    const r = await run('job', 'submit', join(dir, 'inline.yaml'), '--encrypt');
    assert.notEqual(r.code, 0);
    assert.match(r.err, /must be local files/);
  });
});
