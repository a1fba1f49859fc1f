/** Every score, alone (scoreParts) and deciding a placement with the other scores equal. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  applyOutcome,
  applyReputationEvent,
  CapacityIndex,
  DEFAULT_NODE_STATS_POLICY,
  DEFAULT_REPUTATION_HALF_LIFE_MS,
  emptyNodeStats,
  emptyReputation,
  type NodeStats,
  PlacementEngine,
  type ReputationEventKind,
  type ReputationState,
  requirementsOf,
  scoreParts,
} from '../src/index.js';
import { ctx, gpuJob, job, node, T0 } from './helpers.js';

const P = DEFAULT_NODE_STATS_POLICY;

function statsWith(success: number, failure: number, outage = 0, at = T0): NodeStats {
  let s = emptyNodeStats(at);
  for (let i = 0; i < success; i++) s = applyOutcome(s, { kind: 'success' }, at, { ...P, cordonAfterFailures: 1e9 }).stats;
  for (let i = 0; i < failure; i++) s = applyOutcome(s, { kind: 'failure' }, at, { ...P, cordonAfterFailures: 1e9 }).stats;
  for (let i = 0; i < outage; i++) s = applyOutcome(s, { kind: 'outage' }, at, P).stats;
  return s;
}

function repWith(events: Partial<Record<ReputationEventKind, number>>, at = T0): ReputationState {
  let r = emptyReputation(at);
  for (const [kind, n] of Object.entries(events) as [ReputationEventKind, number][]) for (let i = 0; i < n; i++) r = applyReputationEvent(r, kind, at);
  return r;
}

function two(): CapacityIndex {
  const index = new CapacityIndex();
  index.upsertNode(node('a'));
  index.upsertNode(node('b'));
  return index;
}

const pick = (index: CapacityIndex, j = gpuJob(1), now = T0) => new PlacementEngine().place([j], index, ctx(now))[0]?.nodeId;
const parts = (index: CapacityIndex, id: string, j = gpuJob(1), now = T0) => {
  const n = index.get(id);
  assert.ok(n);
  return scoreParts(requirementsOf(j), n, n.slots[0], now);
};

describe('scores', () => {
  test('price: cheaper ask scores higher; 0.5 for everyone while nodes have no asks', () => {
    const index = two();
    assert.equal(parts(index, 'a').price, 0.5);
    index.setAsk('a', 300);
    index.setAsk('b', 100);
    const j = gpuJob(1, { maxPricePerGpuHour: 400 });
    assert.equal(parts(index, 'a', j).price, 0.25);
    assert.equal(parts(index, 'b', j).price, 0.75);
    assert.ok(parts(index, 'b').price > parts(index, 'a').price, 'no cap: still cheaper is better');
    assert.equal(pick(index, j), 'b');
  });

  test('reliability: reputation times uptime, decayed with the half-lives', () => {
    const index = two();
    assert.equal(parts(index, 'a').reliability, 0.5, 'a new node is neutral');
    index.setReputation('a', repWith({ 'audit-passed': 20 }));
    index.setReputation('b', repWith({ completed: 10, 'lease-lost': 10 }));
    assert.ok(parts(index, 'a').reliability > 0.9);
    assert.ok(parts(index, 'b').reliability < 0.3);
    assert.equal(pick(index), 'a');
    index.setStats('a', statsWith(20, 0, 4));
    assert.ok(parts(index, 'a').reliability < 0.35, 'outages cost uptime');
    // Ten half-lives later the lost leases are forgiven: back near neutral.
    const later = T0 + 10 * DEFAULT_REPUTATION_HALF_LIFE_MS;
    const b = parts(index, 'b', gpuJob(1), later).reliability;
    assert.ok(Math.abs(b - 0.5) < 0.02, String(b));
  });

  test('reliability: the plain success rate no longer scores (it only drives auto-cordon)', () => {
    const index = two();
    index.setStats('a', statsWith(20, 0));
    index.setStats('b', statsWith(10, 10));
    assert.equal(parts(index, 'a').reliability, parts(index, 'b').reliability);
  });

  test('reputation: a failed audit scores below an equal node with passes; a new node in between', () => {
    const index = new CapacityIndex();
    for (const id of ['passed', 'failed', 'new']) index.upsertNode(node(id));
    index.setReputation('passed', repWith({ 'audit-passed': 5, completed: 5 }));
    index.setReputation('failed', repWith({ 'audit-passed': 5, completed: 5, 'audit-failed': 1 }));
    const [passed, failed, fresh] = ['passed', 'failed', 'new'].map((id) => parts(index, id).reliability) as [number, number, number];
    assert.ok(failed < fresh && fresh < passed, `${failed} < ${fresh} < ${passed}`);
    assert.equal(fresh, 0.5);
    assert.equal(pick(index), 'passed');
    // Everything else equal, the node with the failed audit is the last choice.
    index.reserve({ attemptId: 'x', nodeId: 'passed', gpuIndices: [0], cpu: 1, memoryMb: 0 });
    assert.equal(pick(index), 'new');
  });

  test('reputation: the index keeps it across a re-registration and scores its update at once', () => {
    const index = two();
    index.setReputation('a', repWith({ 'canary-failed': 1 }));
    const low = parts(index, 'a').reliability;
    index.upsertNode(node('a'));
    assert.equal(parts(index, 'a').reliability, low, 'upsertNode keeps the reputation');
    index.setReputation('a', repWith({ 'canary-passed': 30 }));
    assert.ok(parts(index, 'a').reliability > low, 'setReputation drops the cached score');
  });

  test('performance: faster than the class scores higher; unknown is 0.5', () => {
    const index = two();
    assert.equal(parts(index, 'a').performance, 0.5);
    let fast = emptyNodeStats(T0);
    let slow = emptyNodeStats(T0);
    for (let i = 0; i < 5; i++) {
      fast = applyOutcome(fast, { kind: 'success', runtimeRatio: 0.8 }, T0, P).stats;
      slow = applyOutcome(slow, { kind: 'success', runtimeRatio: 1.5 }, T0, P).stats;
    }
    index.setStats('a', slow);
    index.setStats('b', fast);
    assert.ok(Math.abs((fast.runtimeRatio ?? 0) - 0.8) < 1e-9);
    assert.ok(parts(index, 'b').performance > 0.5 && parts(index, 'a').performance < 0.5);
    assert.equal(pick(index), 'b');
  });

  test('latency: lower round trip scores higher; the preferred region counts', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('near', { region: 'us' }));
    index.upsertNode(node('far', { region: 'eu' }));
    index.noteRtt('near', 5);
    index.noteRtt('far', 200);
    assert.ok(parts(index, 'near').latency > parts(index, 'far').latency);
    assert.equal(pick(index), 'near');
    const eu = gpuJob(1, { constraints: { preferredRegion: 'eu' } });
    assert.ok(parts(index, 'far', eu).latency > parts(index, 'near', eu).latency);
    assert.equal(pick(index, eu), 'far');
  });

  test('packing: a partly used node fills before a whole one', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('whole', { gpus: 8 }));
    index.upsertNode(node('part', { gpus: 8 }));
    index.reserve({ attemptId: 'x', nodeId: 'part', gpuIndices: [0, 1, 2, 3, 4], cpu: 1, memoryMb: 0 });
    assert.ok(parts(index, 'part').packing > parts(index, 'whole').packing);
    for (let i = 0; i < 3; i++) assert.equal(pick(index), 'part');
    assert.equal(pick(index, gpuJob(8)), 'whole', 'the whole node stayed whole for an 8-GPU job');
    assert.equal(pick(index), undefined);
  });

  test('packing for CPU-only jobs keeps GPU nodes for GPU jobs', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('gpu', { gpus: 8, cpu: 8 }));
    index.upsertNode(node('cpu', { gpus: 0, cpu: 8 }));
    assert.equal(pick(index, job()), 'cpu');
  });

  test('spread: a burst of tiny CPU jobs goes over the fleet, not onto one node; GPU jobs are not spread', () => {
    const index = new CapacityIndex();
    for (const id of ['a', 'b', 'c', 'd']) index.upsertNode(node(id, { gpus: 0, cpu: 8 }));
    const tiny = Array.from({ length: 40 }, (_, i) => job({ resources: { cpuCores: 0.01 } }, { id: `tiny-${i}` }));
    const placed = new PlacementEngine().place(tiny, index, ctx(T0));
    assert.equal(placed.length, 40);
    const per = new Map<string, number>();
    for (const p of placed) per.set(p.nodeId, (per.get(p.nodeId) ?? 0) + 1);
    assert.deepEqual([...per.values()].sort(), [10, 10, 10, 10]);
    assert.equal(parts(index, 'a', job()).spread, 1 / (1 + (10 - 4) / 8));
    assert.equal(parts(index, 'a').spread, 0.5, 'a GPU job: inert');
    // A large CPU job still packs: the partly used node wins over an idle one.
    const big = new CapacityIndex();
    big.upsertNode(node('idle', { gpus: 0, cpu: 8 }));
    big.upsertNode(node('used', { gpus: 0, cpu: 8 }));
    big.reserve({ attemptId: 'x', nodeId: 'used', gpuIndices: [], cpu: 4, memoryMb: 0 });
    assert.equal(pick(big, job({ resources: { cpuCores: 4 } })), 'used');
  });

  test('weights are configurable: with packing off and reliability up, the reliable whole node wins', () => {
    const setup = () => {
      const index = new CapacityIndex();
      index.upsertNode(node('part', { gpus: 2 }));
      index.upsertNode(node('whole', { gpus: 2 }));
      index.reserve({ attemptId: 'x', nodeId: 'part', gpuIndices: [0], cpu: 1, memoryMb: 0 });
      index.setReputation('whole', repWith({ 'audit-passed': 50 }));
      index.setReputation('part', repWith({ 'audit-passed': 8, 'lease-lost': 1 }));
      return index;
    };
    assert.equal(new PlacementEngine().place([gpuJob(1)], setup(), ctx())[0]?.nodeId, 'part', 'default weights: packing wins');
    const engine = new PlacementEngine({ weights: { packing: 0, reliability: 5 } });
    assert.deepEqual(engine.weights, { price: 1, reliability: 5, performance: 1, latency: 1, packing: 0, spread: 2 });
    assert.equal(engine.place([gpuJob(1)], setup(), ctx())[0]?.nodeId, 'whole');
  });
});
