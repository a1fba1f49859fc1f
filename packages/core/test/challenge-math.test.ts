/**
 * Challenge math (issue 12): the seeded generator, exact products, row-block Merkle digests and Freivalds.
 * An honest product passes; a wrong entry fails Freivalds in every deterministic case (error ≤ 2^-16 a round);
 * a block that does not match its committed digest fails the Merkle path.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  blockCount,
  blockLeaves,
  bTimesVectors,
  checkRevealedBlocks,
  encodeBlock,
  entryAt,
  FREIVALDS_X_RANGE,
  fillMatrixRows,
  freivaldsBlock,
  freivaldsVectors,
  generateMatrix,
  matrixKey,
  merkleLayers,
  merklePath,
  merkleRoot,
  multiplyInt,
  productDigest,
  productEntryBound,
  type Random,
  type RevealChoice,
  seededRandom,
  verifyMerklePath,
} from '../src/index.js';

const SEED = '0123456789abcdef'.repeat(4);

/** What an honest runner holds for one product. */
function honestProduct(seed: string, gpu: number, product: number, n: number) {
  return multiplyInt(generateMatrix(seed, gpu, product, 'A', n), generateMatrix(seed, gpu, product, 'B', n), n);
}

function reveal(c: Int32Array, n: number, rowBlock: number, req: RevealChoice, layers = merkleLayers(blockLeaves(c, n, rowBlock))) {
  const rows = c.subarray(req.block * rowBlock * n, Math.min(n, (req.block + 1) * rowBlock) * n);
  return { ...req, data: encodeBlock(rows), proof: merklePath(layers, req.block) };
}

describe('challenge generator', () => {
  it('is deterministic, in [-3, 3], close to uniform, and different per gpu, product and factor', () => {
    const n = 128;
    const a = generateMatrix(SEED, 0, 0, 'A', n);
    assert.deepEqual(a, generateMatrix(SEED, 0, 0, 'A', n));
    const counts = new Map<number, number>();
    for (const v of a) counts.set(v, (counts.get(v) ?? 0) + 1);
    assert.deepEqual([...counts.keys()].sort((x, y) => x - y), [-3, -2, -1, 0, 1, 2, 3]);
    for (const c of counts.values()) assert.ok(Math.abs(c - (n * n) / 7) < 0.1 * ((n * n) / 7), `count ${c}`);
    for (const other of [generateMatrix(SEED, 1, 0, 'A', n), generateMatrix(SEED, 0, 1, 'A', n), generateMatrix(SEED, 0, 0, 'B', n)]) {
      const same = a.filter((v, i) => v === other[i]).length;
      assert.ok(same < (n * n) / 7 + 500, `${same} equal entries: matrices must be independent`);
    }
  });

  it('fills any rows equal to those rows of the whole matrix, in any element type', () => {
    const n = 40;
    const whole = generateMatrix(SEED, 2, 5, 'B', n);
    const rows = fillMatrixRows(new Int8Array(3 * n), SEED, 2, 5, 'B', n, 17, 3);
    assert.deepEqual([...rows], [...whole.subarray(17 * n, 20 * n)]);
    const [k1, k2] = matrixKey(SEED, 2, 5, 'B');
    assert.equal(entryAt(k1, k2, 17 * n + 4), whole[17 * n + 4]);
  });

  it('pins the hash: these values are what the nvidia-torch script reproduces (agent challenge-torch test)', () => {
    assert.deepEqual(matrixKey('ff'.repeat(32), 3, 7, 'A'), [4055209054, 1638005318]);
    assert.deepEqual([...generateMatrix('ff'.repeat(32), 3, 7, 'A', 8).subarray(0, 16)], [2, -3, -2, -1, -3, -2, 0, -2, 0, -2, 1, 2, -1, 1, 1, -2]);
  });

  it('rejects a malformed seed', () => {
    assert.throws(() => matrixKey('XYZ', 0, 0, 'A'), /64 lowercase hex/);
  });
});

