/** The pure parts of registration: the per-provider token bucket and the advertisement consistency checks. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NodeAdvertisement } from '@gpux/protocol';
import { adProblems } from '../src/services/advertisement-check.js';
import { RegisterRate } from '../src/services/register-rate.js';
import { gpuAd } from './helpers.js';

describe('RegisterRate', () => {
  test('a burst of perMinute, then one per 60/perMinute seconds, per account', () => {
    const r = new RegisterRate(6);
    for (let i = 0; i < 6; i++) assert.equal(r.take('a', 0), 0);
    assert.equal(r.take('a', 0), 10_000, 'the next one in 10 s');
    assert.equal(r.take('b', 0), 0, 'another account has its own bucket');
    assert.equal(r.take('a', 9_999), 1);
    assert.equal(r.take('a', 10_000), 0);
    assert.ok(r.take('a', 10_000) > 0);
    for (let i = 0; i < 6; i++) assert.equal(r.take('a', 10_000 + 60_000), 0, 'a quiet minute refills the burst');
  });
});

describe('adProblems', () => {
  const withGpu = (model: string, vramMb: number, vendor: 'nvidia' | 'amd' = 'nvidia') =>
    NodeAdvertisement.parse({ ...gpuAd('x'), gpus: [{ index: 0, uuid: 'u', vendor, model, vramMb }] });

  test('known models with their real memory pass; unknown models are not judged', () => {
    assert.deepEqual(adProblems(withGpu('NVIDIA H100 80GB HBM3', 81_559)), []);
    assert.deepEqual(adProblems(withGpu('NVIDIA H100 NVL', 95_830)), []);
    assert.deepEqual(adProblems(withGpu('NVIDIA GeForce RTX 4090', 24_564)), []);
    assert.deepEqual(adProblems(withGpu('AMD Instinct MI300X', 196_592, 'amd')), []);
    assert.deepEqual(adProblems(withGpu('Tesla T4', 15_360)), []);
    assert.deepEqual(adProblems(withGpu('Alibaba G3 (undisclosed)', 81_920)), []);
  });

  test('a famous model with the wrong memory, or under the wrong vendor, is a problem at its path', () => {
    const [p] = adProblems(withGpu('NVIDIA H100 80GB HBM3', 16_384));
    assert.equal(p?.path, 'advertisement.gpus.0.vramMb');
    assert.match(p?.message ?? '', /an H100 has 70-96 GiB/);
    assert.equal(adProblems(withGpu('NVIDIA H200', 81_920)).length, 1);
    assert.equal(adProblems(withGpu('AMD Instinct MI300X', 196_592, 'nvidia'))[0]?.path, 'advertisement.gpus.0.vendor');
    assert.equal(adProblems(withGpu('NVIDIA GeForce RTX 4090', 24_564, 'amd'))[0]?.path, 'advertisement.gpus.0.vendor');
  });
});
