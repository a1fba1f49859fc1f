import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { detectNvidia, parseNvidiaSmiCsv } from '../src/index.js';
import { fixture, ok, scriptedRunner } from './helpers.js';

describe('parseNvidiaSmiCsv', () => {
  test('4x H200 with a header line and MiB units', () => {
    const { gpus, problems } = parseNvidiaSmiCsv(fixture('nvidia-smi/h200x4-csv-header.txt'));
    assert.deepEqual(problems, []);
    assert.equal(gpus.length, 4);
    assert.deepEqual(gpus[0], { index: 0, uuid: 'GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2', vendor: 'nvidia', model: 'NVIDIA H200-141C', vramMb: 144384 });
    assert.deepEqual(
      gpus.map((g) => [g.index, g.uuid]),
      [
        [0, 'GPU-78aaaccb-3af1-11b3-b1f8-3828c251d9f2'],
        [1, 'GPU-7bdd753d-3af1-11b3-a839-80f10ebdf224'],
        [2, 'GPU-7eb48ff1-3af1-11b3-9b3a-93ee06a0ff76'],
        [3, 'GPU-8187d0e1-3af1-11b3-a3da-3990b94501cf'],
      ],
    );
  });

  test('1x H200 recorded by our own device run, in the agent’s query format', () => {
    const { gpus, problems } = parseNvidiaSmiCsv(fixture('nvidia-smi/h200x1-query.recorded.txt'));
    assert.deepEqual(problems, []);
    assert.deepEqual(gpus, [
      { index: 0, uuid: 'GPU-95d78f1b-fe43-7a70-23df-73e8a1c8188e', vendor: 'nvidia', model: 'NVIDIA H200', vramMb: 143771, driver: '580.159.04', computeCapability: '9.0' },
    ]);
  });

  test('mixed models on one host', () => {
    const { gpus } = parseNvidiaSmiCsv(fixture('nvidia-smi/rtx4080s-rtx3090-csv-header.txt'));
    assert.deepEqual(gpus, [
      { index: 0, uuid: 'GPU-e4252fcb-8ed4-ef11-71cd-d36a23871c75', vendor: 'nvidia', model: 'NVIDIA GeForce RTX 4080 SUPER', vramMb: 16376 },
      { index: 1, uuid: 'GPU-358353dd-5933-1dc6-ac0d-e1189b063e4c', vendor: 'nvidia', model: 'NVIDIA GeForce RTX 3090', vramMb: 24576 },
    ]);
  });

  test('no uuid column: a stable placeholder, driver kept', () => {
    const { gpus } = parseNvidiaSmiCsv(fixture('nvidia-smi/a100x2-csv-header.txt'));
    assert.deepEqual(gpus, [
      { index: 0, uuid: 'nvidia-0', vendor: 'nvidia', model: 'NVIDIA A100-SXM4-80GB', vramMb: 81920, driver: '580.126.16' },
      { index: 1, uuid: 'nvidia-1', vendor: 'nvidia', model: 'NVIDIA A100-SXM4-80GB', vramMb: 81920, driver: '580.126.16' },
    ]);
  });

  test('[N/A] values and explicit field lists', () => {
    const fields = ['timestamp', 'serial', 'name', 'mig.mode.current', 'utilization.gpu', 'memory.total', 'memory.used', 'utilization.memory'];
    const { gpus, problems } = parseNvidiaSmiCsv(fixture('nvidia-smi/t4-metering-noheader-nounits.txt'), fields);
    assert.deepEqual(problems, []);
    assert.deepEqual(gpus, [{ index: 0, uuid: 'nvidia-0', vendor: 'nvidia', model: 'Tesla T4', vramMb: 15360 }]);
  });

  test('8x H100 in the agent’s own query format, with compute capability', () => {
    const { gpus } = parseNvidiaSmiCsv(fixture('nvidia-smi/h100x8-query.txt'));
    assert.equal(gpus.length, 8);
    assert.deepEqual(gpus[7], {
      index: 7,
      uuid: 'GPU-1a2b3c07-5c1e-4a7b-9d3e-a0b0c0d0e007',
      vendor: 'nvidia',
      model: 'NVIDIA H100 80GB HBM3',
      vramMb: 81559,
      driver: '550.54.15',
      computeCapability: '9.0',
    });
  });

  test('[Not Supported] becomes undefined; a malformed line is a problem, not a crash', () => {
    const { gpus, problems } = parseNvidiaSmiCsv('0, GPU-x, NVIDIA Jetson, [Not Supported], 540.4, 8.7\ngarbage\n');
    assert.deepEqual(gpus, [{ index: 0, uuid: 'GPU-x', vendor: 'nvidia', model: 'NVIDIA Jetson', vramMb: 0, driver: '540.4', computeCapability: '8.7' }]);
    assert.equal(problems.length, 1);
    assert.match(problems[0] ?? '', /unexpected line/);
  });

  test('a name with a comma stays one name', () => {
    const { gpus } = parseNvidiaSmiCsv('1, GPU-y, Odd, Name, 24564, 1.0, 8.9');
    assert.equal(gpus[0]?.model, 'Odd, Name');
    assert.equal(gpus[0]?.vramMb, 24564);
  });
});

describe('detectNvidia', () => {
  test('older driver without compute_cap: retries with the legacy query', async () => {
    const run = scriptedRunner({
      'nvidia-smi': (args) =>
        args[0]?.includes('compute_cap')
          ? { code: 2, stdout: '', stderr: fixture('nvidia-smi/compute-cap-invalid-field.stderr.txt') }
          : ok(fixture('nvidia-smi/rtx2080-driver440-legacy-query.txt')),
    });
    const { gpus, problems } = await detectNvidia(run);
    assert.deepEqual(problems, []);
    assert.equal(run.calls.length, 2);
    assert.deepEqual(run.calls[1], ['nvidia-smi', '--query-gpu=index,uuid,name,memory.total,driver_version', '--format=csv,noheader,nounits']);
    assert.deepEqual(gpus, [{ index: 0, uuid: 'GPU-22b2c6ac-2d49-4863-197c-9c469071178a', vendor: 'nvidia', model: 'GeForce RTX 2080', vramMb: 7979, driver: '440.64' }]);
  });

  test('driver not loaded: no GPUs, and the tool’s own words as the problem', async () => {
    const run = scriptedRunner({ 'nvidia-smi': { code: 9, stdout: fixture('nvidia-smi/no-driver.stdout.txt'), stderr: '' } });
    const { gpus, problems } = await detectNvidia(run);
    assert.deepEqual(gpus, []);
    assert.deepEqual(problems, [
      "no NVIDIA GPUs: nvidia-smi exited with code 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
    ]);
  });

  test('command not found', async () => {
    const { gpus, problems } = await detectNvidia(scriptedRunner({}));
    assert.deepEqual(gpus, []);
    assert.deepEqual(problems, ['no NVIDIA GPUs: nvidia-smi not found']);
  });
});
