/** The docker executor on a real engine: the executor conformance suite (as for the process executor), then leaves nothing behind. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GpuDevice } from '@gpux/protocol';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '@gpux/testing';
import { connectDocker, DockerExecutor, managedFilter } from '../src/index.js';
import { executorConformance } from './executor-conformance.js';
import { tempDir } from './helpers.js';

const nodeId = `n-docker-conformance-${process.pid}`;
// Two fake NVIDIA GPUs at host indices 1 and 3 (the uuids the conformance requests carry).
const gpus: GpuDevice[] = [1, 3].map((index) => ({ index, uuid: `GPU-test-${index}`, vendor: 'nvidia', model: 'Test GPU', vramMb: 1024 }));

describe('docker executor', requireDocker(), () => {
  before(() => buildBusyboxImage());

  executorConformance('docker', async (t) => ({
    executor: new DockerExecutor({
      nodeId,
      workRoot: await tempDir(t),
      killGraceMs: 1000,
      gpus,
      // No GPU here: the device part of the config is unit-tested (docker-config.test.ts); the env is checked for real.
      gpuHostConfig: () => ({}),
    }),
    shell: (script) => ['sh', '-c', script],
    image: TEST_IMAGE,
    gpuEnv: (indices, uuids) => {
      const local = indices.map((_, i) => i).join(',');
      return { CUDA_VISIBLE_DEVICES: local, NVIDIA_VISIBLE_DEVICES: uuids.join(','), ROCR_VISIBLE_DEVICES: local, HIP_VISIBLE_DEVICES: local };
    },
  }));

  after(async () => {
    const left = await connectDocker().listContainers({ all: true, filters: JSON.stringify(managedFilter(nodeId)) });
    assert.deepEqual(
      left.map((c) => c.Names),
      [],
      'every container of the suite was removed',
    );
  });
});

test('an attempt on GPUs the node does not have fails before anything runs', async (t) => {
  const executor = new DockerExecutor({ nodeId, workRoot: await tempDir(t), gpus, docker: connectDocker('/nonexistent/docker.sock') });
  const execution = await executor.start(
    { attemptId: 'a-1', jobId: 'j-1', spec: { ...baseSpec(), image: TEST_IMAGE }, gpuIndices: [0], gpuUuids: ['GPU-x'] },
    () => {},
  );
  const outcome = await execution.done;
  assert.equal(outcome.outcome, 'failed');
  assert.match(outcome.error ?? '', /GPU 0 is not on this node \(it has 1, 3\)/);
});

function baseSpec() {
  return {
    name: 'x',
    image: 'busybox',
    command: ['true'],
    args: [],
    env: {},
    resources: { gpu: { count: 0 } },
    inputs: [],
    timeoutSeconds: 60,
    maxRetries: 0,
    labels: {},
    constraints: {},
  };
}