describe('challenge products and digests', () => {
  it('multiplies exactly (matches a naive product) within the 9n bound', () => {
    const n = 24;
    const a = generateMatrix(SEED, 0, 3, 'A', n);
    const b = generateMatrix(SEED, 0, 3, 'B', n);
    const c = multiplyInt(a, b, n);
    for (let i = 0; i < n; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let k = 0; k < n; k++) s += a[i * n + k]! * b[k * n + j]!;
        assert.equal(c[i * n + j], s);
        assert.ok(Math.abs(s) <= productEntryBound(n));
      }
  });

  it('proves every leaf of trees of 1 to 13 leaves, and refuses tampered leaves, indices and paths', () => {
    for (let count = 1; count <= 13; count++) {
      const leaves = Array.from({ length: count }, (_, i) => `${i.toString(16).padStart(2, '0')}`.repeat(32));
      const layers = merkleLayers(leaves);
      const root = merkleRoot(layers);
      for (let i = 0; i < count; i++) {
        const path = merklePath(layers, i);
        assert.ok(verifyMerklePath(leaves[i]!, i, count, path, root), `leaf ${i} of ${count}`);
        assert.ok(!verifyMerklePath('ee'.repeat(32), i, count, path, root));
        assert.ok(!verifyMerklePath(leaves[i]!, i, count, [...path, 'aa'.repeat(32)], root));
        if (path.length > 0) assert.ok(!verifyMerklePath(leaves[i]!, i, count, path.slice(1), root));
        if (count > 1) assert.ok(!verifyMerklePath(leaves[i]!, (i + 1) % count, count, path, root) || leaves[i] === leaves[(i + 1) % count]);
      }
      assert.ok(!verifyMerklePath(leaves[0]!, count, count, [], root));
    }
  });

  it('digests a product the same however the blocks fall (a short last block included)', () => {
    const n = 20;
    const c = honestProduct(SEED, 0, 0, n);
    assert.equal(blockCount(n, 6), 4);
    assert.equal(productDigest(c, n, 6), productDigest(Int32Array.from(c), n, 6));
    assert.notEqual(productDigest(c, n, 6), productDigest(c, n, 5));
  });
});

