/**
 * Explain: per-filter rejection counts over the fleet, and for every reason a job cannot be placed a true
 * sentence with a concrete change, amounts written as the CLI writes them ("0.492188 USDC per GPU-hour").
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, explainJob, explainPlacement, type FilterName, FILTER_ORDER, type JobRecord, stakeToLock } from '../src/index.js';
import { gpuJob, job, node, T0 } from './helpers.js';

function fleet(): CapacityIndex {
  const index = new CapacityIndex();
  for (let i = 0; i < 12; i++) index.upsertNode(node(`h2-${i}`, { gpus: 2, region: 'eu' }));
  for (let i = 0; i < 3; i++) index.upsertNode(node(`t4-${i}`, { gpus: 4, model: 'Tesla T4', vramMb: 15360, region: 'us' }));
  index.upsertNode(node('off', { gpus: 8, status: 'offline' }));
  return index;
}

const counts = (e: ReturnType<typeof explainPlacement>) => Object.fromEntries(e.filters.map((f) => [f.name, f.rejected]));
/** A market job: the coordinator holds its escrow at this cap (minor units per unit-hour). */
const paid = (j: JobRecord, cap: number): JobRecord => ({ ...j, payment: { asset: 'usdc', capPerUnitHour: cap, units: Math.max(1, j.spec.resources.gpu.count), held: 1 } });

/** Nodes with a provider and plenty of stake, asking these prices (minor units per GPU-hour). */
function market(asks: Record<string, number>, gpus = 1): CapacityIndex {
  const index = new CapacityIndex();
  for (const [id, ask] of Object.entries(asks)) {
    index.upsertNode({ ...node(id, { gpus }), providerId: `prov-${id}` });
    index.setStake(id, 1e12);
    index.setAsk(id, ask);
  }
  return index;
}

