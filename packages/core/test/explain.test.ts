/** Explain: per-filter rejection counts over the fleet, and what to change. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, explainJob, explainPlacement } from '../src/index.js';
import { gpuJob, node, T0 } from './helpers.js';

function fleet(): CapacityIndex {
  const index = new CapacityIndex();
  for (let i = 0; i < 12; i++) index.upsertNode(node(`h2-${i}`, { gpus: 2, region: 'eu' }));
  for (let i = 0; i < 3; i++) index.upsertNode(node(`t4-${i}`, { gpus: 4, model: 'Tesla T4', vramMb: 15360, region: 'us' }));
  index.upsertNode(node('off', { gpus: 8, status: 'offline' }));
  return index;
}

const counts = (e: ReturnType<typeof explainPlacement>) => Object.fromEntries(e.filters.map((f) => [f.name, f.rejected]));

describe('explain', () => {
  test('no node has 4 free H100s: counts per filter and the suggestion names the 2-GPU nodes', () => {
    const e = explainPlacement(gpuJob(4, { resources: { gpu: { count: 4, models: ['H100'] } } }), fleet());
    assert.equal(e.nodesTotal, 16);
    assert.equal(e.nodesFitting, 0);
    assert.deepEqual(counts(e), { state: 1, gpuModel: 3, gpuCount: 12 });
    assert.match(e.suggestions.join('\n'), /no node has ≥4 GPUs of models H100; 12 nodes have 2 — lower resources\.gpu\.count to 2, remove the models filter/);
    assert.match(e.suggestions.join('\n'), /1 node is offline/);
  });

  test('unknown model: the fleet’s classes are listed', () => {
    const e = explainPlacement(gpuJob(1, { resources: { gpu: { count: 1, models: ['B200'] } } }), fleet());
    assert.deepEqual(counts(e), { state: 1, gpuModel: 15 });
    assert.match(e.suggestions[0] ?? '', /the fleet has nvidia h100 80gb hbm3 80 GB \(12 nodes\), nvidia tesla t4 15 GB \(3 nodes\)/);
  });

  test('busy nodes: the job waits; region, memory and price are named', () => {
    const index = fleet();
    for (let i = 0; i < 3; i++) index.reserve({ attemptId: `x${i}`, nodeId: `t4-${i}`, gpuIndices: [0, 1, 2], cpu: 1, memoryMb: 0 });
    const busy = explainPlacement(gpuJob(2, { resources: { gpu: { count: 2, models: ['t4'] } } }), index);
    assert.equal(busy.nodesBusy, 3);
    assert.match(busy.suggestions.join('\n'), /3 nodes could run it but are busy; the most accepted GPUs free on one node now is 1/);
    const region = explainPlacement(gpuJob(1, { resources: { gpu: { count: 1, models: ['h100'] } }, constraints: { region: 'us' } }), index);
    assert.equal(counts(region).region, 12);
    assert.match(region.suggestions.join('\n'), /no matching node in region us; matching nodes are in eu \(12\)/);
    const mem = explainPlacement(gpuJob(1, { resources: { memoryGb: 4096, gpu: { count: 1 } } }), index);
    assert.equal(counts(mem).memory, 15);
    assert.match(mem.suggestions.join('\n'), /the largest matching node has 256 GB memory/);
    index.setAsk('h2-0', 500);
    const price = explainPlacement(gpuJob(1, { maxPricePerGpuHour: 100, resources: { gpu: { count: 1, models: ['h100'] } }, constraints: { region: 'eu' } }), index);
    assert.equal(counts(price).price, 1);
    assert.equal(price.nodesFitting, 11);
    assert.equal(price.cheapestFittingAsk, null, 'the other nodes have no ask');
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
    const gang = explainJob(gpuJob(2, { nodes: 20 }), index, T0, null);
    assert.match(gang.summary, /no node can run this job as specified/);
    assert.match(gang.suggestions.join('\n'), /a gang of 20 needs 20 fitting nodes; 15 exist/);
    const running = explainJob({ ...j, state: 'running' }, index, T0, null);
    assert.equal(running.pending, false);
    assert.equal(running.queuePosition, null);
    const backoff = explainJob({ ...j, runAfter: T0 + 60_000 }, index, T0, null);
    assert.match(backoff.summary, /retry backoff/);
    assert.equal(explainPlacement(j, new CapacityIndex()).suggestions[0], 'no nodes are registered with this coordinator yet');
  });
});
