/**
 * End-to-end encrypted attempts on the agent (issue 13) against a fake coordinator: the data key is awaited and
 * opened, encrypted inputs are decrypted (digests checked), outputs and logs leave the node encrypted to the
 * buyer's key (the output key announced before the first log), a tampered input fails the attempt, a key wrapped
 * for another node or another spec is refused and the program never runs, and an encrypted checkpoint is restored
 * by a retry on another node.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Assignment, e2eSpecDigest, outputRootDigest, parseJobSpec, type ResultReport } from '@gpux/protocol';
import {
  decryptBuffer,
  decryptLogData,
  encryptBuffer,
  generateX25519KeyPair,
  MAX_LOG_PLAINTEXT_BYTES,
  unwrapKey,
  wrapKey,
  type X25519KeyPair,
  x25519Fingerprint,
} from '@gpux/protocol/e2e';
import { loadOrCreateIdentity, } from '../src/index.js';
import { ENC_KEY_FILE } from '../src/e2e/node-encryption-key.js';
import { type AttemptContext, AttemptRunner } from '../src/loop/attempt-runner.js';
import { type DataPlaneFake, nodeOnFake } from './data-plane-fake.js';
import { tempDir } from './helpers.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const buyer = generateX25519KeyPair();
const MARKER = `MARKER-${randomBytes(8).toString('hex')}`;

async function node(t: { after(fn: () => unknown): void }, fake?: DataPlaneFake) {
  const enc = generateX25519KeyPair();
  const made = await nodeOnFake(t, {
    ...(fake ? { fake } : {}),
    prefix: 'gpux-e2e-attempt-',
    encryption: enc,
    killGraceMs: 2000,
    ctx: { transfer: { retryDelayMs: 10, checkpointEveryMs: 100 }, keyWait: { minDelayMs: 20, maxWaitMs: 20_000 } },
  });
  return { fake: made.fake, ctx: made.ctx, enc };
}

/** An encrypted job's assignment with one input (its plaintext encrypted under `dataKey`, the ciphertext a blob of `fake`). */
function encryptedJob(fake: DataPlaneFake, dataKey: Uint8Array, plain: Buffer, command: string, extra: Record<string, unknown> = {}): Assignment {
  const ct = encryptBuffer(plain, dataKey);
  const blob = fake.addBlob(ct);
  const parsed = parseJobSpec({
    name: 'enc',
    image: 'busybox',
    command: ['sh', '-c', command],
    timeoutSeconds: 60,
    encryption: { buyerKey: buyer.publicKey },
    inputs: [{ path: 'secret.bin', blob, size: ct.length, encrypted: { sha256: sha(plain), size: plain.length } }],
    ...extra,
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return { attemptId: `att_${randomBytes(4).toString('hex')}`, jobId: 'job_enc', spec: parsed.spec, gpuIndices: [], leaseExpiresAt: Date.now() + 60_000 };
}

async function release(fake: DataPlaneFake, a: Assignment, dataKey: Uint8Array, to: X25519KeyPair, over: { jobId?: string; specDigest?: string } = {}) {
  const wrappedKey = await wrapKey(dataKey, to.publicKey, {
    purpose: 'input',
    jobId: over.jobId ?? a.jobId,
    attemptId: a.attemptId,
    recipientFingerprint: x25519Fingerprint(to.publicKey),
    specDigest: over.specDigest ?? e2eSpecDigest(a.spec),
  });
  fake.dataKeys.set(a.attemptId, { wrappedKey, scope: 'attempt', jobId: a.jobId });
}

async function run(ctx: AttemptContext, fake: DataPlaneFake, a: Assignment): Promise<ResultReport | undefined> {
  await new AttemptRunner(a, ctx).run();
  return fake.results.find((x) => x.attemptId === a.attemptId)?.report;
}

/** The buyer's side: the attempt's output key, unwrapped with the buyer key. */
async function outputKeyOf(report: ResultReport, a: Assignment): Promise<Uint8Array> {
  assert.ok(report.outputKey, 'the result carries the wrapped output key');
  return unwrapKey(report.outputKey, buyer.privateKey, { purpose: 'output', jobId: a.jobId, attemptId: a.attemptId, recipientFingerprint: x25519Fingerprint(buyer.publicKey) });
}

test('the node waits for its key, decrypts the input for the program, and sends outputs and logs encrypted to the buyer', async (t) => {
  const { fake, ctx, enc } = await node(t);
  const dataKey = new Uint8Array(randomBytes(32));
  const plain = Buffer.concat([Buffer.from(`${MARKER}\n`), randomBytes(300_000)]);
  const long = 'x'.repeat(MAX_LOG_PLAINTEXT_BYTES + 100);
  const a = encryptedJob(fake, dataKey, plain, `head -n 1 "$GPUX_INPUTS/secret.bin"; head -c ${long.length} /dev/zero | tr '\\0' x; cp "$GPUX_INPUTS/secret.bin" "$GPUX_OUTPUTS/copy.bin"; echo small > "$GPUX_OUTPUTS/small.txt"`);
  setTimeout(() => void release(fake, a, dataKey, enc), 150); // released while the node asks
  const report = await run(ctx, fake, a);
  assert.ok(report);
  assert.equal(report.outcome, 'succeeded', report.error ?? '');
  assert.deepEqual(fake.refusals, []);
  assert.ok(fake.e2eOrder.indexOf(`output-key ${a.attemptId}`) === 0 && fake.e2eOrder.indexOf(`logs ${a.attemptId}`) === 1, 'the output key is announced before the first log');
  assert.equal(fake.outputKeys.get(a.attemptId), report.outputKey);
  const outputKey = await outputKeyOf(report, a);

  // Outputs: all uploaded as ciphertext blobs (none inline), plaintext digests in `encrypted`, the digest over them.
  const outs = report.outputs ?? [];
  assert.deepEqual(outs.map((f) => f.path).sort(), ['copy.bin', 'small.txt']);
  for (const f of outs) {
    assert.equal(f.content, undefined, 'never inline');
    const up = [...fake.uploads.values()].find((u) => u.kind === 'output' && u.path === f.path);
    assert.ok(up?.done, `${f.path} uploaded`);
    assert.equal(sha(up.data), f.sha256);
    assert.ok(!up.data.includes(Buffer.from(MARKER)), 'ciphertext only');
    const opened = decryptBuffer(up.data, outputKey);
    assert.deepEqual({ sha256: sha(opened), size: opened.length }, f.encrypted);
    if (f.path === 'copy.bin') assert.deepEqual(opened, plain);
  }
  assert.equal(report.outputDigest, outputRootDigest(outs.map((f) => ({ path: f.path, sha256: f.encrypted?.sha256 ?? '' }))));
  assert.equal(report.commitment.outputDigest, report.outputDigest);

  // Logs: every entry encrypted; decrypted in order they hold the program's output, long text split.
  const entries = fake.logEntries.filter((e) => e.attemptId === a.attemptId).sort((x, y) => x.seq - y.seq);
  // More than one entry's worth of text: split (how reads group the lines differs under load).
  assert.ok(entries.length >= 2, `the long line was split (${entries.length} entries)`);
  assert.ok(entries.every((e) => !e.data.includes(MARKER) && !e.data.includes('xxxx')));
  const text = entries.map((e) => decryptLogData(e.data, outputKey, { attemptId: a.attemptId, seq: e.seq, stream: e.stream }).toString()).join('');
  assert.ok(text.includes(MARKER), `the marker line is in the decrypted logs (${entries.length} entries, ${text.length} characters)`);
  // Line framing may differ under load (a partial line flushed on its own); the bytes may not.
  assert.ok(text.replace(/\n/g, '').includes(long), `the long line is in the decrypted logs (${entries.length} entries, ${text.length} characters)`);
});

test('a tampered ciphertext input fails the attempt before the program runs', async (t) => {
  const { fake, ctx, enc } = await node(t);
  const dataKey = new Uint8Array(randomBytes(32));
  const a = encryptedJob(fake, dataKey, randomBytes(200_000), 'echo ran > "$GPUX_OUTPUTS/ran"');
  // The coordinator serves other bytes under the same digest: flip one bit of the ciphertext it holds and re-key it.
  const input = a.spec.inputs[0] as { blob: string; size: number };
  const ct = Buffer.from(fake.blobs.get(input.blob) as Buffer);
  ct[100_000] = (ct[100_000] as number) ^ 1;
  fake.blobs.delete(input.blob);
  const spec = { ...a.spec, inputs: [{ ...(a.spec.inputs[0] as object), blob: fake.addBlob(ct) }] } as Assignment['spec'];
  const tampered = { ...a, spec };
  await release(fake, tampered, dataKey, enc);
  const report = await run(ctx, fake, tampered);
  assert.equal(report?.outcome, 'failed');
  assert.match(report?.error ?? '', /does not decrypt/);
  assert.deepEqual(report?.outputs, [], 'the program never ran');
});

test('a key wrapped for another node, or for another spec, is refused and the program never runs', async (t) => {
  const { fake, ctx } = await node(t);
  const dataKey = new Uint8Array(randomBytes(32));
  const other = generateX25519KeyPair();
  const a = encryptedJob(fake, dataKey, randomBytes(1000), 'echo ran');
  await release(fake, a, dataKey, other);
  assert.equal(await run(ctx, fake, a), undefined, 'no result: the attempt never started');
  assert.ok(!fake.started.includes(a.attemptId));
  assert.match(fake.refusals.find((r) => r.attemptId === a.attemptId)?.reason ?? '', /does not open with this node's key/);

  const { ctx: ctx2, enc: enc2, fake: fake2 } = await node(t);
  const b = encryptedJob(fake2, dataKey, randomBytes(1000), 'echo ran');
  await release(fake2, b, dataKey, enc2, { specDigest: e2eSpecDigest({ ...b.spec, command: ['sh', '-c', 'cat /etc/passwd'] }) });
  assert.equal(await run(ctx2, fake2, b), undefined);
  assert.ok(!fake2.started.includes(b.attemptId));
  assert.equal(fake2.refusals.length, 1);
  assert.equal(fake2.logEntries.length, 0);
});

test('a key pre-wrapped in the spec for this node (scope job) opens too', async (t) => {
  const { fake, ctx, enc } = await node(t);
  const dataKey = new Uint8Array(randomBytes(32));
  const a = encryptedJob(fake, dataKey, Buffer.from('hello'), 'cat "$GPUX_INPUTS/secret.bin" > "$GPUX_OUTPUTS/o"');
  const wrappedKey = await wrapKey(dataKey, enc.publicKey, { purpose: 'input', jobId: null, attemptId: null, recipientFingerprint: x25519Fingerprint(enc.publicKey), specDigest: e2eSpecDigest(a.spec) });
  fake.dataKeys.set(a.attemptId, { wrappedKey, scope: 'job', jobId: a.jobId });
  const report = await run(ctx, fake, a);
  assert.equal(report?.outcome, 'succeeded', report?.error ?? '');
});

test('an encrypted checkpoint (under the input data key) is restored by a retry on another node', async (t) => {
  const first = await node(t);
  const { fake } = first;
  const dataKey = new Uint8Array(randomBytes(32));
  const cmd = `if [ -f "$GPUX_CHECKPOINTS/state" ]; then cp "$GPUX_CHECKPOINTS/state" "$GPUX_OUTPUTS/resumed"; else echo "${MARKER}" > "$GPUX_CHECKPOINTS/state"; sleep 0.5; fi`;
  const a = encryptedJob(fake, dataKey, Buffer.from('in'), cmd, { checkpoint: { everySeconds: 10 } });
  await release(fake, a, dataKey, first.enc);
  assert.equal((await run(first.ctx, fake, a))?.outcome, 'succeeded');
  const cp = fake.checkpoints.at(-1);
  assert.ok(cp, 'a checkpoint was uploaded');
  assert.ok(!cp.data.includes(Buffer.from(MARKER)), 'the checkpoint left the node encrypted');

  const second = await node(t, fake);
  fake.checkpoint = cp.data;
  const b: Assignment = { ...a, attemptId: `att_${randomBytes(4).toString('hex')}`, checkpoint: { sha256: cp.sha256, size: cp.data.length, attemptId: a.attemptId, createdAt: 1 } };
  await release(fake, b, dataKey, second.enc);
  const report = await run(second.ctx, fake, b);
  assert.equal(report?.outcome, 'succeeded', report?.error ?? '');
  const resumed = report?.outputs?.find((f) => f.path === 'resumed');
  const up = [...fake.uploads.values()].find((u) => u.attemptId === b.attemptId && u.path === 'resumed');
  assert.ok(resumed && up && report);
  assert.equal(decryptBuffer(up.data, await outputKeyOf(report, b)).toString(), `${MARKER}\n`);
});

test('the node encryption key is created beside the identity (0600), reused, and added to an older identity', async (t) => {
  const dir = join(await tempDir(t), 'node');
  const first = await loadOrCreateIdentity(dir);
  assert.ok(first.encryption);
  assert.equal((await stat(join(dir, ENC_KEY_FILE))).mode & 0o777, 0o600);
  assert.deepEqual((await loadOrCreateIdentity(dir)).encryption, first.encryption);
  const { rm } = await import('node:fs/promises');
  await rm(join(dir, ENC_KEY_FILE));
  const again = await loadOrCreateIdentity(dir);
  assert.equal(again.nodeId, first.nodeId, 'the identity stays');
  assert.notDeepEqual(again.encryption, first.encryption);
  assert.match(await readFile(join(dir, ENC_KEY_FILE), 'utf8'), /privateKey/);
});
