/**
 * Challenge sizing, reveal choice and verdicts (issue 12): an honest device passes with a score near the
 * table; a CPU claiming an H100 fails on time; one GPU behind 8 identities (8× the time) fails; a timed-out
 * challenge fails on the coordinator's clock whatever the node reports; a wrong block fails before any timing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  type BlockCheck,
  challengeSizing,
  challengeVerdict,
  chooseReveals,
  CHALLENGE_CLASSES,
  challengeClassOf,
  challengeClassRow,
  expectedComputeMs,
  MAX_SCORE,
  rowBlockFor,
  sampleDistinct,
  seededRandom,
  sizingBlocks,
  UNKNOWN_GPU_ROW,
} from '../src/index.js';

const ok: BlockCheck[] = [{ gpu: 0, product: 0, block: 0, ok: true, reason: null }];

describe('challenge classes and sizing', () => {
  it('keys classes like the market, with a cpu row and a safe floor for unknown GPUs', () => {
    assert.equal(challengeClassOf({ vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }), 'nvidia-h100-80gb');
    assert.ok(CHALLENGE_CLASSES['nvidia-h100-80gb']);
    assert.equal(challengeClassRow('cpu').source, 'measured');
    assert.equal(challengeClassRow('nvidia-h100-80gb').source, 'estimated');
    assert.equal(challengeClassRow('nvidia-mystery-12gb'), UNKNOWN_GPU_ROW);
    for (const row of Object.values(CHALLENGE_CLASSES)) assert.ok(row.gflops > 0 && row.basis.length > 0);
  });

  it('sizes a CPU node small (n = 256, about 2 s) and a GPU node so its work dominates start-up, within VRAM', () => {
    const cpu = challengeSizing([]);
    assert.equal(cpu.classKey, 'cpu');
    assert.equal(cpu.n, 256);
    assert.ok(cpu.expectedComputeMs > 1000 && cpu.expectedComputeMs < 4000);
    assert.ok(sizingBlocks(cpu) >= 16);
    const h100 = challengeSizing([{ classKey: 'nvidia-h100-80gb', vramMb: 81559 }]);
    assert.equal(h100.n, 8192);
    assert.ok(h100.expectedComputeMs >= 5000, `${h100.expectedComputeMs}`);
    assert.ok(h100.products * 4 * h100.n ** 2 <= 0.75 * 81559 * 2 ** 20);
    assert.ok(h100.deadlineMs > h100.expectedComputeMs * h100.tolerance.maxSlowdown);
    assert.ok(h100.tolerance.maxSlowdown < 8, 'one GPU for 8 identities must fail');
    // A small card is capped by its VRAM, not the time target.
    const small = challengeSizing([{ classKey: 'nvidia-rtx4090-24gb', vramMb: 24564 }]);
    assert.equal(small.products, Math.floor((0.75 * 24564 * 2 ** 20) / (4 * 8192 ** 2)));
  });

  it('sizes a mixed node for its slowest GPU', () => {
    const s = challengeSizing([
      { classKey: 'nvidia-h100-80gb', vramMb: 81559 },
      { classKey: 'nvidia-a100-80gb', vramMb: 81920 },
    ]);
    assert.equal(s.classKey, 'nvidia-a100-80gb');
  });

  it('keeps reveal blocks near 256 KiB with at least 16 blocks a product', () => {
    assert.equal(rowBlockFor(8192), 8);
    assert.equal(rowBlockFor(256), 16);
    assert.equal(rowBlockFor(8), 1);
  });
});

describe('choosing reveals', () => {
  it('samples distinct values uniformly enough', () => {
    const r = seededRandom(5);
    const hits = new Array(10).fill(0);
    for (let t = 0; t < 5000; t++) {
      const s = sampleDistinct(r, 10, 3);
      assert.equal(new Set(s).size, 3);
      for (const v of s) hits[v]++;
    }
    for (const h of hits) assert.ok(h > 1300 && h < 1700, `${hits}`);
    assert.deepEqual(sampleDistinct(r, 2, 5).sort(), [0, 1]);
  });

  it('asks each GPU for distinct products and blocks, never more than the wire allows', () => {
    const one = chooseReveals(seededRandom(1), { gpus: [0, 1], products: 100, blocks: 1024 });
    assert.equal(one.length, 8);
    assert.equal(new Set(one.map((r) => `${r.gpu}/${r.product}/${r.block}`)).size, 8);
    for (const r of one) assert.ok(r.product < 100 && r.block < 1024);
    const many = chooseReveals(seededRandom(2), { gpus: Array.from({ length: 64 }, (_, i) => i), products: 10, blocks: 64 });
    assert.equal(many.length, 64);
    assert.deepEqual(new Set(many.map((r) => r.gpu)).size, 64);
    const tiny = chooseReveals(seededRandom(3), { gpus: [0], products: 1, blocks: 1 });
    assert.deepEqual(tiny, [{ gpu: 0, product: 0, block: 0 }]);
  });
});

describe('challenge verdicts', () => {
  const h100 = challengeSizing([{ classKey: 'nvidia-h100-80gb', vramMb: 81559 }]);
  const exp = h100.expectedComputeMs;
  const gpu = (computeMs: number) => [{ index: 0, classKey: 'nvidia-h100-80gb', computeMs }];
  const honestElapsed = (computeMs: number) => computeMs + 8000; // start-up and hashing, well inside the allowances

  it('passes an honest GPU with its score', () => {
    const v = challengeVerdict({ sizing: h100, elapsedMs: honestElapsed(exp / 1.4), gpus: gpu(exp / 1.4), checks: ok });
    assert.equal(v.outcome, 'passed');
    assert.equal(v.provenClass, 'nvidia-h100-80gb');
    assert.ok(Math.abs(v.score! - 1.4) < 1e-9);
  });

  it('passes a slow but honest run inside the tolerance', () => {
    const v = challengeVerdict({ sizing: h100, elapsedMs: honestElapsed(exp * 2), gpus: gpu(exp * 2), checks: ok });
    assert.equal(v.outcome, 'passed');
    assert.ok(Math.abs(v.score! - 0.5) < 1e-9);
  });

  it('fails a CPU claiming an H100 on time (its honest report), and on the deadline when it lies', () => {
    const cpuMs = expectedComputeMs('cpu', h100.n, h100.products);
    const honest = challengeVerdict({ sizing: h100, elapsedMs: h100.deadlineMs - 1, gpus: gpu(cpuMs), checks: ok });
    assert.equal(honest.outcome, 'failed');
    assert.match(honest.reason!, /too slow for nvidia-h100-80gb/);
    const lying = challengeVerdict({ sizing: h100, elapsedMs: cpuMs, gpus: gpu(exp), checks: ok });
    assert.match(lying.reason!, /timed out/);
  });

  it('fails one GPU answering for 8 identities (8× the time), however it reports', () => {
    const eight = challengeVerdict({ sizing: h100, elapsedMs: honestElapsed(exp * 8), gpus: gpu(exp * 8), checks: ok });
    assert.equal(eight.outcome, 'failed');
    const lying = challengeVerdict({ sizing: h100, elapsedMs: honestElapsed(exp * 8), gpus: gpu(exp), checks: ok });
    assert.equal(lying.outcome, 'failed');
  });

  it('fails a wrong block first, with where and why', () => {
    const bad: BlockCheck[] = [...ok, { gpu: 0, product: 4, block: 9, ok: false, reason: 'wrong product: the block fails Freivalds check' }];
    const v = challengeVerdict({ sizing: h100, elapsedMs: 1, gpus: gpu(exp), checks: bad });
    assert.equal(v.outcome, 'failed');
    assert.match(v.reason!, /GPU 0 product 4 block 9: wrong product/);
    assert.equal(v.score, null);
    assert.equal(v.provenClass, null);
  });

  it('never believes a score above MAX_SCORE, and judges a mixed node by each GPU', () => {
    const s = challengeSizing([{ classKey: 'nvidia-h100-80gb' }, { classKey: 'nvidia-a100-80gb' }]);
    const a100Exp = expectedComputeMs('nvidia-a100-80gb', s.n, s.products);
    const v = challengeVerdict({
      sizing: s,
      elapsedMs: 1000,
      gpus: [
        { index: 0, classKey: 'nvidia-h100-80gb', computeMs: 1 },
        { index: 1, classKey: 'nvidia-a100-80gb', computeMs: a100Exp },
      ],
      checks: ok,
    });
    assert.equal(v.outcome, 'passed');
    assert.equal(v.perGpu[0]!.score, MAX_SCORE);
    assert.ok(Math.abs(v.score! - 1) < 1e-9);
  });

  it('fails when nothing was checked or no GPU reported', () => {
    assert.match(challengeVerdict({ sizing: h100, elapsedMs: 1, gpus: gpu(exp), checks: [] }).reason!, /no block/);
    assert.match(challengeVerdict({ sizing: h100, elapsedMs: 1, gpus: [], checks: ok }).reason!, /no GPU/);
  });
});
