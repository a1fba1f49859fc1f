/**
 * End-to-end encrypted jobs (issue 13), on a real coordinator over SQLite and PostgreSQL: a node's encryption key
 * must be signed by its identity; an encrypted job takes encrypted blob inputs only; only the buyer releases a data
 * key, only for an assigned attempt of its job; a node reads only its own attempt's key (pre-wrapped keys too);
 * results carry plaintext digests and the output key; an attempt left without a key ends unstarted (a refusal:
 * no cost to the node) and the job is queued again. The coordinator only ever holds wrapped keys.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import {
  e2eSpecDigest,
  JobSpec,
  type JobSpecInput,
  KeyRequestsResponse,
  nodeIdFromPublicKey,
  outputRootDigest,
  type OutputFile,
  type ResultReport,
  signNodeEncryptionKey,
  verifyNodeEncryptionKey,
  WorkResponse,
} from '@gpux/protocol';
import { encryptBuffer, generateX25519KeyPair, unwrapKey, wrapKey, type WrapContext, x25519Fingerprint } from '@gpux/protocol/e2e';
import { requirePostgres, sha256Of, startPostgres } from '@gpux/testing';
import { completeReport, placeholderCommitment, UNSIGNED } from './commitment-helpers.js';
import { call, gpuAd, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

/** A TestAgent with an X25519 key it announces (signed) at registration. */
class E2eAgent extends TestAgent {
  readonly enc = generateX25519KeyPair();
  override register() {
    const enrollmentToken = this.enrollmentToken;
    const encryptionKey = signNodeEncryptionKey(this.enc.publicKey, this.keys.privateKeyPem);
    return this.request('POST', '/v1/agent/register', { publicKey: this.keys.publicKey, advertisement: this.ad, encryptionKey, ...(enrollmentToken ? { enrollmentToken } : {}) });
  }
}

interface Database {
  db?: string;
  stop(): Promise<void>;
}

const octets = { 'content-type': 'application/octet-stream', 'upload-offset': '0' };

