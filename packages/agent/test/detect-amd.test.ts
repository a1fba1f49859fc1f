import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { detectAmd, parseAmdSmiStatic, parseRocmSmiJson } from '../src/index.js';
import { fixture, notFound, ok, scriptedRunner } from './helpers.js';

describe('parseRocmSmiJson', () => {
  test('RX 7900 XT: capitalised keys, PCI id as model, no unique id', () => {
    const { gpus, problems } = parseRocmSmiJson(fixture('rocm-smi/rx7900xt.json'));
    assert.deepEqual(problems, []);
    assert.deepEqual(gpus, [{ index: 0, uuid: 'amd-card0', vendor: 'amd', model: 'Radeon RX 7900 XT', vramMb: 20464, computeCapability: 'gfx1100' }]);
  });

  test('MI250 (older lower-case keys): series wins over a misreported model', () => {
    const { gpus } = parseRocmSmiJson(fixture('rocm-smi/mi250-excerpt.json'));
    assert.deepEqual(gpus, [{ index: 5, uuid: '0x87fc3ea34b2236f3', vendor: 'amd', model: 'AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2', vramMb: 65520 }]);
  });

  test('8x MI300X with unique ids and the system driver version', () => {
    const { gpus } = parseRocmSmiJson(fixture('rocm-smi/mi300x-x8-reconstructed.json'));
    assert.equal(gpus.length, 8);
    assert.deepEqual(
      gpus.map((g) => g.index),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    assert.deepEqual(gpus[1], { index: 1, uuid: '0x5fa1c0de00001111', vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196592, driver: '6.8.5', computeCapability: 'gfx942' });
  });

  test('not JSON', () => {
    assert.deepEqual(parseRocmSmiJson('WARNING: No JSON data to report').gpus, []);
  });
});

describe('parseAmdSmiStatic', () => {
  test('RX 7800 XT in the gpu_data wrapper', () => {
    const { gpus, problems } = parseAmdSmiStatic(fixture('amd-smi/rx7800xt-gpu-data.json'));
    assert.deepEqual(problems, []);
    assert.deepEqual(gpus, [
      { index: 0, uuid: '0x4162405E51BB99B0', vendor: 'amd', model: 'AMD Radeon RX 7800 XT', vramMb: 16368, driver: '6.16.4', computeCapability: 'gfx1101' },
    ]);
  });

  test('2x MI300X as a bare array', () => {
    const { gpus } = parseAmdSmiStatic(fixture('amd-smi/mi300x-x2-array-reconstructed.json'));
    assert.deepEqual(gpus[1], { index: 1, uuid: '0x6F1F0A2B3C4D5E61', vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196592, driver: '6.8.5', computeCapability: 'gfx942' });
  });

  test('warnings printed before the JSON are skipped; other size shapes', () => {
    const text = `/usr/lib/python3.14/site-packages/amdsmi/amdsmi_interface.py:3569: SyntaxWarning: 'return' in a 'finally' block\n[{"gpu": 0, "asic": {"market_name": "X"}, "vram": {"size": "16 GB"}, "bus": {"bdf": "0000:03:00.0"}}, {"gpu": 1, "asic": {}, "vram": {"size": 8176}}]`;
    const { gpus } = parseAmdSmiStatic(text);
    assert.deepEqual(gpus, [
      { index: 0, uuid: 'AMD-0000:03:00.0', vendor: 'amd', model: 'X', vramMb: 16384 },
      { index: 1, uuid: 'amd-gpu1', vendor: 'amd', model: 'AMD GPU 1', vramMb: 8176 },
    ]);
  });

  test('not a list of GPUs is a problem', () => {
    assert.equal(parseAmdSmiStatic('{"error": "no"}').problems.length, 1);
  });
});

describe('detectAmd', () => {
  test('amd-smi first', async () => {
    const run = scriptedRunner({ 'amd-smi': ok(fixture('amd-smi/rx7800xt-gpu-data.json')) });
    const { gpus } = await detectAmd(run);
    assert.equal(gpus.length, 1);
    assert.deepEqual(run.calls, [['amd-smi', 'static', '--json']]);
  });

  test('amd-smi failing: falls back to rocm-smi', async () => {
    const run = scriptedRunner({
      'amd-smi': { code: 1, stdout: '', stderr: 'AMDSMI_STATUS_INIT_ERROR\n' },
      'rocm-smi': ok(fixture('rocm-smi/mi300x-x8-reconstructed.json')),
    });
    const { gpus, problems } = await detectAmd(run);
    assert.equal(gpus.length, 8);
    assert.deepEqual(problems, []);
    assert.deepEqual(run.calls[1], ['rocm-smi', '--showproductname', '--showmeminfo', 'vram', '--showuniqueid', '--showdriverversion', '--json']);
  });

  test('neither tool: no GPUs, both reasons', async () => {
    const { gpus, problems } = await detectAmd(scriptedRunner({ 'amd-smi': notFound }));
    assert.deepEqual(gpus, []);
    assert.deepEqual(problems, ['no AMD GPUs: amd-smi not found; rocm-smi not found']);
  });

  test('tool timed out', async () => {
    const { problems } = await detectAmd(scriptedRunner({ 'amd-smi': { code: null, stdout: '', stderr: '', failure: 'timeout' }, 'rocm-smi': { code: 2, stdout: '', stderr: 'ERROR: GPU[0] : Unable to read\n' } }));
    assert.deepEqual(problems, ['no AMD GPUs: amd-smi timed out after 10 s; rocm-smi exited with code 2: ERROR: GPU[0] : Unable to read']);
  });
});
