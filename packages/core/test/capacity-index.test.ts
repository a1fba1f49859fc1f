import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, gpuClassOf, normalizeGpuModel, requirementsOf } from '../src/index.js';
import { gpuJob, job, node } from './helpers.js';

const bucketSizes = (index: CapacityIndex, model: string) => {
  const pool = [...index.allPools()].find((p) => p.cls.model.includes(model));
  return pool?.buckets.map((b) => b.length) ?? [];
};

describe('GPU classes', () => {
  test('vendor + normalized model + VRAM in GiB', () => {
    assert.equal(normalizeGpuModel('NVIDIA  H100 80GB HBM3'), 'h100 80gb hbm3');
    assert.equal(normalizeGpuModel('AMD Instinct MI300X'), 'instinct mi300x');
    const a = gpuClassOf({ vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 });
    const b = gpuClassOf({ vendor: 'nvidia', model: 'H100 80GB HBM3', vramMb: 81920 });
    assert.equal(a.key, 'nvidia|h100 80gb hbm3|80');
    assert.equal(a, b, 'one class whatever the driver prefix');
    assert.notEqual(gpuClassOf({ vendor: 'nvidia', model: 'H100', vramMb: 96000 }).key, gpuClassOf({ vendor: 'nvidia', model: 'H100', vramMb: 81920 }).key);
  });
});

describe('CapacityIndex', () => {
  test('nodes sit in their class pool by free GPU count; reserve and release move them', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 8 }));
    index.upsertNode(node('n2', { gpus: 8 }));
    index.upsertNode(node('t4', { gpus: 2, model: 'Tesla T4', vramMb: 15360 }));
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert.deepEqual(bucketSizes(index, 't4'), [0, 0, 1]);
    index.reserve({ attemptId: 'a1', nodeId: 'n1', gpuIndices: [0, 1, 2], cpu: 4, memoryMb: 1024, buyerId: 'b' });
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0, 0, 0, 1, 0, 0, 1]);
    assert.equal(index.get('n1')?.freeCpu, 28);
    assert.deepEqual(index.usage('n1'), { gpusBusy: 3, activeAttempts: 1 });
    assert.ok(index.buyerUsage('b') >= 3);
    index.reserve({ attemptId: 'a1', nodeId: 'n1', gpuIndices: [0, 1, 2], cpu: 4, memoryMb: 1024 }); // idempotent
    assert.equal(index.get('n1')?.freeGpus.size, 5);
    assert.equal(index.release('a1')?.nodeId, 'n1');
    assert.equal(index.release('a1'), undefined);
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0, 0, 0, 0, 0, 0, 2]);
    assert.deepEqual(index.usage('n1'), { gpusBusy: 0, activeAttempts: 0 });
    assert.equal(index.buyerUsage('b'), 0);
  });

  test('offline, cordoned and draining nodes leave the buckets; back when schedulable', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 2 }));
    index.upsertNode(node('n2', { gpus: 2, adminState: 'cordoned' }));
    index.upsertNode(node('n3', { gpus: 2, status: 'offline' }));
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 1]);
    index.setSchedulable('n1', false);
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0]);
    index.setSchedulable('n1', true);
    index.setAdminState('n1', 'cordoned', 'auto');
    assert.equal(index.get('n1')?.adminReason, 'auto');
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0]);
    index.upsertNode(node('n2', { gpus: 2 }));
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 1]);
    assert.equal(index.size, 3);
  });

  test('a refreshed node keeps its reservations (reserve before the node is known works too)', () => {
    const index = new CapacityIndex();
    index.reserve({ attemptId: 'a1', nodeId: 'n1', gpuIndices: [1], cpu: 2, memoryMb: 0 });
    index.upsertNode(node('n1', { gpus: 4 }));
    assert.deepEqual([...(index.get('n1')?.freeGpus ?? [])].sort(), [0, 2, 3]);
    index.upsertNode(node('n1', { gpus: 4, labels: { a: 'b' } }));
    assert.equal(index.get('n1')?.freeGpus.size, 3);
    assert.equal(index.get('n1')?.freeCpu, 30);
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 0, 1]);
  });

  test('pools per class and region; a job sees only the pools it accepts', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('eu1', { gpus: 2, region: 'eu' }));
    index.upsertNode(node('us1', { gpus: 2, region: 'us' }));
    index.upsertNode(node('a1', { gpus: 2, model: 'NVIDIA A100-SXM4-40GB', vramMb: 40960, region: 'eu' }));
    index.upsertNode(node('mi', { gpus: 2, vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196608 }));
    const keys = (j: ReturnType<typeof gpuJob>) => index.poolsFor(requirementsOf(j)).map((p) => p.key).sort();
    assert.equal(keys(gpuJob(1)).length, 4);
    assert.deepEqual(keys(gpuJob(1, { resources: { gpu: { count: 1, models: ['h100'] } } })), ['nvidia|h100 80gb hbm3|80@eu', 'nvidia|h100 80gb hbm3|80@us']);
    assert.deepEqual(keys(gpuJob(1, { resources: { gpu: { count: 1, vendor: 'amd' } } })), ['amd|instinct mi300x|192@']);
    assert.deepEqual(keys(gpuJob(1, { resources: { gpu: { count: 1, minVramGb: 80 } } })).length, 3);
    assert.deepEqual(keys(gpuJob(1, { constraints: { region: 'eu' } })), ['nvidia|a100-sxm4-40gb|40@eu', 'nvidia|h100 80gb hbm3|80@eu']);
  });

  test('a node with two GPU classes sits in both pools; CPU buckets hold every schedulable node', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('mix', { gpus: 2, more: { count: 1, model: 'Tesla T4', vramMb: 15360 } }));
    index.upsertNode(node('cpu', { gpus: 0, cpu: 4 }));
    assert.deepEqual(bucketSizes(index, 'h100'), [0, 0, 1]);
    assert.deepEqual(bucketSizes(index, 't4'), [0, 1]);
    assert.equal(index.cpuBuckets[32]?.length, 1);
    assert.equal(index.cpuBuckets[4]?.length, 1);
    index.reserve({ attemptId: 'x', nodeId: 'cpu', gpuIndices: [], cpu: 1.5, memoryMb: 0 });
    assert.equal(index.cpuBuckets[2]?.length, 1);
    assert.equal(job().spec.resources.gpu.count, 0);
  });

  test('gang members released are reported once for reconciliation', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1'));
    index.reserve({ attemptId: 'g0', nodeId: 'n1', gpuIndices: [0], cpu: 1, memoryMb: 0, jobId: 'job-g', gang: true });
    index.release('g0');
    assert.deepEqual(index.takeEndedGangs(), ['job-g']);
    assert.deepEqual(index.takeEndedGangs(), []);
  });
});

