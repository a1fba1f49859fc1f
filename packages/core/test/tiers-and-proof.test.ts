/** Trust tiers in the scheduler (from the node's record), the proof-of-hardware score in the performance score, attestation policy. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JobSpec } from '@gpux/protocol';
import {
  applyOutcome,
  CapacityIndex,
  DEFAULT_NODE_STATS_POLICY,
  emptyNodeStats,
  expectedRuntimeMs,
  expectedRuntimeRatio,
  explainJob,
  type JobRecord,
  type NodeProofRecord,
  type NodeRecord,
  PlacementEngine,
  PROOF_PRIOR_RUNS,
  provenScoreOf,
  rejectNode,
  requirementsOf,
  scoreParts,
  tierAfterAttestation,
  tierChangeRefusal,
} from '../src/index.js';
import { ctx, gpuJob, node, T0 } from './helpers.js';

const proof = (over: Partial<NodeProofRecord> = {}): NodeProofRecord => ({
  state: 'proven',
  provenClass: 'nvidia-h100-80gb',
  score: 1,
  provenAt: T0,
  reason: null,
  nextCheckAt: null,
  ...over,
});

function fleet(nodes: NodeRecord[]): CapacityIndex {
  const index = new CapacityIndex();
  for (const n of nodes) index.upsertNode(n);
  return index;
}

const placedOn = (index: CapacityIndex, j: JobRecord) => new PlacementEngine().place([j], index, ctx())[0]?.nodeId;
const verdict = (index: CapacityIndex, id: string, j: JobRecord) => rejectNode(requirementsOf(j), index.get(id) as NonNullable<ReturnType<CapacityIndex['get']>>) ?? 'fit';

describe('trust tiers', () => {
  test("the index takes each node's tier from its record (absent: open)", () => {
    const index = fleet([node('o'), { ...node('c'), tier: 'curated' }, { ...node('a'), tier: 'attested' }]);
    assert.equal(index.get('o')?.trustTier, 'open');
    assert.equal(index.get('c')?.trustTier, 'curated');
    assert.equal(index.get('a')?.trustTier, 'attested');
  });

  test('a job asking for curated goes only to a curated node; open takes any', () => {
    const index = fleet([node('o1'), node('o2'), { ...node('c'), tier: 'curated' }]);
    const curated = gpuJob(1, { constraints: { minTrustTier: 'curated' } });
    assert.equal(verdict(index, 'o1', curated), 'trust');
    assert.equal(verdict(index, 'c', curated), 'fit');
    assert.equal(placedOn(index, curated), 'c');
    assert.ok(placedOn(index, gpuJob(1)) !== undefined);
  });

  test('constraints.minTier is an alias of minTrustTier; the two differing are refused', () => {
    const index = fleet([node('o'), { ...node('c'), tier: 'curated' }]);
    assert.equal(placedOn(index, gpuJob(1, { constraints: { minTier: 'curated' } })), 'c');
    const both = JobSpec.safeParse({ name: 'j', image: 'img', command: ['run'], constraints: { minTier: 'curated', minTrustTier: 'open' } });
    assert.equal(both.success, false);
    assert.match(JSON.stringify(both.error?.issues), /alias of minTrustTier/);
    assert.equal(JobSpec.safeParse({ name: 'j', image: 'img', command: ['run'], constraints: { minTier: 'curated', minTrustTier: 'curated' } }).success, true);
  });

  test('a node whose record turns curated (upsert) becomes eligible; back to open, it is not', () => {
    const index = fleet([node('n')]);
    const j = gpuJob(1, { constraints: { minTrustTier: 'curated' } });
    assert.equal(placedOn(index, j), undefined);
    index.upsertNode({ ...node('n'), tier: 'curated' });
    assert.equal(placedOn(index, j), 'n');
    index.upsertNode({ ...node('n'), tier: 'open' });
    assert.equal(verdict(index, 'n', j), 'trust');
  });

  test('explain says how a node becomes curated, and that attested needs a verifier', () => {
    const index = fleet([node('o')]);
    const curated = explainJob(gpuJob(1, { constraints: { minTrustTier: 'curated' } }), index, T0, null);
    assert.match(curated.filters.find((f) => f.name === 'trust')?.message ?? '', /below trust tier curated/);
    assert.ok(curated.suggestions.some((s) => s.includes('gpux node tier set')));
    const attested = explainJob(gpuJob(1, { constraints: { minTier: 'attested' } }), index, T0, null);
    assert.ok(attested.suggestions.some((s) => s.includes('attestation verifier')));
  });
});

describe('the proof-of-hardware score in the scheduler', () => {
  test('only a proven node with a positive score has one', () => {
    assert.equal(provenScoreOf({ proof: proof({ score: 1.3 }) }), 1.3);
    assert.equal(provenScoreOf({}), null);
    assert.equal(provenScoreOf({ proof: proof({ state: 'failed', score: 2 }) }), null);
    assert.equal(provenScoreOf({ proof: proof({ state: 'skipped', score: null }) }), null);
    assert.equal(provenScoreOf({ proof: proof({ score: 0 }) }), null);
    assert.equal(provenScoreOf({ proof: proof({ score: Number.NaN }) }), null);
  });

  test('expected runtime: the proof alone, measured runs alone, and the blend', () => {
    const none = emptyNodeStats(T0);
    assert.equal(expectedRuntimeRatio(none, null), null, 'nothing known');
    assert.equal(expectedRuntimeRatio(none, 1.25), 0.8, 'proven at 1.25× the table: 0.8 of the class time');
    assert.equal(expectedRuntimeRatio(none, 100), 0.25, 'a score is bounded: one timing cannot claim 100× faster');
    let s = emptyNodeStats(T0);
    for (let i = 0; i < 6; i++) s = applyOutcome(s, { kind: 'success', runtimeRatio: 1.2 }, T0, DEFAULT_NODE_STATS_POLICY).stats;
    assert.equal(expectedRuntimeRatio(s, null), 1.2);
    const blended = expectedRuntimeRatio(s, 1.25) as number;
    assert.ok(Math.abs(blended - (1.2 * 6 + 0.8 * PROOF_PRIOR_RUNS) / (6 + PROOF_PRIOR_RUNS)) < 1e-12, 'measured runs outweigh the proof as they accumulate');
    assert.equal(expectedRuntimeMs(1000, { stats: none, provenScore: 1.25 }), 800);
    assert.equal(expectedRuntimeMs(1000, { stats: none, provenScore: null }), 1000);
  });

  test('a node proven at 1.3× its class scores faster, and wins when all else is equal', () => {
    const index = fleet([{ ...node('slow'), proof: proof({ score: 0.9 }) }, { ...node('fast'), proof: proof({ score: 1.3 }) }, node('unproven')]);
    const perf = (id: string) => {
      const n = index.get(id);
      assert.ok(n);
      return scoreParts(requirementsOf(gpuJob(1)), n, n.slots[0], T0).performance;
    };
    assert.equal(perf('unproven'), 0.5);
    assert.ok(Math.abs(perf('fast') - 1 / (1 + 1 / 1.3)) < 1e-12);
    assert.ok(perf('fast') > perf('unproven') && perf('unproven') > perf('slow'));
    assert.equal(placedOn(index, gpuJob(1)), 'fast');
  });

  test('a re-check that fails takes the score away on the next upsert', () => {
    const index = fleet([{ ...node('n'), proof: proof({ score: 1.3 }) }]);
    assert.equal(index.get('n')?.provenScore, 1.3);
    index.upsertNode({ ...node('n'), proof: proof({ state: 'failed', score: 1.3, reason: 'too slow for the class' }) });
    assert.equal(index.get('n')?.provenScore, null);
    index.setProof('n', proof({ score: 1.5 }));
    assert.equal(index.get('n')?.provenScore, 1.5, 'a verdict the index learns from the store carries the score too');
    index.setProof('n', undefined);
    assert.equal(index.get('n')?.provenScore, null);
  });
});

describe('attestation policy', () => {
  test('attested is never set by hand; an operator sets curated or open', () => {
    assert.match(tierChangeRefusal('attested', 'operator') ?? '', /only hardware TEE evidence/);
    assert.equal(tierChangeRefusal('curated', 'operator'), null);
    assert.equal(tierChangeRefusal('open', 'operator'), null);
    assert.equal(tierChangeRefusal('attested', 'attestation'), null);
    assert.notEqual(tierChangeRefusal('curated', 'attestation'), null);
  });

  test("a verifier's answer: valid attests, invalid or stale falls back to open, curated stays curated", () => {
    const valid = { valid: true, reason: null, expiresAt: T0 + 1000 };
    assert.equal(tierAfterAttestation('open', valid, T0), 'attested');
    assert.equal(tierAfterAttestation('attested', valid, T0 + 1000), 'open', 'stale at expiresAt');
    assert.equal(tierAfterAttestation('attested', { valid: false, reason: 'bad signature', expiresAt: null }, T0), 'open');
    assert.equal(tierAfterAttestation('attested', null, T0), 'open', 'no evidence: attested lapses');
    assert.equal(tierAfterAttestation('curated', null, T0), 'curated');
    assert.equal(tierAfterAttestation('open', null, T0), 'open');
  });
});
