/**
 * Jobs read and write blobs (issue 13), on a real coordinator over SQLite and PostgreSQL: blob inputs checked at
 * submission; a node reads only its attempt's named inputs (Range too), uploads outputs with a capability token
 * (bad, foreign and reused tokens refused), and the buyer downloads them (blob: true only for what this attempt
 * uploaded); a checkpoint rides on the retry's sealed assignment after the first attempt is lost; the garbage
 * collector keeps what jobs reference and frees it after they end. Abuse: bounds per attempt.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  assignmentOrder,
  checkSeal,
  CoordinatorIdentityResponse,
  OUTPUT_UPLOAD_TOKEN_HEADER,
  outputRootDigest,
  signRequest,
  trustedKeys,
  WorkResponse,
  type Assignment,
  type JobSpecInput,
  type OutputFile,
  type ResultReport,
} from '@gpux/protocol';
import { requirePostgres, seededBytes, sha256Of, startPostgres } from '@gpux/testing';
import type { BlobConfig } from '../src/blobs/config.js';
import { FsBlobBackend } from '../src/blobs/fs-backend.js';
import { collectBlobGarbage, jobBlobRefs, ORPHAN_GRACE_MS } from '../src/services/blob-gc.js';
import { placeholderCommitment, UNSIGNED } from './commitment-helpers.js';
import { call, type Harness, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const KiB = 1024;
const blobSettings = (o: Partial<BlobConfig>) => o as BlobConfig;
const octets = (offset: number, token?: string) => ({ 'content-type': 'application/octet-stream', 'upload-offset': String(offset), ...(token ? { [OUTPUT_UPLOAD_TOKEN_HEADER]: token } : {}) });

interface Database {
  db?: string;
  stop(): Promise<void>;
}

/** A signed GET with extra headers (Range): the signature covers method, path and the empty body. */
function signedGet(agent: TestAgent, path: string, headers: Record<string, string> = {}): Promise<Response> {
  const sig = signRequest({ method: 'GET', path, body: '', nodeId: agent.nodeId }, agent.keys.privateKeyPem);
  return fetch(agent.url + path, { headers: { ...sig, ...headers } });
}

/** A report of outputs that live in the blob store (no content); TestAgent.result() signs it. */
function blobReport(outputs: OutputFile[]): ResultReport {
  const outputDigest = outputRootDigest(outputs);
  return { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs, metrics: { durationMs: 5 }, commitment: placeholderCommitment(outputDigest, 0), commitmentSignature: UNSIGNED };
}

function harnessApi(h: () => Harness) {
  const putBlob = async (token: string, data: Buffer): Promise<string> => {
    const begin = await call(h().url, 'POST', '/v1/blobs/uploads', { token, body: { sha256: sha256Of(data), size: data.length } });
    assert.equal(begin.status, 200, JSON.stringify(begin.body));
    if (begin.body.uploadId) {
      const put = await call(h().url, 'PUT', `/v1/blobs/uploads/${begin.body.uploadId}`, { token, raw: data, headers: octets(0) });
      assert.equal(put.status, 200, JSON.stringify(put.body));
    }
    return sha256Of(data);
  };
  const submit = (token: string, s: JobSpecInput) => call(h().url, 'POST', '/v1/jobs', { token, body: { spec: s } });
  const assignment = (agent: TestAgent, jobId: string) =>
    waitFor(async () => {
      const res = await agent.work(200);
      return res.status === 200 ? WorkResponse.parse(res.body).assignments.find((a) => a.jobId === jobId) : undefined;
    }, `an assignment of ${jobId}`);
  const openUpload = (agent: TestAgent, attemptId: string, path: string, data: Buffer) => agent.request('POST', `/v1/agent/attempts/${attemptId}/outputs`, { path, sha256: sha256Of(data), size: data.length });
  const putChunk = (uploadId: string, token: string | undefined, offset: number, data: Buffer) => call(h().url, 'PUT', `/v1/agent/uploads/${uploadId}`, { raw: data, headers: octets(offset, token) });
  return { putBlob, submit, assignment, openUpload, putChunk };
}