describe("capacity index: the store's node status and the market quotes (issue 10 item 3)", () => {
  test('setStatus offline takes the node out of the buckets and marks it offline; online brings it back', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 2 }));
    index.setStatus('n1', 'offline');
    const n = index.get('n1');
    assert.equal(n?.status, 'offline');
    assert.equal(n?.schedulable, false);
    assert.equal([...index.allPools()].reduce((c, p) => c + p.buckets.flat().length, 0), 0);
    index.setStatus('n1', 'online');
    assert.equal(index.get('n1')?.schedulable, true);
    index.setAdminState('n1', 'cordoned', null);
    index.setStatus('n1', 'online');
    assert.equal(index.get('n1')?.schedulable, false, 'online but cordoned stays out');
  });

  test('nodes share their class quote: a refresh reprices every node of the class', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('a'));
    index.upsertNode(node('b'));
    let price = 1000;
    index.quotes.setSource(() => ({ index: price, floor: 10 }));
    assert.equal(index.get('a')?.gpuQuote?.index, 1000);
    price = 2000;
    index.quotes.refresh();
    assert.equal(index.get('b')?.gpuQuote?.index, 2000);
    assert.equal(index.get('a')?.gpuClass, 'nvidia-h100-80gb');
    assert.equal([...index.allPools()][0]?.maxGpus, 1);
  });
});
