/**
 * Issue 18: the placement engine never leaves a job waiting while a node in the index fits it. On random
 * index states (GPU models, CPU, memory, regions, nodes down, capacity already reserved) and random jobs,
 * whenever first-fit would place a job, the engine places it too on the same state. Engines with a tiny
 * sample and visit budget are included, so the bounded search misses often and the exact search must answer.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { CapacityIndex, fitOnNode, type JobRecord, PlacementEngine, requirementsOf, seededRandom } from '../src/index.js';
import { ctx, job, node } from './helpers.js';

const MODELS = [
  { model: 'Tesla T4', vramMb: 15360 },
  { model: 'Tesla V100-SXM2-16GB', vramMb: 16160 },
  { model: 'Tesla V100-SXM2-32GB', vramMb: 32510 },
  { model: 'NVIDIA A10', vramMb: 23028 },
];
const FILTERS = ['tesla t4', 'v100-sxm2', 'v100-sxm2-32gb', 'nvidia a10', 'h100'];

const nodeArb = fc.record({
  gpus: fc.integer({ min: 0, max: 8 }),
  model: fc.integer({ min: 0, max: MODELS.length - 1 }),
  cpu: fc.integer({ min: 1, max: 64 }),
  memoryGb: fc.integer({ min: 1, max: 256 }),
  region: fc.constantFrom(undefined, 'eu', 'us'),
  down: fc.integer({ min: 0, max: 9 }).map((x) => x === 0),
  // Load already on the node: GPUs taken, fractions of its CPU and memory taken.
  usedGpus: fc.integer({ min: 0, max: 8 }),
  usedCpu: fc.double({ min: 0, max: 1, noNaN: true }),
  usedMem: fc.double({ min: 0, max: 1, noNaN: true }),
});

const jobArb = fc.record({
  gpus: fc.integer({ min: 0, max: 8 }),
  models: fc.option(fc.uniqueArray(fc.constantFrom(...FILTERS), { minLength: 1, maxLength: 3 }), { nil: undefined }),
  cpu: fc.oneof(fc.integer({ min: 1, max: 64 }), fc.double({ min: 0.1, max: 48, noNaN: true })),
  memoryGb: fc.integer({ min: 0, max: 256 }),
  region: fc.constantFrom(undefined, undefined, 'eu'),
  avoidFirst: fc.boolean(),
});

type NodeSpec = typeof nodeArb extends fc.Arbitrary<infer T> ? T : never;
type JobSpecArb = typeof jobArb extends fc.Arbitrary<infer T> ? T : never;

function buildIndex(nodes: NodeSpec[]): CapacityIndex {
  const index = new CapacityIndex();
  nodes.forEach((n, i) => {
    const m = MODELS[n.model] as (typeof MODELS)[number];
    index.upsertNode(node(`n${i}`, { gpus: n.gpus, model: m.model, vramMb: m.vramMb, cpu: n.cpu, memoryMb: n.memoryGb * 1024, ...(n.region ? { region: n.region } : {}) }));
    const used = Math.min(n.gpus, n.usedGpus);
    index.reserve({
      attemptId: `load-${i}`,
      nodeId: `n${i}`,
      gpuIndices: Array.from({ length: used }, (_, g) => g),
      cpu: Math.round(n.cpu * n.usedCpu * 1000) / 1000,
      memoryMb: Math.round(n.memoryGb * 1024 * n.usedMem),
    });
    if (n.down) index.setSchedulable(`n${i}`, false);
  });
  return index;
}

function jobOf(j: JobSpecArb): JobRecord {
  return job(
    { resources: { gpu: j.gpus === 0 ? { count: 0 } : { count: j.gpus, ...(j.models ? { models: j.models } : {}) }, cpuCores: j.cpu, ...(j.memoryGb > 0 ? { memoryGb: j.memoryGb } : {}) }, ...(j.region ? { constraints: { region: j.region } } : {}) },
    j.avoidFirst ? { avoid: ['n0'] } : {},
  );
}

const firstFitPlaces = (rec: JobRecord, index: CapacityIndex) => [...index.allNodes()].some((n) => fitOnNode(rec, n) !== undefined);

describe('placement completeness (issue 18)', () => {
  for (const [name, opts] of [
    ['default engine', {}],
    ['engine with a tiny bounded search (sample 1, 1 visit)', { sampleSize: 1, maxVisits: 1 }],
  ] as const) {
    test(`${name}: places every job first-fit would place, on the same index state`, () => {
      fc.assert(
        fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 40 }), fc.array(jobArb, { minLength: 1, maxLength: 6 }), fc.integer(), (nodes, jobs, seed) => {
          const index = buildIndex(nodes);
          const engine = new PlacementEngine({ ...opts, random: seededRandom(seed) });
          for (const j of jobs) {
            const rec = jobOf(j);
            const ff = firstFitPlaces(rec, index);
            const placed = engine.placeJob(rec, index, ctx());
            if (ff) assert.ok(placed.length > 0, `first-fit places ${JSON.stringify(requirementsOf(rec).shape)} but the engine does not`);
          }
        }),
        { numRuns: 300 },
      );
    });
  }

  test('a whole pass: no job left waiting that a node fits once the pass is done', () => {
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 60 }), fc.array(jobArb, { minLength: 1, maxLength: 30 }), fc.integer(), (nodes, jobs, seed) => {
        const index = buildIndex(nodes);
        const recs = jobs.map(jobOf);
        const placed = new Set(new PlacementEngine({ sampleSize: 2, maxVisits: 2, random: seededRandom(seed) }).place(recs, index, ctx()).map((p) => p.jobId));
        for (const r of recs) if (!placed.has(r.id)) assert.ok(!firstFitPlaces(r, index), `job ${requirementsOf(r).shape} waits although a node fits it`);
      }),
      { numRuns: 200 },
    );
  });

  test('"no fit" on a large fleet without scanning it: a job no node fits visits no node', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 5000; i++) index.upsertNode(node(`n${i}`, { gpus: 8, model: 'Tesla T4', vramMb: 15360, cpu: 32, memoryMb: 65536 }));
    const engine = new PlacementEngine();
    // More memory than any node has free: the pools' size bounds and the cells' memory bounds answer.
    assert.deepEqual(engine.place([job({ resources: { gpu: { count: 1 }, cpuCores: 4, memoryGb: 100 } })], index, ctx()), []);
    assert.equal(engine.lastPass.visits, 0);
    // Every node's memory taken but 10 GiB: each pass costs the bounded search's visits and one exact search (a cell walk).
    for (let i = 0; i < 5000; i++) index.reserve({ attemptId: `a${i}`, nodeId: `n${i}`, gpuIndices: [0], cpu: 1, memoryMb: 65536 - 10240 });
    const big = () => job({ resources: { gpu: { count: 1 }, cpuCores: 4, memoryGb: 20 } });
    assert.deepEqual(engine.place([big()], index, ctx()), []);
    assert.deepEqual(engine.place([big()], index, ctx()), []);
    assert.equal(engine.lastPass.exactSearches, 1);
    assert.ok(engine.lastPass.visits <= 512, `bounded: ${engine.lastPass.visits} visits`);
  });
});
