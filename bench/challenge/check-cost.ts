/**
 * The coordinator's work per challenge, measured with core's real functions: for one GPU, 2 products × 2 row
 * blocks revealed (the default), checkRevealedBlocks decodes them, regenerates A's rows and B, walks the Merkle
 * paths and runs Freivalds (k = 2). The node's side is built cheaply: only the revealed rows are computed
 * honestly and the other leaves are random (the coordinator never sees them). Baseline in the same run: checking
 * the same blocks by recomputing their rows directly (A_rows · B, also O(n²) per row, rowBlock times over).
 */
import { blockCount, checkRevealedBlocks, chooseReveals, encodeBlock, fillMatrixRows, generateMatrix, leafHash, merkleLayers, merklePath, merkleRoot, multiplyInt, rowBlockFor, seededRandom } from '@gpux/core';

export interface CheckCost {
  n: number;
  rowBlock: number;
  blocks: number;
  /** Median ms per GPU challenge (4 blocks over 2 products): the coordinator's CPU. */
  checkMs: number;
  /** The same blocks checked by direct recomputation of their rows. */
  directMs: number;
  /** checkMs / n² × 1e6: flat when the check is O(n²). */
  nsPerEntry: number;
}

const SEED = 'c0ffee00'.repeat(8);

function honestReveal(n: number, rowBlock: number, gpu: number, product: number, blocks: number[], rnd: () => number) {
  const leaves = Array.from({ length: blockCount(n, rowBlock) }, () => Math.floor(rnd() * 2 ** 32).toString(16).padStart(64, '0'));
  const b = generateMatrix(SEED, gpu, product, 'B', n);
  const rows = new Map<number, Int32Array>();
  for (const block of blocks) {
    const rowStart = block * rowBlock;
    const count = Math.min(rowBlock, n - rowStart);
    const a = fillMatrixRows(new Float32Array(count * n), SEED, gpu, product, 'A', n, rowStart, count);
    // multiplyInt reads A from row rowStart of its first argument: hand it a view where those rows sit at 0.
    const c = multiplyInt(a, b, n, new Int32Array(count * n), 0, count);
    rows.set(block, c);
    leaves[block] = leafHash(c);
  }
  const layers = merkleLayers(leaves);
  return { root: merkleRoot(layers), blocks: blocks.map((block) => ({ gpu, product, block, data: encodeBlock(rows.get(block)!), proof: merklePath(layers, block) })) };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** Direct check of one block: recompute A_rows · B (B regenerated once per product). */
function directCheck(n: number, rowBlock: number, gpu: number, product: number, blocks: number[]): void {
  const b = generateMatrix(SEED, gpu, product, 'B', n);
  for (const block of blocks) {
    const rowStart = block * rowBlock;
    const count = Math.min(rowBlock, n - rowStart);
    const a = fillMatrixRows(new Float32Array(count * n), SEED, gpu, product, 'A', n, rowStart, count);
    multiplyInt(a, b, n, new Int32Array(count * n), 0, count);
  }
}

export function measureCheckCost(n: number, reps: number): CheckCost {
  const rowBlock = rowBlockFor(n);
  const blocks = blockCount(n, rowBlock);
  const random = seededRandom(n);
  const requested = chooseReveals(random, { gpus: [0], products: 64, blocks });
  const byProduct = new Map<number, number[]>();
  for (const r of requested) byProduct.set(r.product, [...(byProduct.get(r.product) ?? []), r.block]);
  const digests: string[] = new Array(64).fill('0'.repeat(64));
  const revealed = [];
  for (const [product, bs] of byProduct) {
    const h = honestReveal(n, rowBlock, 0, product, bs, () => random.next());
    digests[product] = h.root;
    revealed.push(...h.blocks);
  }
  const times: number[] = [];
  const direct: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    const checks = checkRevealedBlocks({ seedHex: SEED, n, rowBlock, digests: new Map([[0, digests]]), requested, blocks: revealed, random });
    times.push(performance.now() - t0);
    if (!checks.every((c) => c.ok)) throw new Error(`bench bug: an honest block failed at n = ${n}: ${checks.find((c) => !c.ok)?.reason}`);
    const t1 = performance.now();
    for (const [product, bs] of byProduct) directCheck(n, rowBlock, 0, product, bs);
    direct.push(performance.now() - t1);
  }
  const checkMs = median(times);
  return { n, rowBlock, blocks: requested.length, checkMs, directMs: median(direct), nsPerEntry: (checkMs / (n * n)) * 1e6 };
}
