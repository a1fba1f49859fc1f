/** Demand-aware packing and the pool prior (issue 18): a job leaves what the window's other jobs and unseen work can use. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, DemandProfile, PlacementEngine, requirementsOf } from '../src/index.js';
import { ctx, gpuJob, node } from './helpers.js';

const a10 = { model: 'NVIDIA A10', vramMb: 23028 };

describe('demand', () => {
  test('loss: GPUs the window could still use on the node, lost by the placement', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n', { gpus: 2, cpu: 16 }));
    const small = gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 8 } });
    const wide = gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 12 } });
    const d = new DemandProfile([small, gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 8 } })], index);
    const n = index.get('n');
    assert.ok(n);
    // The small job takes one of the two GPUs the window could use; the wide one strands the other (4 cores left).
    assert.equal(d.loss(requirementsOf(small), n, n.slots[0]), 1);
    assert.equal(d.loss(requirementsOf(wide), n, n.slots[0]), 2);
    d.placed(requirementsOf(small));
    d.placed(requirementsOf(small));
    assert.equal(d.loss(requirementsOf(wide), n, n.slots[0]), 0, 'nothing left to lose once the window is placed');
  });

  test('a wide job takes the node where it strands no GPU, and the window fits', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('tight', { gpus: 2, cpu: 16 }));
    index.upsertNode(node('roomy', { gpus: 2, cpu: 40 }));
    const wide = gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 12 } });
    const others = [1, 2, 3].map(() => gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 8 } }));
    const fresh = () => {
      const i = new CapacityIndex();
      for (const n of index.allNodes()) i.upsertNode(node(n.nodeId, { gpus: 2, cpu: n.cpuCores }));
      return i;
    };
    // Without the term, packing puts it on the tight node (fills best) and strands that node's second GPU.
    const blind = new PlacementEngine({ demandWeight: 0 }).place([wide, ...others], fresh(), ctx());
    assert.equal(blind.find((p) => p.jobId === wide.id)?.nodeId, 'tight');
    assert.equal(blind.length, 3);
    const out = new PlacementEngine().place([wide, ...others], index, ctx());
    assert.equal(out.find((p) => p.jobId === wide.id)?.nodeId, 'roomy');
    assert.equal(out.length, 4, 'every job placed: the wide one stranded nothing');
  });

  test('the prior: a flexible job leaves the fleet’s only A10 to work not queued yet', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('a10', { gpus: 1, ...a10, cpu: 128 }));
    for (const id of ['h1', 'h2', 'h3']) index.upsertNode(node(id, { gpus: 8, cpu: 96 }));
    // Packing alone sends it to the 1-GPU node (it fills best).
    const blind = new CapacityIndex();
    for (const n of index.allNodes()) blind.upsertNode(node(n.nodeId, n.gpus.length === 1 ? { gpus: 1, ...a10, cpu: 128 } : { gpus: 8, cpu: 96 }));
    assert.equal(new PlacementEngine({ scarcityWeight: 0, demandWeight: 0 }).place([gpuJob(1)], blind, ctx())[0]?.nodeId, 'a10');
    assert.notEqual(new PlacementEngine().place([gpuJob(1)], index, ctx())[0]?.nodeId, 'a10');
  });
});