function e2eKeys(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`end-to-end encryption keys: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let other: string;
    const buyerKeys = generateX25519KeyPair();
    const dataKey = new Uint8Array(randomBytes(32));

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), e2eKeyWaitSeconds: 2, expiryPassIntervalMs: 100 });
      buyer = await h.buyer();
      other = await h.buyer();
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    /** Encrypt `plain` under the data key, upload the ciphertext as a blob, answer the encrypted input. */
    async function encryptedInput(token: string, path: string, plain: Buffer) {
      const ct = encryptBuffer(plain, dataKey);
      const begin = await call(h.url, 'POST', '/v1/blobs/uploads', { token, body: { sha256: sha256Of(ct), size: ct.length } });
      assert.equal(begin.status, 200, JSON.stringify(begin.body));
      if (begin.body.uploadId) assert.equal((await call(h.url, 'PUT', `/v1/blobs/uploads/${begin.body.uploadId}`, { token, raw: ct, headers: octets })).status, 200);
      return { path, blob: sha256Of(ct), size: ct.length, encrypted: { sha256: sha256Of(plain), size: plain.length } };
    }
    const encryptedSpec = async (over: Partial<JobSpecInput> = {}): Promise<JobSpecInput> =>
      spec({ encryption: { buyerKey: buyerKeys.publicKey }, inputs: [await encryptedInput(buyer, 'secret.txt', Buffer.from('MARKER-plaintext'))], ...over });
    const submit = (token: string, s: JobSpecInput) => call(h.url, 'POST', '/v1/jobs', { token, body: { spec: s } });
    const assignment = (agent: TestAgent, jobId: string) =>
      waitFor(async () => {
        const res = await agent.work(200);
        return res.status === 200 ? WorkResponse.parse(res.body).assignments.find((a) => a.jobId === jobId) : undefined;
      }, `an assignment of ${jobId}`);
    const requests = async (token: string, jobId: string) => {
      const res = await call(h.url, 'GET', `/v1/jobs/${jobId}/key-requests`, { token });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return KeyRequestsResponse.parse(res.body);
    };
    /** The input key's context as the buyer's client builds it: the spec digest is of the spec it submitted. */
    const ctxFor = (s: JobSpecInput, jobId: string | null, attemptId: string | null, recipient: string): WrapContext => ({
      purpose: 'input',
      jobId,
      attemptId,
      recipientFingerprint: x25519Fingerprint(recipient),
      specDigest: e2eSpecDigest(JobSpec.parse(s)),
    });

    test('registration: an encryption key not signed by the node identity is refused', async () => {
      const agent = new E2eAgent(h.url);
      const forged = signNodeEncryptionKey(agent.enc.publicKey, new TestAgent(h.url).keys.privateKeyPem);
      const res = await agent.request('POST', '/v1/agent/register', { publicKey: agent.keys.publicKey, advertisement: agent.ad, encryptionKey: forged, enrollmentToken: agent.enrollmentToken });
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.match(res.body.error.message, /encryptionKey\.signature/);
    });

    test('an encrypted job takes encrypted blob inputs only', async () => {
      const res = await submit(buyer, spec({ encryption: { buyerKey: buyerKeys.publicKey }, inputs: [{ path: 'a.txt', content: 'plain' }] }));
      assert.equal(res.status, 400);
      assert.equal(res.body.error.code, 'SPEC_INVALID');
      assert.match(JSON.stringify(res.body.error.problems), /--encrypt/);
    });

    test('only the buyer releases a key, only for an assigned attempt, and only that node reads it', async () => {
      const agent = new E2eAgent(h.url);
      const stranger = new E2eAgent(h.url, { ...gpuAd('stranger'), labels: { pool: 'stranger' } });
      assert.equal((await agent.register()).status, 200);
      const s = await encryptedSpec();
      const sub = await submit(buyer, s);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const jobId: string = sub.body.job.id;
      const a = await assignment(agent, jobId);
      assert.equal((await stranger.register()).status, 200);

      const waiting = await agent.request('GET', `/v1/agent/attempts/${a.attemptId}/key`);
      assert.equal(waiting.status, 404, 'no key before the buyer releases it');
      assert.equal(waiting.body.error.code, 'KEY_NOT_RELEASED', 'told apart from an attempt that is over by its code');
      assert.match(waiting.body.error.message, /gpux job keys serve/);

      assert.equal((await call(h.url, 'GET', `/v1/jobs/${jobId}/key-requests`, { token: other })).status, 404, 'another buyer sees no such job');
      const list = await requests(buyer, jobId);
      assert.equal(list.requests.length, 1);
      const r = list.requests[0];
      assert.ok(r && r.attemptId === a.attemptId && r.encryptionKey);
      // What the buyer's client checks: the node id derives from the identity key, which signed the encryption key.
      assert.equal(nodeIdFromPublicKey(r.nodePublicKey), r.nodeId);
      assert.ok(verifyNodeEncryptionKey(r.encryptionKey, r.nodePublicKey));
      const wrapped = await wrapKey(dataKey, r.encryptionKey.publicKey, ctxFor(s, jobId, a.attemptId, r.encryptionKey.publicKey));

      const path = `/v1/jobs/${jobId}/attempts/${a.attemptId}/key`;
      assert.equal((await call(h.url, 'POST', path, { token: other, body: { wrappedKey: wrapped } })).status, 404, 'another buyer cannot release');
      assert.equal((await call(h.url, 'POST', path, { token: buyer, body: { wrappedKey: 'AAAA' } })).status, 400, 'not a wrapped key');
      const rel = await call(h.url, 'POST', path, { token: buyer, body: { wrappedKey: wrapped } });
      assert.equal(rel.status, 200, JSON.stringify(rel.body));
      assert.equal(rel.body.stored, true);
      assert.equal((await call(h.url, 'POST', path, { token: buyer, body: { wrappedKey: wrapped } })).body.stored, false, 'the same key again is idempotent');
      const another = await wrapKey(new Uint8Array(randomBytes(32)), r.encryptionKey.publicKey, ctxFor(s, jobId, a.attemptId, r.encryptionKey.publicKey));
      assert.equal((await call(h.url, 'POST', path, { token: buyer, body: { wrappedKey: another } })).status, 409, 'one attempt, one key');
      assert.equal((await requests(buyer, jobId)).requests.length, 0, 'released: no longer requested');

      const strangers = await stranger.request('GET', `/v1/agent/attempts/${a.attemptId}/key`);
      assert.equal(strangers.status, 404, "another node cannot read this attempt's key");
      assert.notEqual(strangers.body.error.code, 'KEY_NOT_RELEASED', 'another node is not told to wait');
      const got = await agent.request('GET', `/v1/agent/attempts/${a.attemptId}/key`);
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.equal(got.body.scope, 'attempt');
      assert.deepEqual(await unwrapKey(got.body.wrappedKey, agent.enc.privateKey, ctxFor(s, jobId, a.attemptId, agent.enc.publicKey)), dataKey);
      await assert.rejects(unwrapKey(got.body.wrappedKey, stranger.enc.privateKey, ctxFor(s, jobId, a.attemptId, stranger.enc.publicKey)));

      // The node runs it: output key announced, outputs encrypted, the commitment over plaintext digests.
      assert.equal((await agent.start(a.attemptId)).status, 200);
      const outputKey = new Uint8Array(randomBytes(32));
      const wrappedOut = await wrapKey(outputKey, buyerKeys.publicKey, { purpose: 'output', jobId, attemptId: a.attemptId, recipientFingerprint: x25519Fingerprint(buyerKeys.publicKey) });
      assert.equal((await agent.request('POST', `/v1/agent/attempts/${a.attemptId}/output-key`, { wrappedKey: wrappedOut })).status, 200);
      const plain = Buffer.from('MARKER-output');
      const ct = encryptBuffer(plain, outputKey);
      const outputs: OutputFile[] = [{ path: 'out.txt', size: ct.length, sha256: sha256Of(ct), content: ct.toString('base64'), encrypted: { sha256: sha256Of(plain), size: plain.length } }];
      const cipherDigest = outputRootDigest(outputs);
      const outputDigest = outputRootDigest([{ path: 'out.txt', sha256: sha256Of(plain) }]);
      const base: ResultReport = { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs, metrics: { durationMs: 5 }, commitment: placeholderCommitment(outputDigest, 0), commitmentSignature: UNSIGNED };
      const wrongDigest = await agent.result(a.attemptId, { ...base, outputDigest: cipherDigest, commitment: placeholderCommitment(cipherDigest, 0) });
      assert.equal(wrongDigest.status, 400, 'outputDigest covers the plaintext digests');
      const { encrypted: _e, ...plainOut } = outputs[0] as OutputFile;
      const unmarked = await agent.result(a.attemptId, { ...base, outputs: [plainOut], outputDigest: cipherDigest, commitment: placeholderCommitment(cipherDigest, 0), outputKey: wrappedOut } as ResultReport);
      assert.equal(unmarked.status, 400, 'an encrypted job\'s outputs say they are encrypted');
      assert.equal((await agent.result(a.attemptId, base)).status, 400, 'the output key is required');
      const otherBytes = { ...base, outputKey: wrappedOut, outputs: [{ ...(outputs[0] as OutputFile), sha256: sha256Of(Buffer.from('other ciphertext')) }] } as ResultReport;
      const forged = completeReport(agent, a.attemptId, otherBytes, { jobId, spec: JobSpec.parse(s) });
      const badCipher = await agent.result(a.attemptId, { ...forged, outputs });
      assert.equal(badCipher.status, 400, 'the commitment covers the ciphertext the buyer downloads');
      assert.match(JSON.stringify(badCipher.body), /ciphertextDigest/);
      const done = await agent.result(a.attemptId, { ...base, outputKey: wrappedOut } as ResultReport);
      assert.equal(done.status, 200, JSON.stringify(done.body));
      const result = await call(h.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer });
      assert.deepEqual(result.body.outputs[0].encrypted, { sha256: sha256Of(plain), size: plain.length });
      const keys = await requests(buyer, jobId);
      assert.deepEqual(keys.outputKeys.map((k) => [k.attemptId, k.wrappedKey]), [[a.attemptId, wrappedOut]]);
      assert.equal(keys.ended, true);
      assert.deepEqual(await unwrapKey(wrappedOut, buyerKeys.privateKey, { purpose: 'output', jobId, attemptId: a.attemptId, recipientFingerprint: x25519Fingerprint(buyerKeys.publicKey) }), outputKey);
    });

    test('a key pre-wrapped for a named node serves its attempt at once', async () => {
      const agent = new E2eAgent(h.url, { ...gpuAd('pre'), labels: { pool: 'pre' } });
      assert.equal((await agent.register()).status, 200);
      // The job id is not known before submission: a pre-wrapped key binds "any-job", "any-attempt" and the spec digest.
      const plainSpec = await encryptedSpec({ constraints: { nodeLabels: { pool: 'pre' } } });
      const pre = await wrapKey(dataKey, agent.enc.publicKey, ctxFor(plainSpec, null, null, agent.enc.publicKey));
      const s = { ...plainSpec, encryption: { buyerKey: buyerKeys.publicKey, preWrapped: [{ nodeId: agent.nodeId, wrappedKey: pre }] } };
      const sub = await submit(buyer, s);
      assert.equal(sub.status, 201, JSON.stringify(sub.body));
      const a = await assignment(agent, sub.body.job.id);
      const got = await agent.request('GET', `/v1/agent/attempts/${a.attemptId}/key`);
      assert.equal(got.status, 200, JSON.stringify(got.body));
      assert.deepEqual([got.body.scope, got.body.wrappedKey], ['job', pre]);
      assert.deepEqual(await unwrapKey(pre, agent.enc.privateKey, ctxFor(s, null, null, agent.enc.publicKey)), dataKey, 'the spec digest ignores preWrapped itself');
      assert.equal((await requests(buyer, sub.body.job.id)).requests.length, 0, 'nothing left to release');
      assert.equal((await call(h.url, 'POST', `/v1/jobs/${sub.body.job.id}/cancel`, { token: buyer })).status, 200);
    });

    test('an attempt left without a key ends unstarted, at no cost to the node, and the job is queued again', async () => {
      const agent = new E2eAgent(h.url, { ...gpuAd('waits'), labels: { pool: 'waits' } });
      assert.equal((await agent.register()).status, 200);
      const sub = await submit(buyer, await encryptedSpec({ maxRetries: 0, constraints: { nodeLabels: { pool: 'waits' } } }));
      const jobId: string = sub.body.job.id;
      const a = await assignment(agent, jobId);
      const job = await waitFor(async () => {
        const res = await call(h.url, 'GET', `/v1/jobs/${jobId}`, { token: buyer });
        return res.body.job.state === 'failed' ? res.body : undefined;
      }, 'the key wait to end the attempt');
      const attempt = job.attempts.find((x: { id: string }) => x.id === a.attemptId);
      assert.match(attempt.error, /no data key released by the buyer/);
      assert.match(job.job.error, /no data key released by the buyer/);
      assert.ok(job.events.some((e: { type: string }) => e.type === 'attempt.refused'), 'ended as a refusal: no penalty for the node');
      const over = await agent.request('GET', `/v1/agent/attempts/${a.attemptId}/key`);
      assert.equal(over.status, 404);
      assert.equal(over.body.error.code, 'NOT_FOUND', 'an ended attempt: the node stops asking');
    });

    test('a plain job\'s result may carry no output key nor encrypted outputs', async () => {
      const agent = new E2eAgent(h.url, { ...gpuAd('plain'), labels: { pool: 'plain' } });
      assert.equal((await agent.register()).status, 200);
      const sub = await submit(buyer, spec({ constraints: { nodeLabels: { pool: 'plain' } } }));
      const a = await assignment(agent, sub.body.job.id);
      assert.equal((await agent.start(a.attemptId)).status, 200);
      assert.equal((await agent.request('GET', `/v1/agent/attempts/${a.attemptId}/key`)).status, 400, 'a plain job has no key');
      const outputDigest = outputRootDigest([]);
      const wrapped = await wrapKey(dataKey, buyerKeys.publicKey, { purpose: 'output', jobId: 'x', attemptId: 'y', recipientFingerprint: x25519Fingerprint(buyerKeys.publicKey) });
      const res = await agent.result(a.attemptId, { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs: [], outputKey: wrapped, metrics: { durationMs: 1 }, commitment: placeholderCommitment(outputDigest, 0), commitmentSignature: UNSIGNED } as ResultReport);
      assert.equal(res.status, 400, JSON.stringify(res.body));
      assert.equal((await call(h.url, 'GET', `/v1/jobs/${sub.body.job.id}/key-requests`, { token: buyer })).status, 400);
    });
  });
}

e2eKeys('SQLite', async () => ({ stop: async () => {} }));
e2eKeys(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
