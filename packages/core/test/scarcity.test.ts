/** Scarcity (issue 18): jobs with a choice leave the GPU pools constrained jobs need; least-reached jobs first within a round. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, fairOrder, PlacementEngine, type Pool } from '../src/index.js';
import { ctx, gpuJob, job, node, T0 } from './helpers.js';

const t4 = { model: 'Tesla T4', vramMb: 15360 };

function fleet(): CapacityIndex {
  const index = new CapacityIndex();
  index.upsertNode(node('small-t4', { gpus: 2, ...t4 }));
  index.upsertNode(node('big-h100', { gpus: 8 }));
  return index;
}

describe('scarcity', () => {
  test('a flexible job leaves the T4 node to the job that can only run there', () => {
    const flexible = gpuJob(1, {}, { createdAt: T0 });
    const onlyT4 = gpuJob(2, { resources: { gpu: { count: 2, models: ['t4'] } } }, { createdAt: T0 + 1 });
    // Without the terms (scarcity, demand), packing sends the flexible job to the small node (it fills best) and the T4 job waits.
    const blind = new PlacementEngine({ scarcityWeight: 0, demandWeight: 0 }).place([flexible, onlyT4], fleet(), ctx());
    assert.deepEqual(
      blind.map((p) => p.nodeId),
      ['small-t4'],
    );
    const out = new PlacementEngine().place([flexible, onlyT4], fleet(), ctx());
    assert.deepEqual(
      out.map((p) => [p.jobId, p.nodeId]),
      [
        [flexible.id, 'big-h100'],
        [onlyT4.id, 'small-t4'],
      ],
    );
  });

  test('placeJob alone (no window) scores as before: nothing to learn the demand from', () => {
    const out = new PlacementEngine().placeJob(gpuJob(1), fleet(), ctx());
    assert.equal(out[0]?.nodeId, 'small-t4');
  });

  test('within one round, the job fewer GPUs can take goes first; classes and each buyer’s order stay', () => {
    const a1 = job({ resources: { gpu: { count: 1 } } }, { buyerId: 'a', createdAt: T0 });
    const a2 = job({ resources: { gpu: { count: 1, models: ['t4'] } } }, { buyerId: 'a', createdAt: T0 + 1 });
    const b1 = job({ resources: { gpu: { count: 1, models: ['t4'] } } }, { buyerId: 'b', createdAt: T0 + 2 });
    const high = job({ priority: 'high', resources: { gpu: { count: 1 } } }, { buyerId: 'a', createdAt: T0 + 3 });
    const reach = (j: typeof a1) => (j.spec.resources.gpu.models ? 2 : 10);
    const ids = (js: readonly (typeof a1)[]) => js.map((j) => j.id);
    assert.deepEqual(ids(fairOrder([a1, a2, b1, high], T0 + 10, 600_000, () => 0)), [high.id, a1.id, b1.id, a2.id]);
    assert.deepEqual(ids(fairOrder([a1, a2, b1, high], T0 + 10, 600_000, () => 0, reach)), [high.id, b1.id, a1.id, a2.id]);
  });

  test('pool GPU counts follow every move without a scan', () => {
    const index = fleet();
    const recount = (p: Pool) => {
      let gpus = 0;
      let free = 0;
      for (const level of p.buckets) for (const s of level) {
        gpus += s.indices.length;
        free += s.free;
      }
      return { gpus, free };
    };
    const check = () => {
      for (const p of index.allPools()) assert.deepEqual({ gpus: p.gpus, free: p.freeGpus }, recount(p), p.key);
    };
    check();
    index.reserve({ attemptId: 'x', nodeId: 'big-h100', gpuIndices: [0, 1, 2], cpu: 1, memoryMb: 0 });
    check();
    index.setSchedulable('small-t4', false);
    check();
    index.release('x');
    index.setSchedulable('small-t4', true);
    index.upsertNode(node('small-t4', { gpus: 2, ...t4, cpu: 16 }));
    check();
    const t4Pool = [...index.allPools()].find((p) => p.key.includes('t4'));
    assert.equal(t4Pool?.freeGpus, 2);
  });
});
