import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { applyOutcome, decayStats, emptyNodeStats, type NodeStatsPolicy, runtimeShapeKey } from '../src/index.js';
import { T0 } from './helpers.js';

const policy: NodeStatsPolicy = { halfLifeMs: 1000, cordonAfterFailures: 3, cordonWindowMs: 10_000, minExpectationSamples: 3 };

describe('node stats', () => {
  test('counts decay with the half-life', () => {
    const s = applyOutcome(emptyNodeStats(T0), { kind: 'success' }, T0, policy).stats;
    assert.equal(s.successes, 1);
    assert.ok(Math.abs(decayStats(s, T0 + 1000, 1000).successes - 0.5) < 1e-9);
    const s2 = applyOutcome(s, { kind: 'success' }, T0 + 2000, policy).stats;
    assert.ok(Math.abs(s2.successes - 1.25) < 1e-9);
  });

  test('auto-cordon: N infrastructure failures inside the window; older ones do not count', () => {
    let s = emptyNodeStats(T0);
    let r = applyOutcome(s, { kind: 'failure' }, T0, policy);
    r = applyOutcome(r.stats, { kind: 'failure' }, T0 + 20_000, policy);
    assert.equal(r.cordonReason, null, 'the first failure left the window');
    r = applyOutcome(r.stats, { kind: 'neutral' }, T0 + 21_000, policy);
    r = applyOutcome(r.stats, { kind: 'failure' }, T0 + 22_000, policy);
    assert.equal(r.cordonReason, null);
    r = applyOutcome(r.stats, { kind: 'failure' }, T0 + 23_000, policy);
    assert.match(r.cordonReason ?? '', /auto-cordoned: 3 attempts lost or failed by the node/);
    s = r.stats;
    assert.equal(s.recentFailures.length, 3);
  });

  test('runtime shape keys are stable and differ by image, command and GPUs', () => {
    const base = { image: 'a', command: ['x'], args: [], resources: { gpu: { count: 1 } } };
    assert.equal(runtimeShapeKey(base), runtimeShapeKey({ ...base }));
    assert.notEqual(runtimeShapeKey(base), runtimeShapeKey({ ...base, image: 'b' }));
    assert.notEqual(runtimeShapeKey(base), runtimeShapeKey({ ...base, resources: { gpu: { count: 2 } } }));
  });
});
