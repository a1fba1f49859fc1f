/** Signed result commitments (issue 11): sign/verify, every tampered field fails, the encoding is stable. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  buildCommitment,
  canonicalCommitment,
  canonicalJson,
  generateNodeKeyPair,
  inputRootDigest,
  metricsDigest,
  nodeIdFromPublicKey,
  outputRootDigest,
  type ResultCommitment,
  ResultCommitment as ResultCommitmentSchema,
  ResultReport,
  sha256Hex,
  signCommitment,
  verifyCommitment,
} from '../src/index.js';

const keys = generateNodeKeyPair();
const nodeId = nodeIdFromPublicKey(keys.publicKey);
const commitment: ResultCommitment = buildCommitment({
  jobId: 'j-1',
  attemptId: 'a-1',
  nodeId,
  inputs: [{ path: 'in/data.txt', content: 'hello', encoding: 'utf8' }],
  outputDigest: outputRootDigest([{ path: 'out/a.txt', sha256: sha256Hex('42\n') }]),
  exitCode: 0,
  metrics: { durationMs: 1234, logBytes: 10, logsTruncated: false },
});

describe('result commitments', () => {
  test('a signed commitment verifies with the node key, and not with another', () => {
    const sig = signCommitment(commitment, keys.privateKeyPem);
    assert.equal(Buffer.from(sig, 'base64').length, 64);
    assert.ok(verifyCommitment(commitment, sig, keys.publicKey));
    assert.equal(verifyCommitment(commitment, sig, generateNodeKeyPair().publicKey), false);
    assert.equal(verifyCommitment(commitment, 'not a signature', keys.publicKey), false);
    assert.equal(verifyCommitment(commitment, sig, 'AAAA'), false, 'a malformed key is false, never a throw');
    assert.ok(ResultCommitmentSchema.safeParse(commitment).success);
  });

  test('changing any field breaks the signature', () => {
    const sig = signCommitment(commitment, keys.privateKeyPem);
    const tampered: ResultCommitment[] = [
      { ...commitment, jobId: 'j-2' },
      { ...commitment, attemptId: 'a-2' },
      { ...commitment, nodeId: 'n-other' },
      { ...commitment, inputDigest: 'f'.repeat(64) },
      { ...commitment, outputDigest: 'f'.repeat(64) },
      { ...commitment, exitCode: 1 },
      { ...commitment, exitCode: null },
      { ...commitment, metricsDigest: 'f'.repeat(64) },
    ];
    for (const t of tampered) assert.equal(verifyCommitment(t, sig, keys.publicKey), false, JSON.stringify(t));
  });

  test('the canonical encoding is stable: sorted keys, a domain prefix, independent of key order', () => {
    const reordered = Object.fromEntries(Object.entries(commitment).reverse()) as ResultCommitment;
    assert.deepEqual(canonicalCommitment(reordered), canonicalCommitment(commitment));
    const fixed: ResultCommitment = { v: 1, jobId: 'j', attemptId: 'a', nodeId: 'n', inputDigest: '0'.repeat(64), outputDigest: '1'.repeat(64), exitCode: 3, metricsDigest: '2'.repeat(64) };
    assert.equal(
      canonicalCommitment(fixed).toString('utf8'),
      `gpux-commitment-v1\n{"attemptId":"a","exitCode":3,"inputDigest":"${'0'.repeat(64)}","jobId":"j","metricsDigest":"${'2'.repeat(64)}","nodeId":"n","outputDigest":"${'1'.repeat(64)}","v":1}`,
    );
    // Extra members are not part of what is signed (and the schema refuses them).
    assert.deepEqual(canonicalCommitment({ ...fixed, extra: 1 } as ResultCommitment), canonicalCommitment(fixed));
    assert.equal(ResultCommitmentSchema.safeParse({ ...fixed, extra: 1 }).success, false);
    assert.equal(canonicalJson({ b: [2, { d: 1, c: undefined }], a: null }), '{"a":null,"b":[2,{"d":1}]}');
  });

  test('digests: inputs by decoded bytes, metrics by their known fields', () => {
    const utf8 = inputRootDigest([{ path: 'x', content: 'hi', encoding: 'utf8' }]);
    assert.equal(utf8, inputRootDigest([{ path: 'x', content: Buffer.from('hi').toString('base64'), encoding: 'base64' }]), 'same bytes, same digest');
    assert.equal(utf8, outputRootDigest([{ path: 'x', sha256: sha256Hex('hi') }]));
    assert.equal(inputRootDigest([]), outputRootDigest([]));
    assert.equal(metricsDigest({ durationMs: 5 }), sha256Hex('{"durationMs":5}'));
    assert.equal(metricsDigest({ durationMs: 5, logsTruncated: true, logBytes: 1 }), sha256Hex('{"durationMs":5,"logBytes":1,"logsTruncated":true}'));
  });

  test('a result report requires the commitment and its signature', () => {
    const base = { outcome: 'succeeded', exitCode: 0, outputDigest: commitment.outputDigest, outputs: [], metrics: { durationMs: 1 } };
    assert.equal(ResultReport.safeParse(base).success, false);
    assert.equal(ResultReport.safeParse({ ...base, commitment, commitmentSignature: 'x' }).success, false, 'a signature is base64 of 64 bytes');
    assert.ok(ResultReport.safeParse({ ...base, commitment, commitmentSignature: signCommitment(commitment, keys.privateKeyPem) }).success);
  });
});
