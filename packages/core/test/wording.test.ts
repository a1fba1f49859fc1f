/** Issue 16 wording: "the job has succeeded", not "is succeeded"; "1 GPU × 1 node", not "1 units × 1 nodes"; CPU-only prices per job-hour. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, explainJob, holdFor } from '../src/index.js';
import { gpuJob, node, T0 } from './helpers.js';

describe('wording', () => {
  test('a finished job "has succeeded" or "has failed"; a cancelled one "is cancelled"', () => {
    const j = gpuJob(1);
    assert.match(explainJob({ ...j, state: 'succeeded' }, new CapacityIndex(), T0, null).summary, /^the job has succeeded; only queued jobs wait for placement$/);
    assert.match(explainJob({ ...j, state: 'failed' }, new CapacityIndex(), T0, null).summary, /^the job has failed;/);
    assert.match(explainJob({ ...j, state: 'cancelled' }, new CapacityIndex(), T0, null).summary, /^the job is cancelled;/);
  });

  test('one job ahead is "1 job"; one GPU is "1 GPU"', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('n1', { gpus: 2 }));
    assert.match(explainJob(gpuJob(1), index, T0, { ahead: 1, total: 2 }).summary, /\(1 job ahead\)/);
    index.upsertNode(node('cpu-only', { gpus: 0 }));
    const none = explainJob(gpuJob(1), index, T0, null);
    assert.ok(JSON.stringify(none).includes('fewer than 1 GPU of an accepted model'), JSON.stringify(none.filters));
  });

  test('a hold too large names GPUs and nodes in singular or plural', () => {
    const spec = (gpus: number, nodes: number) => ({ resources: { gpu: { count: gpus } }, nodes, timeoutSeconds: 7 * 24 * 3600 });
    // One GPU (or a CPU-only job, one unit) cannot pass the largest amount at the highest cap: three GPUs can.
    assert.throws(() => holdFor(spec(3, 1), 1_000_000_000_000), /per GPU-hour for 3 GPUs × 1 node × 604800 s/);
    assert.throws(() => holdFor(spec(8, 2), 1_000_000_000_000), /per GPU-hour for 8 GPUs × 2 nodes × 604800 s/);
  });
});