describe('checking a reveal', () => {
  const n = 64;
  const rowBlock = 4;
  const gpu = 1;
  const setup = () => {
    const products = [0, 1, 2].map((p) => honestProduct(SEED, gpu, p, n));
    const digests = new Map([[gpu, products.map((c) => productDigest(c, n, rowBlock))]]);
    const requested: RevealChoice[] = [
      { gpu, product: 0, block: 3 },
      { gpu, product: 2, block: 0 },
      { gpu, product: 2, block: 15 },
    ];
    return { products, digests, requested };
  };

  it('passes an honest product', () => {
    const { products, digests, requested } = setup();
    const blocks = requested.map((r) => reveal(products[r.product]!, n, rowBlock, r));
    const checks = checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests, requested, blocks, random: seededRandom(7) });
    assert.deepEqual(
      checks.map((c) => c.ok),
      [true, true, true],
    );
  });

  it('catches one wrong entry with Freivalds when the digest was made over the wrong product (every position tried, k = 1)', () => {
    // The cheater commits to its wrong product, so the Merkle path holds and only Freivalds can catch it.
    const honest = honestProduct(SEED, gpu, 0, n);
    let tried = 0;
    for (let pos = 0; pos < rowBlock * n; pos += 7) {
      for (const delta of [1, -1, 5, 2 ** 20]) {
        const wrong = Int32Array.from(honest);
        wrong[3 * rowBlock * n + pos]! += delta;
        const digests = new Map([[gpu, [productDigest(wrong, n, rowBlock)]]]);
        const req = { gpu, product: 0, block: 3 };
        const [check] = checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests, requested: [req], blocks: [reveal(wrong, n, rowBlock, req)], random: seededRandom(pos * 31 + delta), rounds: 1 });
        assert.equal(check!.ok, false, `entry ${pos} off by ${delta}`);
        assert.match(check!.reason!, /Freivalds/);
        tried++;
      }
    }
    assert.ok(tried > 100);
  });

  it('misses a wrong entry in a round only when x vanishes there: the reason x must be random (≤ 2^-16 a round)', () => {
    const honest = honestProduct(SEED, gpu, 0, n);
    const wrong = honest.slice(0, rowBlock * n);
    wrong[10]! += 1; // row 0, column 10
    const zeroAt10: Random = { next: () => 0.5, bytes: (k) => new Uint8Array(k) };
    const xs = freivaldsVectors(zeroAt10, n, 1);
    xs[0]![10] = 0;
    const bx = bTimesVectors(SEED, gpu, 0, n, xs);
    assert.equal(freivaldsBlock({ seedHex: SEED, gpu, product: 0, n, rowStart: 0, rows: rowBlock, block: wrong, xs, bx }), true);
    assert.equal(FREIVALDS_X_RANGE, 65536);
    const fair = freivaldsVectors(seededRandom(3), n, 2);
    assert.equal(freivaldsBlock({ seedHex: SEED, gpu, product: 0, n, rowStart: 0, rows: rowBlock, block: wrong, xs: fair, bx: bTimesVectors(SEED, gpu, 0, n, fair) }), false);
  });

  it('catches honest digests with a faked block: the Merkle path fails', () => {
    const { products, digests } = setup();
    const req = { gpu, product: 1, block: 5 };
    const honest = reveal(products[1]!, n, rowBlock, req);
    // A block that would pass Freivalds (the true rows of another product are not it), or any forged rows.
    const forged = { ...honest, data: encodeBlock(products[2]!.subarray(5 * rowBlock * n, 6 * rowBlock * n)) };
    const [check] = checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests, requested: [req], blocks: [forged], random: seededRandom(1) });
    assert.equal(check!.ok, false);
    assert.match(check!.reason!, /Merkle/);
  });

  it('catches a cheater that digested garbage and computes the asked rows honestly afterwards', () => {
    const c = honestProduct(SEED, gpu, 0, n);
    const garbage = new Int32Array(n * n);
    const digests = new Map([[gpu, [productDigest(garbage, n, rowBlock)]]]);
    const req = { gpu, product: 0, block: 2 };
    const block = reveal(c, n, rowBlock, req, merkleLayers(blockLeaves(garbage, n, rowBlock)));
    const [check] = checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests, requested: [req], blocks: [block], random: seededRandom(1) });
    assert.match(check!.reason!, /Merkle/);
  });

  it('refuses missing blocks, wrong sizes, impossible entries and products never committed', () => {
    const { products, digests } = setup();
    const req = { gpu, product: 0, block: 1 };
    const honest = reveal(products[0]!, n, rowBlock, req);
    const run = (blocks: Parameters<typeof checkRevealedBlocks>[0]['blocks'], requested: RevealChoice[] = [req]) =>
      checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests, requested, blocks, random: seededRandom(1) })[0]!.reason;
    assert.match(run([]) ?? '', /not revealed/);
    assert.match(run([{ ...honest, data: honest.data.slice(0, 40) }]) ?? '', /int32 values/);
    assert.match(run([{ ...honest, data: 'A'.repeat(1_000_000) }]) ?? '', /int32 values/);
    assert.match(run([{ ...honest, gpu: 9 }], [{ gpu: 9, product: 0, block: 1 }]) ?? '', /no digest/);
    // Far beyond 9n: refused before any sum could lose exactness, even under a consistent digest.
    const bad = Int32Array.from(products[0]!);
    bad[rowBlock * n] = 2 ** 31 - 1;
    const hostile = checkRevealedBlocks({
      seedHex: SEED,
      n,
      rowBlock,
      digests: new Map([[gpu, [productDigest(bad, n, rowBlock)]]]),
      requested: [req],
      blocks: [reveal(bad, n, rowBlock, req)],
      random: seededRandom(1),
    })[0]!;
    assert.equal(hostile.ok, false);
    assert.match(hostile.reason!, /Freivalds/);
  });
});
