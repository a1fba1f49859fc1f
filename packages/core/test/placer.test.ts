/** The placement engine's shapes: several GPUs on one node, gang jobs all or nothing, replicas on distinct operators. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, FirstFitScheduler, PlacementEngine } from '../src/index.js';
import { ctx, gpuJob, job, node } from './helpers.js';

describe('placement engine', () => {
  test('several GPUs on one node, of one class; capacity is reserved as it goes', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 4, more: { count: 4, model: 'Tesla T4', vramMb: 15360 } }));
    const engine = new PlacementEngine();
    const out = engine.place([gpuJob(4, { resources: { gpu: { count: 4, models: ['h100'] } } }), gpuJob(4), gpuJob(1)], index, ctx());
    assert.deepEqual(
      out.map((p) => p.gpuIndices),
      [[0, 1, 2, 3], [4, 5, 6, 7]],
    );
    assert.equal(engine.lastPass.placed, 2);
    assert.equal(index.get('n1')?.freeGpus.size, 0);
  });

  test('a job shape that found nothing is not searched again in the pass', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 2 }));
    const engine = new PlacementEngine();
    const jobs = Array.from({ length: 50 }, () => gpuJob(4));
    assert.deepEqual(engine.place(jobs, index, ctx()), []);
    assert.equal(engine.lastPass.skippedShapes, 49);
  });

  test('gang: all or nothing, ranks, world size and every peer; one region when one can hold it', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 3; i++) index.upsertNode(node(`eu${i}`, { gpus: 8, region: 'eu' }));
    for (let i = 0; i < 2; i++) index.upsertNode(node(`us${i}`, { gpus: 8, region: 'us' }));
    const engine = new PlacementEngine();
    const g = gpuJob(8, { nodes: 3 });
    const out = engine.place([g], index, ctx());
    assert.equal(out.length, 3);
    assert.ok(out.every((p) => p.nodeId.startsWith('eu')), 'the only region with 3 free nodes');
    assert.equal(new Set(out.map((p) => p.nodeId)).size, 3);
    const peers = out[0]?.gang?.peers;
    assert.deepEqual(
      out.map((p) => [p.gang?.rank, p.gang?.worldSize, p.gang?.leaderAttemptId]),
      [0, 1, 2].map((r) => [r, 3, out[0]?.attemptId]),
    );
    assert.deepEqual(
      peers?.map((p) => [p.rank, p.nodeId, p.address]),
      out.map((p, r) => [r, p.nodeId, `${p.nodeId}.local`]),
    );
    for (const p of out) assert.deepEqual(p.gang?.peers, peers);
    // 2 whole nodes are left (us): a gang of 3 gets nothing and reserves nothing.
    assert.deepEqual(engine.place([gpuJob(8, { nodes: 3 })], index, ctx()), []);
    assert.equal(index.get('us0')?.freeGpus.size, 8);
    assert.equal(engine.place([gpuJob(8, { nodes: 2 })], index, ctx()).length, 2);
  });

  test('gang members may span regions when no region holds them all', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('eu', { region: 'eu' }));
    index.upsertNode(node('us', { region: 'us' }));
    const out = new PlacementEngine().place([gpuJob(1, { nodes: 2 })], index, ctx());
    assert.deepEqual(out.map((p) => p.nodeId).sort(), ['eu', 'us']);
  });

  test('replicas go to distinct operators', () => {
    const index = new CapacityIndex();
    for (const id of ['a1', 'a2', 'b1', 'c1']) index.upsertNode(node(id, { gpus: 2 }));
    for (const id of ['a1', 'a2']) (index.get(id) as { operatorId: string }).operatorId = 'op-a';
    const engine = new PlacementEngine();
    const r = engine.placeReplicas(gpuJob(1), 3, index, ctx());
    assert.equal(r.length, 3);
    const ops = r.map((p) => index.get(p.nodeId)?.operatorId);
    assert.equal(new Set(ops).size, 3);
    assert.deepEqual(engine.placeReplicas(gpuJob(1), 2, index, ctx(), ['op-a', 'b1']), [], 'only c1 left once op-a and b1 are excluded');
    assert.equal(engine.placeReplicas(gpuJob(1), 4, index, ctx()).length, 0);
  });

  test('the first-fit baseline still places in registration order', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 1 }));
    index.upsertNode(node('n2', { gpus: 4 }));
    const out = new FirstFitScheduler().place([gpuJob(1), gpuJob(2), job()], index, ctx());
    assert.deepEqual(
      out.map((p) => p.nodeId),
      ['n1', 'n2', 'n1'],
    );
  });
});