describe('explain', () => {
  test('no node has 4 H100s: counts per filter, the most on one node, and the changes that would work', () => {
    const e = explainPlacement(gpuJob(4, { resources: { gpu: { count: 4, models: ['H100'] } } }), fleet());
    assert.equal(e.nodesTotal, 16);
    assert.equal(e.nodesFitting, 0);
    assert.deepEqual(counts(e), { state: 1, gpuModel: 3, gpuCount: 12 });
    assert.equal(
      e.suggestions[0],
      'no online node has 4 GPUs of models H100; the most on one node is 2 (12 nodes) — lower resources.gpu.count to 2, or split it into a gang (nodes: 2 with resources.gpu.count: 2 each), or drop the GPU class filters (3 nodes have 4 GPUs of another class)',
    );
    assert.match(e.suggestions.join('\n'), /1 node is offline, cordoned or draining \(1 offline\) — nothing in the job changes that/);
  });

  test('unknown model: the fleet’s classes are listed, with the change', () => {
    const e = explainPlacement(gpuJob(1, { resources: { gpu: { count: 1, models: ['B200'] } } }), fleet());
    assert.deepEqual(counts(e), { state: 1, gpuModel: 15 });
    assert.equal(
      e.suggestions[0],
      'no online node has 1 GPU of models B200; the fleet has nvidia h100 80gb hbm3 80 GB (12 nodes, at most 2 on one), nvidia tesla t4 15 GB (3 nodes, at most 4 on one) — change resources.gpu.models to match one of those, or drop it',
    );
  });

  test('8 H100s on a network of 4-GPU A100 nodes: what the fleet has, and both changes it takes', () => {
    const index = new CapacityIndex();
    for (const id of ['a', 'b']) index.upsertNode(node(id, { gpus: 4, model: 'NVIDIA A100-SXM4-80GB' }));
    const e = explainJob(gpuJob(8, { resources: { gpu: { count: 8, models: ['H100'] } } }), index, T0, null);
    assert.deepEqual(e.suggestions, [
      'no online node has 8 GPUs of models H100; the fleet has nvidia a100-sxm4-80gb 80 GB (2 nodes, at most 4 on one) — change resources.gpu.models to match one of those, or drop it, and lower resources.gpu.count to 4',
    ]);
    const anyModel = explainJob(gpuJob(8), index, T0, null);
    assert.deepEqual(anyModel.suggestions, ['no online node has 8 GPUs; the most on one node is 4 (2 nodes) — lower resources.gpu.count to 4, or split it into a gang (nodes: 2 with resources.gpu.count: 4 each)']);
    const vram = explainJob(gpuJob(1, { resources: { gpu: { count: 1, minVramGb: 141 } } }), index, T0, null);
    assert.deepEqual(vram.suggestions, ['no online node has 1 GPU with 141 GB or more; the most memory on a matching GPU is 80 GB — lower resources.gpu.minVramGb to 80']);
  });

  test('a GPU job on a CPU-only network is told so, with the change', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('cpu', { gpus: 0 }));
    const e = explainJob(gpuJob(8, { resources: { gpu: { count: 8, models: ['H100'] } } }), index, T0, null);
    assert.deepEqual(e.suggestions, ['no online node has a GPU (1 node, all CPU-only) — set resources.gpu.count to 0 to run on CPU, or wait for a GPU node to join']);
  });

  test('a gang of 2 where price alone rules out both nodes: the price, in decimals with the asset, and the cap that admits both', () => {
    const e = explainJob(paid(gpuJob(1, { nodes: 2 }), 492_188), market({ a: 600_000, b: 700_000 }), T0, { ahead: 0, total: 1 });
    assert.deepEqual(counts(e), { price: 2 });
    assert.equal(e.price, 'pays at most 0.492188 USDC per GPU-hour; no node that fits clears within it (the cheapest asks 0.600000 USDC per GPU-hour)');
    assert.deepEqual(e.suggestions, [
      "2 nodes fit the job's resources and constraints but their lowest prices are above its cap of 0.492188 USDC per GPU-hour (the cheapest: 0.600000 USDC per GPU-hour) — raise maxPricePerGpuHour to 0.700000 USDC and submit it again (a submitted job keeps its cap)",
    ]);
    assert.equal(e.filters[0]?.message, "lowest price (class floor, the node's ask, or the index for a node without an ask) above the job's cap of 0.492188 USDC per GPU-hour");
    assert.doesNotMatch(JSON.stringify(e.suggestions) + e.price, /(?<![.\d])(492188|600000|700000)/, 'no amount in minor units');
    const one = explainJob(paid(gpuJob(1), 492_188), market({ a: 600_000, b: 700_000 }), T0, null);
    assert.match(one.suggestions[0] ?? '', /raise maxPricePerGpuHour to 0\.600000 USDC/, 'one node is enough for a single job');
  });

  test('the price line and the price suggestion come from the same nodes', () => {
    const e = explainJob(paid(gpuJob(1, { nodes: 2 }), 492_188), market({ a: 400_000, b: 700_000 }), T0, null);
    assert.equal(e.price, 'pays at most 0.492188 USDC per GPU-hour; the cheapest node within it would charge 0.492188 USDC per GPU-hour');
    assert.equal(e.cheapestFittingAsk, 492_188);
    assert.deepEqual(e.suggestions, [
      "1 node fits the job's resources and constraints but its lowest price is above its cap of 0.492188 USDC per GPU-hour (the cheapest: 0.700000 USDC per GPU-hour) — raise maxPricePerGpuHour to 0.700000 USDC and submit it again (a submitted job keeps its cap)",
      'a gang of 2 runs on 2 nodes at once; only 1 can run it — lower nodes to 1, or make one of the changes above',
    ]);
  });

  test('a CPU-only job is priced per job-hour, everywhere', () => {
    const e = explainJob(paid(job({ resources: { gpu: { count: 0 } } }), 1), market({ a: 600_000 }), T0, null);
    assert.match(e.price, /^pays at most 0\.000001 USDC per job-hour; no node that fits clears within it \(the cheapest asks 0\.\d{6} USDC per job-hour\)$/);
    assert.match(e.suggestions[0] ?? '', /per job-hour\) — raise maxPricePerGpuHour to 0\.\d{6} USDC \(the field is per job-hour for a CPU-only job\)/);
    assert.doesNotMatch(JSON.stringify(e), /per GPU-hour/);
  });

  test('stake: the most free stake, the lock, and the timeout whose lock it covers; nodes without a provider are named', () => {
    const index = market({ a: 400_000 });
    index.setStake('a', stakeToLock(492_188, 1, 1800));
    index.upsertNode(node('no-provider'));
    const e = explainJob(paid(gpuJob(1, { timeoutSeconds: 3600 }), 492_188), index, T0, null);
    assert.deepEqual(counts(e), { price: 1, stake: 1 });
    assert.deepEqual(e.suggestions, [
      "1 node fits but its provider's free stake (at most 4.921880 USDC) is below what the job would lock there, at least 9.843760 USDC (20× its longest charge at that node's price) — lower timeoutSeconds to 1800 (the lock grows with it), or wait for a provider to stake more (gpux node stake add)",
      '1 node has no provider account to be paid, so it takes no paid jobs — nothing in the job changes that',
    ]);
  });

  test('busy nodes: the job waits; region, memory and the number of nodes are named with their changes', () => {
    const index = fleet();
    for (let i = 0; i < 3; i++) index.reserve({ attemptId: `x${i}`, nodeId: `t4-${i}`, gpuIndices: [0, 1, 2], cpu: 1, memoryMb: 0 });
    const busy = explainPlacement(gpuJob(2, { resources: { gpu: { count: 2, models: ['t4'] } } }), index);
    assert.equal(busy.nodesBusy, 3);
    assert.deepEqual(busy.suggestions, [
      '3 nodes could run it but are busy; the most accepted GPUs free on one node now is 1 (3 nodes) — it runs when capacity frees up, or lower resources.gpu.count to 1 to start now',
    ]);
    const region = explainPlacement(gpuJob(1, { resources: { gpu: { count: 1, models: ['h100'] } }, constraints: { region: 'us' } }), index);
    assert.equal(counts(region).region, 12);
    assert.match(region.suggestions[0] ?? '', /^12 nodes that match are outside region us; they are in eu \(12\) — change or drop constraints\.region$/);
    const mem = explainPlacement(gpuJob(1, { resources: { memoryGb: 4096, gpu: { count: 1 } } }), index);
    assert.equal(counts(mem).memory, 15);
    assert.match(mem.suggestions[0] ?? '', /^15 nodes have less than 4096 GB memory; the largest that matches has 256 GB — lower resources\.memoryGb to 256$/);
    const gang = explainJob(gpuJob(2, { nodes: 20 }), index, T0, null);
    assert.match(gang.summary, /no node can run this job as specified/);
    assert.match(gang.suggestions.join('\n'), /a gang of 20 runs on 20 nodes at once; only 15 can run it — lower nodes to 15/);
  });

  test('every filter that keeps a job from being placed gets a sentence with a change (" — ")', () => {
    const h100 = () => {
      const i = new CapacityIndex();
      i.upsertNode({ ...node('n', { gpus: 2, region: 'eu' }), providerId: 'prov-n' });
      return i;
    };
    const proofIndex = new CapacityIndex();
    proofIndex.requireProof = true;
    proofIndex.upsertNode(node('unproven'));
    const busyIndex = h100();
    busyIndex.reserve({ attemptId: 'b1', nodeId: 'n', gpuIndices: [0, 1], cpu: 1, memoryMb: 0 });
    const noStake = h100();
    const cases: Array<[FilterName, JobRecord, CapacityIndex]> = [
      ['state', gpuJob(1), (() => { const i = new CapacityIndex(); i.upsertNode(node('off', { status: 'offline' })); return i; })()],
      ['proof', gpuJob(1), proofIndex],
      ['gpuVendor', gpuJob(1, { resources: { gpu: { count: 1, vendor: 'amd' } } }), h100()],
      ['gpuModel', gpuJob(1, { resources: { gpu: { count: 1, models: ['mi300'] } } }), h100()],
      ['gpuVram', gpuJob(1, { resources: { gpu: { count: 1, minVramGb: 141 } } }), h100()],
      ['gpuCount', gpuJob(4), h100()],
      ['region', gpuJob(1, { constraints: { region: 'us' } }), h100()],
      ['labels', gpuJob(1, { constraints: { nodeLabels: { rack: 'r1' } } }), h100()],
      ['trust', gpuJob(1, { constraints: { minTrustTier: 'curated' } }), h100()],
      ['cpu', gpuJob(1, { resources: { cpuCores: 512, gpu: { count: 1 } } }), h100()],
      ['memory', gpuJob(1, { resources: { memoryGb: 4096, gpu: { count: 1 } } }), h100()],
      ['price', paid(gpuJob(1), 1), h100()],
      ['stake', paid(gpuJob(1), 3_000_000), noStake],
      ['operator', { ...gpuJob(1), avoidProviderIds: ['prov-n'] }, h100()],
      ['failedBefore', gpuJob(1, {}, { avoid: ['n'] }), h100()],
      ['busy', gpuJob(1), busyIndex],
    ];
    assert.deepEqual(cases.map(([name]) => name), [...FILTER_ORDER], 'a case for every filter');
    for (const [name, j, index] of cases) {
      const e = explainJob(j, index, T0, null);
      assert.deepEqual(e.filters.map((f) => f.name), [name], `${name}: ${JSON.stringify(e.filters)}`);
      assert.ok(e.suggestions.length > 0, `${name}: no suggestion`);
      for (const s of e.suggestions) assert.match(s, / — \S/, `${name}: "${s}" names no change`);
      assert.doesNotMatch(e.suggestions.join('\n'), /(?<![.\d])\d{5,}/, `${name}: an amount in minor units`);
    }
  });

  test('a node where the job failed before is used when nothing else fits: the summary says it can run now', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n', { gpus: 2 }));
    const e = explainJob(gpuJob(1, {}, { avoid: ['n'] }), index, T0, null);
    assert.equal(e.summary, '1 node can run it now, 1 of them where it failed before (used only when no other node fits); it should be placed within the next scheduling pass');
    assert.deepEqual(e.suggestions, ['the job failed before on 1 node that fits — nothing to change: it goes back there only when no other node fits']);
    index.reserve({ attemptId: 'r', nodeId: 'n', gpuIndices: [0, 1], cpu: 1, memoryMb: 0 });
    assert.match(explainJob(gpuJob(1, {}, { avoid: ['n'] }), index, T0, null).summary, /^every node that can run it is busy/);
  });

  test('the whole answer: summary, queue position, no suggestions when it fits', () => {
    const index = fleet();
    const j = gpuJob(1);
    const r = explainJob(j, index, T0, { ahead: 7, total: 20 });
    assert.equal(r.pending, true);
    assert.equal(r.queuePosition, 7);
    assert.equal(r.queuedTotal, 20);
    assert.match(r.summary, /15 nodes can run it now/);
    assert.match(r.summary, /best of them by reputation/, 'names what ranks the fitting nodes');
    assert.deepEqual(r.suggestions, []);
    assert.equal(r.price, 'nothing is held or charged for this job (no market)');
    const running = explainJob({ ...j, state: 'running' }, index, T0, null);
    assert.equal(running.pending, false);
    assert.equal(running.queuePosition, null);
    const backoff = explainJob({ ...j, runAfter: T0 + 60_000 }, index, T0, null);
    assert.match(backoff.summary, /retry backoff/);
    assert.equal(explainPlacement(j, new CapacityIndex()).suggestions[0], 'no nodes are registered with this coordinator yet — it is placed once a provider starts one (gpux node start)');
  });
});
