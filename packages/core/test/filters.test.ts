/** Every filter, both as explain sees it (rejectNode) and as placement applies it (the engine never picks a rejected node). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, fitsWhenIdle, type JobRecord, type NodeCapacity, PlacementEngine, priceAt, rejectNode, requirementsOf, stakeLockAt, stakeToLock } from '../src/index.js';
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

/** A market job (payment at `cap` per GPU-hour), as the coordinator makes it. */
function paid(count: number, cap: number, over: Parameters<typeof gpuJob>[1] = {}): JobRecord {
  const j = gpuJob(count, { timeoutSeconds: 3600, ...over });
  return { ...j, payment: { asset: 'usdc', capPerUnitHour: cap, units: Math.max(1, count), held: cap * Math.max(1, count) } };
}

/** Give a node a provider and stake (the coordinator's setStake / registration do this). */
function owned(index: CapacityIndex, id: string, stake: number): void {
  const n = index.get(id) as { providerId: string | null; operatorId: string };
  n.providerId = `prov-${id}`;
  index.setStake(id, stake);
}

describe('market filters (issue 10 items 1 and 4)', () => {
  const H100 = 'nvidia-h100-80gb';
  const floor = 400_000;
  const usd = 1_000_000;

  test('price: nothing clears below the class floor; a node without an ask clears only at the index or above', () => {
    const index = fleet({ asks: {}, none: {} });
    index.quotes.setSource((cls) => ({ index: cls === H100 ? 2 * usd : 50_000, floor: cls === H100 ? floor : 10_000 }));
    owned(index, 'asks', 1e12);
    owned(index, 'none', 1e12);
    index.setAsk('asks', 0); // asks nothing: still the floor
    for (const cap of [0, 1, floor - 1]) assert.deepEqual(verdicts(index, paid(1, cap)), { asks: 'price', none: 'price' }, `cap ${cap}`);
    assert.deepEqual(verdicts(index, paid(1, floor)), { asks: 'fit', none: 'price' }, 'no ask: the index (2.0) is above the cap');
    assert.deepEqual(verdicts(index, paid(1, 2 * usd)), { asks: 'fit', none: 'fit' });
    const req = requirementsOf(paid(1, 3 * usd));
    assert.equal(priceAt(req, index.get('asks') as NodeCapacity), 2 * usd, 'the index, within the cap');
    assert.equal(priceAt(req, index.get('none') as NodeCapacity), 2 * usd);
    index.quotes.setSource(() => ({ index: 100_000, floor }));
    assert.equal(priceAt(req, index.get('none') as NodeCapacity), floor, 'an index under the floor: the floor');
  });

  test('stake: a node with no provider or no free stake never takes a market job; the lock follows the real price', () => {
    const index = fleet({ noProvider: {}, noStake: {}, short: {}, rich: {} });
    index.quotes.setSource(() => ({ index: usd, floor }));
    owned(index, 'noStake', 0);
    const j = paid(1, 3 * usd);
    const req = requirementsOf(j);
    const atIndex = stakeToLock(usd, 1, 3600);
    assert.ok(atIndex < req.stakeNeeded, 'the lock at the clearing price is below the lock at the cap');
    owned(index, 'short', atIndex - 1);
    owned(index, 'rich', atIndex);
    assert.deepEqual(verdicts(index, j), { noProvider: 'stake', noStake: 'stake', short: 'stake', rich: 'fit' });
    assert.equal(stakeLockAt(req, index.get('rich') as NodeCapacity), atIndex);
    const [p] = new PlacementEngine().place([j], index, ctx());
    assert.equal(p?.nodeId, 'rich');
    assert.equal((index.get('rich') as NodeCapacity).stakeLocked, atIndex, 'the reservation locks the lock at the clearing price');
    index.setStakeLock(p?.attemptId as string, atIndex - 5);
    assert.equal((index.get('rich') as NodeCapacity).stakeLocked, atIndex - 5, 'repriced in place');
    // Even a cap at the floor locks stake: a market placement never locks 0.
    index.setAsk('noStake', 0);
    assert.ok(stakeLockAt(requirementsOf(paid(1, floor)), index.get('noStake') as NodeCapacity) > 0);
  });

  test('fitsWhenIdle: busy and failed-before nodes still fit; too few GPUs, wrong class or no stake do not', () => {
    const index = fleet({ eight: { gpus: 8 }, a100: { model: 'NVIDIA A100-SXM4-40GB', vramMb: 40960 } });
    index.quotes.setSource(() => ({ index: usd, floor }));
    owned(index, 'eight', 1e12);
    owned(index, 'a100', 1e12);
    index.reserve({ attemptId: 'busy', nodeId: 'eight', gpuIndices: [0, 1, 2, 3, 4, 5, 6, 7], cpu: 1, memoryMb: 0 });
    const eight = index.get('eight') as NodeCapacity;
    assert.equal(fitsWhenIdle(requirementsOf(paid(8, 2 * usd)), eight), true, 'busy now, fits once idle');
    assert.equal(fitsWhenIdle(requirementsOf(paid(16, 2 * usd)), eight), false, '16 GPUs on one node: never');
    assert.equal(fitsWhenIdle(requirementsOf(paid(1, 2 * usd, { resources: { gpu: { count: 1, models: ['A100'] } } })), eight), false);
    index.setStake('eight', 0);
    assert.equal(fitsWhenIdle(requirementsOf(paid(1, 2 * usd)), eight), false, 'no free stake');
  });
});
