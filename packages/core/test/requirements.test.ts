/** requirementsOf: jobs whose specs ask the same share one requirements object, and only those (issue 18, placement rate). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { requirementsOf } from '../src/index.js';
import { gpuJob, job } from './helpers.js';

describe('requirementsOf', () => {
  test('jobs with equal specs share one object', () => {
    const spec = { resources: { cpuCores: 4, memoryGb: 16, gpu: { count: 2, models: ['H100'] } }, constraints: { preferredRegion: 'eu' } };
    const a = requirementsOf(gpuJob(2, spec));
    const b = requirementsOf(gpuJob(2, spec));
    assert.equal(a, b);
    assert.deepEqual([a.gpuCount, a.cpu, a.memoryMb, a.gpu.models, a.preferredRegion, a.avoid.size], [2, 4, 16_384, ['h100'], 'eu', 0]);
    // A parsed spec lists its keys in the schema's order: the same spec written in another order shares too.
    const reordered = requirementsOf(gpuJob(2, { constraints: { preferredRegion: 'eu' }, resources: { gpu: { models: ['H100'], count: 2 }, memoryGb: 16, cpuCores: 4 } }));
    assert.equal(reordered, a);
  });

  test('a field the requirements read makes another object', () => {
    const base = requirementsOf(gpuJob(1, { constraints: { preferredRegion: 'eu' } }));
    for (const other of [
      gpuJob(1, { constraints: { preferredRegion: 'us' } }),
      gpuJob(1, { constraints: { region: 'eu', preferredRegion: 'eu' } }),
      gpuJob(1, { constraints: { preferredRegion: 'eu' }, priority: 'high' }),
      gpuJob(1, { constraints: { preferredRegion: 'eu' }, timeoutSeconds: 60 }),
      gpuJob(1, { constraints: { preferredRegion: 'eu' }, maxPricePerGpuHour: 500 }),
      gpuJob(2, { constraints: { preferredRegion: 'eu' } }),
    ]) {
      const r = requirementsOf(other);
      assert.notEqual(r, base);
      assert.notDeepEqual(r, base);
    }
    // One model filter naming "a,b" is not two filters "a" and "b", though their short GPU keys read alike.
    const one = requirementsOf(gpuJob(1, { resources: { gpu: { count: 1, models: ['a,b'] } } }));
    const two = requirementsOf(gpuJob(1, { resources: { gpu: { count: 1, models: ['a', 'b'] } } }));
    assert.deepEqual(one.gpu.models, ['a,b']);
    assert.deepEqual(two.gpu.models, ['a', 'b']);
  });

  test('a job that avoids nodes, pays through the market or checks others gets its own object', () => {
    const plain = requirementsOf(job({ resources: { cpuCores: 2 } }));
    const avoiding = requirementsOf(job({ resources: { cpuCores: 2 } }, { avoid: ['n1'] }));
    assert.notEqual(avoiding, plain);
    assert.deepEqual([...avoiding.avoid], ['n1']);
    assert.equal(plain.avoid.size, 0);
    const audit = requirementsOf({ ...job({ resources: { cpuCores: 2 } }), kind: 'audit', avoidProviderIds: ['p1'] });
    assert.equal(audit.check, 'audit');
    assert.deepEqual([...audit.avoidProviders], ['p1']);
    assert.equal(plain.check, null);
    assert.equal(requirementsOf(job({ resources: { cpuCores: 2 } })), plain, 'the plain ones still share');
  });
});