function jobBlobs(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`jobs and blobs: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let buyer: string;
    let other: string;
    let agent: TestAgent;
    const api = harnessApi(() => h);
    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), blobs: blobSettings({ chunkBytes: 64 * KiB, maxOutputBytes: 256 * KiB, maxUploadsPerAttempt: 6 }) });
      buyer = await h.buyer();
      other = await h.buyer();
      agent = new TestAgent(h.url);
      assert.equal((await agent.register()).status, 200);
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    test('submission: a blob input must be a blob the buyer holds, with its size; nothing is written otherwise', async () => {
      const mine = seededBytes(5 * KiB, 1);
      const theirs = seededBytes(6 * KiB, 2);
      const sha = await api.putBlob(buyer, mine);
      const theirSha = await api.putBlob(other, theirs);
      const before = (await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs.length;
      const cases: Array<[string, JobSpecInput['inputs'], string]> = [
        ['not held', [{ path: 'data/x.bin', blob: sha256Of(seededBytes(7, 3)), size: 7 }], 'inputs.0.blob'],
        ['another buyer\'s blob', [{ path: 'data/x.bin', blob: theirSha, size: theirs.length }], 'inputs.0.blob'],
        ['the wrong size', [{ path: 'a.txt', content: 'hi' }, { path: 'data/x.bin', blob: sha, size: mine.length + 1 }], 'inputs.1.size'],
      ];
      for (const [what, inputs, path] of cases) {
        const res = await api.submit(buyer, spec({ inputs }));
        assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
        assert.equal(res.body.error.code, 'SPEC_INVALID');
        assert.deepEqual(res.body.error.problems.map((p: { path: string }) => p.path), [path], what);
        assert.match(res.body.error.message, path.endsWith('blob') ? /gpux blob put FILE/ : /set size to/, what);
      }
      assert.equal((await call(h.url, 'GET', '/v1/jobs', { token: buyer })).body.jobs.length, before, 'no job was written');
      const ok = await api.submit(buyer, spec({ resources: { gpu: { count: 8 } }, inputs: [{ path: 'data/x.bin', blob: sha, size: mine.length }] }));
      assert.equal(ok.status, 201, JSON.stringify(ok.body));
      assert.equal((await call(h.url, 'POST', `/v1/jobs/${ok.body.job.id}/cancel`, { token: buyer })).status, 200);
    });

    test('a node reads its attempt\'s blob inputs, uploads outputs with a token, and the buyer downloads them', async () => {
      const input = seededBytes(40 * KiB, 4);
      const inSha = await api.putBlob(buyer, input);
      const theirSha = await api.putBlob(other, seededBytes(3 * KiB, 5));
      const job = await api.submit(buyer, spec({ inputs: [{ path: 'data/in.bin', blob: inSha, size: input.length }] }));
      assert.equal(job.status, 201, JSON.stringify(job.body));
      const a = await api.assignment(agent, job.body.job.id);
      const base = `/v1/agent/attempts/${a.attemptId}`;

      const whole = await signedGet(agent, `${base}/inputs/${inSha}`);
      assert.equal(whole.status, 200);
      assert.ok(Buffer.from(await whole.arrayBuffer()).equals(input), 'the input bytes');
      const part = await signedGet(agent, `${base}/inputs/${inSha}`, { range: 'bytes=100-199' });
      assert.equal(part.status, 206);
      assert.equal(part.headers.get('content-range'), `bytes 100-199/${input.length}`);
      assert.ok(Buffer.from(await part.arrayBuffer()).equals(input.subarray(100, 200)));
      const unnamed = await signedGet(agent, `${base}/inputs/${theirSha}`);
      assert.equal(unnamed.status, 404, 'a blob the job does not name');
      await unnamed.arrayBuffer();
      const stranger = new TestAgent(h.url);
      assert.equal((await stranger.register()).status, 200);
      const notMine = await signedGet(stranger, `${base}/inputs/${inSha}`);
      assert.equal(notMine.status, 404, 'another node\'s attempt');
      await notMine.arrayBuffer();

      assert.equal((await agent.start(a.attemptId)).status, 200);
      const out = seededBytes(100 * KiB, 6);
      const log = seededBytes(2 * KiB, 7);
      const up = await api.openUpload(agent, a.attemptId, 'out/model.bin', out);
      assert.equal(up.status, 200, JSON.stringify(up.body));
      assert.equal(up.body.offset, 0);
      assert.ok(up.body.uploadToken);
      const up2 = await api.openUpload(agent, a.attemptId, 'out/log.txt', log);
      assert.equal(up2.status, 200, JSON.stringify(up2.body));
      const bad = await api.putChunk(up.body.uploadId, 'not-the-token', 0, out.subarray(0, 64 * KiB));
      assert.equal(bad.status, 401);
      assert.equal(bad.body.error.code, 'UNAUTHORIZED');
      assert.equal((await api.putChunk(up.body.uploadId, undefined, 0, out.subarray(0, 64 * KiB))).status, 401, 'no token');
      assert.equal((await api.putChunk(up.body.uploadId, up2.body.uploadToken, 0, out.subarray(0, 64 * KiB))).status, 401, 'another upload\'s token');
      const c1 = await api.putChunk(up.body.uploadId, up.body.uploadToken, 0, out.subarray(0, 64 * KiB));
      assert.equal(c1.status, 200, JSON.stringify(c1.body));
      assert.equal(c1.body.offset, 64 * KiB);
      const st = await call(h.url, 'GET', `/v1/agent/uploads/${up.body.uploadId}`, { headers: { [OUTPUT_UPLOAD_TOKEN_HEADER]: up.body.uploadToken } });
      assert.equal(st.body.offset, 64 * KiB, 'where to resume');
      const c2 = await api.putChunk(up.body.uploadId, up.body.uploadToken, 64 * KiB, out.subarray(64 * KiB));
      assert.equal(c2.status, 200, JSON.stringify(c2.body));
      assert.equal(c2.body.blob.sha256, sha256Of(out));
      assert.equal((await api.putChunk(up.body.uploadId, up.body.uploadToken, 0, out.subarray(0, 10))).status, 401, 'a token dies with its completed upload');
      assert.equal((await api.putChunk(up2.body.uploadId, up2.body.uploadToken, 0, log)).status, 200);

      const claimed = seededBytes(5, 8);
      const outputs: OutputFile[] = [
        { path: 'out/model.bin', size: out.length, sha256: sha256Of(out) },
        { path: 'out/log.txt', size: log.length, sha256: sha256Of(log), blob: true },
        // Never uploaded: the node's own blob flag is not believed.
        { path: 'out/claimed.bin', size: claimed.length, sha256: sha256Of(claimed), blob: true },
      ];
      const res = await agent.result(a.attemptId, blobReport(outputs));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const result = await call(h.url, 'GET', `/v1/jobs/${job.body.job.id}/result`, { token: buyer });
      assert.equal(result.status, 200, JSON.stringify(result.body));
      const byPath = new Map(result.body.outputs.map((f: OutputFile) => [f.path, f]));
      assert.equal((byPath.get('out/model.bin') as OutputFile).blob, true);
      assert.equal((byPath.get('out/log.txt') as OutputFile).blob, true);
      assert.equal((byPath.get('out/claimed.bin') as OutputFile).blob, undefined, 'no blob flag for what was never uploaded');
      const dl = await fetch(`${h.url}/v1/blobs/${sha256Of(out)}`, { headers: { authorization: `Bearer ${buyer}` } });
      assert.equal(dl.status, 200);
      assert.ok(Buffer.from(await dl.arrayBuffer()).equals(out), 'the buyer reads the output');
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${sha256Of(out)}/info`, { token: other })).status, 404, 'and nobody else');

      const ended = await signedGet(agent, `${base}/inputs/${inSha}`);
      assert.equal(ended.status, 410, 'an ended attempt reads nothing');
      await ended.arrayBuffer();
      assert.equal((await api.openUpload(agent, a.attemptId, 'out/late.bin', log)).status, 410, 'nor opens uploads');
    });

    test('abuse: declared outputs over the bound, too many uploads, uploads of an ended attempt', async () => {
      const job = await api.submit(buyer, spec({ name: 'abuse' }));
      const a = await api.assignment(agent, job.body.job.id);
      const base = `/v1/agent/attempts/${a.attemptId}`;
      const huge = await agent.request('POST', `${base}/outputs`, { path: 'out/huge', sha256: sha256Of(seededBytes(1, 9)), size: 2 ** 40 });
      assert.equal(huge.status, 429, JSON.stringify(huge.body));
      assert.match(huge.body.error.message, /GPUX_MAX_OUTPUT_BYTES/);
      assert.equal((await agent.request('POST', `${base}/outputs`, { path: 'out/a', sha256: sha256Of(seededBytes(1, 10)), size: 200 * KiB })).status, 200);
      const sum = await agent.request('POST', `${base}/outputs`, { path: 'out/b', sha256: sha256Of(seededBytes(1, 11)), size: 100 * KiB });
      assert.equal(sum.status, 429, 'the outputs of one attempt in all');
      assert.equal((await agent.request('POST', `${base}/checkpoints`, { sha256: sha256Of(seededBytes(1, 12)), size: 2 ** 40 })).status, 429, 'a checkpoint over the bound');
      let status = 200;
      let opened = 1;
      for (let i = 0; status === 200 && i < 10; i++) {
        status = (await agent.request('POST', `${base}/outputs`, { path: `out/s${i}`, sha256: sha256Of(seededBytes(1, 100 + i)), size: 1 })).status;
        if (status === 200) opened++;
      }
      assert.equal(status, 429);
      assert.equal(opened, 6, 'GPUX_MAX_UPLOADS_PER_ATTEMPT');
      const stray = await agent.request('POST', `/v1/agent/attempts/${a.attemptId.slice(0, -2)}xx/outputs`, { path: 'out/x', sha256: sha256Of(seededBytes(1, 13)), size: 1 });
      assert.equal(stray.status, 404, 'no such attempt');
      assert.equal((await agent.result(a.attemptId, blobReport([]))).status, 200);
    });

    test('GC keeps the blobs of a live job and frees them after it ends, its dispute window and retention', async () => {
      const data = seededBytes(4 * KiB, 20);
      const sha = await api.putBlob(buyer, data);
      const job = await api.submit(buyer, spec({ name: 'gc', resources: { gpu: { count: 8 } }, inputs: [{ path: 'in.bin', blob: sha, size: data.length }] }));
      assert.equal(job.status, 201, JSON.stringify(job.body));
      const cfg = h.coord.config.blobs;
      const backend = new FsBlobBackend(cfg.dir);
      const policy = { disputeWindowMs: h.coord.config.disputeWindowSeconds * 1000, outputRetentionMs: cfg.retentionMs };
      const gc = (now: number) =>
        collectBlobGarbage({ store: h.coord.store, backend, config: cfg, logger: { info() {}, warn() {} }, liveJobBlobRefs: jobBlobRefs(h.coord.store, { now: () => now }, policy) }, now);
      const t0 = Date.now();
      await gc(t0 + cfg.retentionMs + ORPHAN_GRACE_MS + 60_000);
      assert.ok(await backend.stat(sha), 'a queued job\'s input stays past retention');
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${sha}/info`, { token: buyer })).status, 200);
      assert.equal((await call(h.url, 'POST', `/v1/jobs/${job.body.job.id}/cancel`, { token: buyer })).status, 200);
      const late = t0 + policy.disputeWindowMs + 3 * cfg.retentionMs + ORPHAN_GRACE_MS + 60_000;
      await gc(late);
      assert.equal((await call(h.url, 'GET', `/v1/blobs/${sha}/info`, { token: buyer })).status, 404, 'the hold is dropped once the job ended long ago');
      assert.equal(await backend.stat(sha), undefined, 'and the bytes are gone');
    });
  });
}

describe('checkpoints: a retry after a lost attempt starts from the latest one, named in its sealed assignment', () => {
  let h: Harness;
  const api = harnessApi(() => h);
  before(async () => {
    h = await startHarness({ heartbeatIntervalMs: 200, leaseTtlMs: 800, nodeOfflineAfterMs: 800, expiryPassIntervalMs: 100, retryBaseBackoffMs: 100, authFailuresPerMinute: 3 });
  });
  after(async () => h?.close());

  test('checkpoint upload → node lost → the retry carries it and reads it', async () => {
    const buyer = await h.buyer();
    const first = new TestAgent(h.url);
    assert.equal((await first.register()).status, 200);
    const job = await api.submit(buyer, spec({ name: 'ckpt', checkpoint: { everySeconds: 60 } }));
    assert.equal(job.status, 201, JSON.stringify(job.body));
    const a: Assignment = await api.assignment(first, job.body.job.id);
    assert.equal(a.checkpoint, undefined, 'the first attempt starts fresh');
    assert.equal((await first.start(a.attemptId)).status, 200);
    const ckpt = seededBytes(30 * KiB, 30);
    const up = await first.request('POST', `/v1/agent/attempts/${a.attemptId}/checkpoints`, { sha256: sha256Of(ckpt), size: ckpt.length });
    assert.equal(up.status, 200, JSON.stringify(up.body));
    const done = await api.putChunk(up.body.uploadId, up.body.uploadToken, 0, ckpt);
    assert.equal(done.status, 200, JSON.stringify(done.body));
    // The first node goes silent: its attempt is lost and the job queued again.
    await waitFor(async () => {
      const j = await call(h.url, 'GET', `/v1/jobs/${job.body.job.id}`, { token: buyer });
      return j.body.attempts[0]?.state === 'lost';
    }, 'the first attempt lost');
    const second = new TestAgent(h.url);
    assert.equal((await second.register()).status, 200);
    const retry = await api.assignment(second, job.body.job.id);
    assert.notEqual(retry.attemptId, a.attemptId);
    assert.deepEqual(retry.checkpoint && { sha256: retry.checkpoint.sha256, size: retry.checkpoint.size, attemptId: retry.checkpoint.attemptId }, { sha256: sha256Of(ckpt), size: ckpt.length, attemptId: a.attemptId });
    const identity = CoordinatorIdentityResponse.parse((await call(h.url, 'GET', '/v1/coordinator/identity')).body);
    const firstKey = identity.keys[0];
    assert.ok(firstKey);
    const trusted = trustedKeys(new Map([[firstKey.fingerprint, firstKey.publicKey]]), identity.keys);
    assert.deepEqual(checkSeal(assignmentOrder(retry, second.nodeId), retry.seal, trusted, Date.now()), { ok: true });
    const altered = { ...retry, checkpoint: { ...(retry.checkpoint as NonNullable<Assignment['checkpoint']>), sha256: sha256Of(seededBytes(1, 31)) } };
    assert.equal(checkSeal(assignmentOrder(altered, second.nodeId), retry.seal, trusted, Date.now()).ok, false, 'the seal covers the checkpoint');
    const got = await signedGet(second, `/v1/agent/attempts/${retry.attemptId}/checkpoint`);
    assert.equal(got.status, 200);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(ckpt), 'the retry reads the checkpoint');
  });

  // Last in this harness: it blocks 127.0.0.1's authenticated requests for a minute.
  test('refused upload tokens count as failed authentications of the address', async () => {
    for (let i = 0; i < 3; i++) assert.equal((await api.putChunk('upl_guess', `guess-${i}`, 0, Buffer.from('x'))).status, 401);
    const blocked = await api.putChunk('upl_guess', 'guess-4', 0, Buffer.from('x'));
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.error.code, 'RATE_LIMITED');
  });
});

jobBlobs('SQLite', async () => ({ stop: async () => {} }));
jobBlobs(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
