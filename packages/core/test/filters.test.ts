/** Every filter, both as explain sees it (rejectNode) and as placement applies it (the engine never picks a rejected node). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, type JobRecord, PlacementEngine, rejectNode, requirementsOf } from '../src/index.js';
import { ctx, gpuJob, job, node, type NodeOpts } from './helpers.js';

function fleet(spec: Record<string, NodeOpts>): CapacityIndex {
  const index = new CapacityIndex();
  for (const [id, o] of Object.entries(spec)) index.upsertNode(node(id, o));
  return index;
}

function verdicts(index: CapacityIndex, j: JobRecord): Record<string, string> {
  const req = requirementsOf(j);
  return Object.fromEntries([...index.allNodes()].map((n) => [n.nodeId, rejectNode(req, n) ?? 'fit']));
}

function placedOn(index: CapacityIndex, j: JobRecord): string | undefined {
  return new PlacementEngine().place([j], index, ctx())[0]?.nodeId;
}

describe('filters', () => {
  test('node state: offline, cordoned and draining nodes are rejected', () => {
    const index = fleet({ off: { status: 'offline' }, cord: { adminState: 'cordoned' }, drain: { adminState: 'draining' }, ok: {} });
    assert.deepEqual(verdicts(index, gpuJob(1)), { off: 'state', cord: 'state', drain: 'state', ok: 'fit' });
    assert.equal(placedOn(index, gpuJob(1)), 'ok');
  });

  test('GPU vendor, model and VRAM', () => {
    const index = fleet({
      h100: {},
      a100: { model: 'NVIDIA A100-SXM4-40GB', vramMb: 40960 },
      mi: { vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196608 },
    });
    assert.deepEqual(verdicts(index, gpuJob(1, { resources: { gpu: { count: 1, vendor: 'amd' } } })), { h100: 'gpuVendor', a100: 'gpuVendor', mi: 'fit' });
    assert.deepEqual(verdicts(index, gpuJob(1, { resources: { gpu: { count: 1, models: ['A100'] } } })), { h100: 'gpuModel', a100: 'fit', mi: 'gpuModel' });
    assert.deepEqual(verdicts(index, gpuJob(1, { resources: { gpu: { count: 1, minVramGb: 80 } } })), { h100: 'fit', a100: 'gpuVram', mi: 'fit' });
    assert.equal(placedOn(index, gpuJob(1, { resources: { gpu: { count: 1, models: ['a100'] } } })), 'a100');
    assert.equal(placedOn(index, gpuJob(1, { resources: { gpu: { count: 1, vendor: 'amd' } } })), 'mi');
    assert.equal(placedOn(index, gpuJob(1, { resources: { gpu: { count: 1, models: ['B200'] } } })), undefined);
  });

  test('GPU count: in all (gpuCount) and free now (busy)', () => {
    const index = fleet({ two: { gpus: 2 }, four: { gpus: 4 }, cpu: { gpus: 0 } });
    assert.deepEqual(verdicts(index, gpuJob(4)), { two: 'gpuCount', four: 'fit', cpu: 'gpuCount' });
    index.reserve({ attemptId: 'x', nodeId: 'four', gpuIndices: [0], cpu: 1, memoryMb: 0 });
    assert.deepEqual(verdicts(index, gpuJob(4)), { two: 'gpuCount', four: 'busy', cpu: 'gpuCount' });
    assert.equal(placedOn(index, gpuJob(4)), undefined);
    const three = new PlacementEngine().place([gpuJob(3)], index, ctx());
    assert.equal(three[0]?.nodeId, 'four');
    assert.deepEqual(three[0]?.gpuIndices, [1, 2, 3]);
  });

  test('CPU and memory, in all and free', () => {
    const index = fleet({ small: { cpu: 4, memoryMb: 8192 }, big: { cpu: 64, memoryMb: 524288 } });
    const j = gpuJob(1, { resources: { cpuCores: 8, memoryGb: 16, gpu: { count: 1 } } });
    assert.deepEqual(verdicts(index, j), { small: 'cpu', big: 'fit' });
    assert.deepEqual(verdicts(index, gpuJob(1, { resources: { cpuCores: 2, memoryGb: 16, gpu: { count: 1 } } })), { small: 'memory', big: 'fit' });
    index.reserve({ attemptId: 'x', nodeId: 'big', gpuIndices: [], cpu: 60, memoryMb: 0 });
    assert.deepEqual(verdicts(index, j), { small: 'cpu', big: 'busy' });
    assert.equal(placedOn(index, j), undefined);
    // CPU-only jobs use the CPU buckets.
    assert.equal(placedOn(index, job({ resources: { cpuCores: 5 } })), undefined);
    assert.equal(placedOn(index, job({ resources: { cpuCores: 3 } })), 'big', 'both have 4 cores free; big is the fuller');
    assert.equal(placedOn(index, job({ resources: { cpuCores: 3 } })), 'small');
  });

  test('labels and region', () => {
    const index = fleet({ eu: { region: 'eu', labels: { disk: 'nvme' } }, us: { region: 'us', labels: { disk: 'nvme' } }, bare: { region: 'eu' } });
    assert.deepEqual(verdicts(index, gpuJob(1, { constraints: { region: 'eu', nodeLabels: { disk: 'nvme' } } })), { eu: 'fit', us: 'region', bare: 'labels' });
    assert.equal(placedOn(index, gpuJob(1, { constraints: { region: 'us' } })), 'us');
    assert.equal(placedOn(index, gpuJob(1, { constraints: { nodeLabels: { disk: 'nvme' }, region: 'eu' } })), 'eu');
    assert.equal(placedOn(index, job({ constraints: { region: 'us' } })), 'us', 'CPU-only jobs honour the region too');
    assert.equal(placedOn(index, gpuJob(1, { constraints: { region: 'ap' } })), undefined);
  });

  test('trust tier: every node is open until tiers land', () => {
    const index = fleet({ a: {}, b: {} });
    assert.deepEqual(verdicts(index, gpuJob(1, { constraints: { minTrustTier: 'attested' } })), { a: 'trust', b: 'trust' });
    (index.get('b') as { trustTier: string }).trustTier = 'curated';
    assert.equal(placedOn(index, gpuJob(1, { constraints: { minTrustTier: 'attested' } })), 'b');
    assert.equal(placedOn(index, gpuJob(1, { constraints: { minTrustTier: 'open' } })) !== undefined, true);
  });

  test('price: a node asking more than the job pays is rejected; inert without asks', () => {
    const index = fleet({ cheap: {}, dear: {}, none: {} });
    const j = gpuJob(1, { maxPricePerGpuHour: 200 });
    assert.deepEqual(verdicts(index, j), { cheap: 'fit', dear: 'fit', none: 'fit' });
    index.setAsk('cheap', 150);
    index.setAsk('dear', 300);
    assert.deepEqual(verdicts(index, j), { cheap: 'fit', dear: 'price', none: 'fit' });
    index.setSchedulable('none', false);
    assert.equal(placedOn(index, j), 'cheap');
    assert.equal(placedOn(index, gpuJob(1, { maxPricePerGpuHour: 100 })), undefined);
  });

  test('nodes that failed this job: avoided while another fits, used when nothing else does', () => {
    const index = fleet({ a: {}, b: {} });
    const j = gpuJob(1, {}, { avoid: ['a'] });
    assert.deepEqual(verdicts(index, j), { a: 'failedBefore', b: 'fit' });
    assert.equal(placedOn(index, j), 'b');
    assert.equal(placedOn(index, gpuJob(1, {}, { avoid: ['a'] })), 'a', 'b is full now');
  });
});
