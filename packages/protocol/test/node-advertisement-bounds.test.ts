/** NodeAdvertisement bounds (issue 10 item 2): the limits hold at their edges, and each refusal names its path. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AD_LIMITS, NodeAdvertisement, type NodeAdvertisementInput, problemsFromZod } from '../src/index.js';

const gpu = (i: number) => ({ index: i, uuid: `GPU-${i}`, vendor: 'nvidia' as const, model: 'NVIDIA H100 80GB HBM3', vramMb: 81_920 });
const ad = (over: Partial<NodeAdvertisementInput> = {}): NodeAdvertisementInput => ({
  hostname: 'h',
  agentVersion: '1',
  os: 'linux',
  arch: 'x64',
  cpuCores: 8,
  memoryMb: 1024,
  gpus: [gpu(0)],
  docker: { available: false },
  executors: ['process'],
  ...over,
});
const paths = (input: NodeAdvertisementInput): string[] => {
  const r = NodeAdvertisement.safeParse(input);
  return r.success ? [] : problemsFromZod(r.error).map((p) => p.path);
};

describe('NodeAdvertisement bounds', () => {
  test('the largest real machine passes', () => {
    const big = ad({
      cpuCores: AD_LIMITS.cpuCores,
      memoryMb: AD_LIMITS.memoryMb,
      gpus: Array.from({ length: AD_LIMITS.gpus }, (_, i) => ({ ...gpu(i), vramMb: AD_LIMITS.vramMbPerGpu })),
      labels: Object.fromEntries(Array.from({ length: AD_LIMITS.labels }, (_, i) => [`k${i}`, 'v'.repeat(AD_LIMITS.labelValue)])),
    });
    assert.deepEqual(paths(big), []);
  });

  test('one past each limit is refused at its path', () => {
    assert.deepEqual(paths(ad({ cpuCores: AD_LIMITS.cpuCores + 1 })), ['cpuCores']);
    assert.deepEqual(paths(ad({ memoryMb: AD_LIMITS.memoryMb + 1 })), ['memoryMb']);
    assert.deepEqual(paths(ad({ gpus: Array.from({ length: AD_LIMITS.gpus + 1 }, (_, i) => gpu(i)) })), ['gpus']);
    assert.deepEqual(paths(ad({ gpus: [{ ...gpu(0), vramMb: AD_LIMITS.vramMbPerGpu + 1 }] })), ['gpus.0.vramMb']);
    assert.deepEqual(paths(ad({ labels: Object.fromEntries(Array.from({ length: AD_LIMITS.labels + 1 }, (_, i) => [`k${i}`, 'v'])) })), ['labels']);
    assert.deepEqual(paths(ad({ labels: { ['k'.repeat(AD_LIMITS.labelKey + 1)]: 'v' } })).length, 1);
    assert.deepEqual(paths(ad({ gpus: [{ ...gpu(0), uuid: 'u'.repeat(AD_LIMITS.text + 1) }] })), ['gpus.0.uuid']);
    assert.deepEqual(paths(ad({ gpus: [{ ...gpu(0), model: 'm'.repeat(AD_LIMITS.text + 1) }] })), ['gpus.0.model']);
    assert.deepEqual(paths(ad({ agentVersion: 'v'.repeat(65) })), ['agentVersion']);
  });

  test('a GPU index or uuid listed twice is refused', () => {
    assert.deepEqual(paths(ad({ gpus: [gpu(0), { ...gpu(1), index: 0 }] })), ['gpus.1.index']);
    assert.deepEqual(paths(ad({ gpus: [gpu(0), { ...gpu(1), uuid: 'GPU-0' }] })), ['gpus.1.uuid']);
  });
});
