/**
 * Wrong-product and fake-reveal cheats, run through core's real functions (generator, products, Merkle,
 * reveal choice, checkRevealedBlocks) on small challenges (n = 32, 8 products, 16 blocks a product): what is
 * measured is the catch probability of one challenge, which depends on the reveal counts, not on n.
 */
import { blockLeaves, checkRevealedBlocks, chooseReveals, encodeBlock, generateMatrix, merkleLayers, merklePath, merkleRoot, multiplyInt, productEntryBound, type Random } from '@gpux/core';

const N = 32;
const PRODUCTS = 8;
const ROW_BLOCK = 2;
const BLOCKS = N / ROW_BLOCK;

export type ProductCheat = 'honest' | 'all-garbage' | 'half-products-garbage' | 'one-block-wrong-per-product' | 'honest-digests-fake-reveals' | 'garbage-digests-honest-rows-on-request';

function seedHex(random: Random): string {
  return Array.from(random.bytes(32), (b) => b.toString(16).padStart(2, '0')).join('');
}

function garbage(random: Random): Int32Array {
  const bound = productEntryBound(N);
  return Int32Array.from({ length: N * N }, () => Math.floor((random.next() * 2 - 1) * bound));
}

/** One challenge of one GPU under a cheat: true when core's checks catch it. */
export function runProductCheat(cheat: ProductCheat, random: Random): boolean {
  const seed = seedHex(random);
  const honest = Array.from({ length: PRODUCTS }, (_, p) => multiplyInt(generateMatrix(seed, 0, p, 'A', N), generateMatrix(seed, 0, p, 'B', N), N));
  // What the node commits to (digests) and what it reveals from.
  let committed = honest;
  if (cheat === 'all-garbage' || cheat === 'garbage-digests-honest-rows-on-request') committed = honest.map(() => garbage(random));
  if (cheat === 'half-products-garbage') committed = honest.map((c, p) => (p % 2 === 0 ? c : garbage(random)));
  if (cheat === 'one-block-wrong-per-product')
    committed = honest.map((c) => {
      const w = Int32Array.from(c);
      const block = Math.floor(random.next() * BLOCKS);
      w[block * ROW_BLOCK * N + Math.floor(random.next() * ROW_BLOCK * N)]! += 1;
      return w;
    });
  const layers = committed.map((c) => merkleLayers(blockLeaves(c, N, ROW_BLOCK)));
  const requested = chooseReveals(random, { gpus: [0], products: PRODUCTS, blocks: BLOCKS });
  const blocks = requested.map((r) => {
    const rows = (c: Int32Array) => c.subarray(r.block * ROW_BLOCK * N, (r.block + 1) * ROW_BLOCK * N);
    let data = rows(committed[r.product]!);
    if (cheat === 'honest-digests-fake-reveals') data = rows(garbage(random));
    if (cheat === 'garbage-digests-honest-rows-on-request') data = rows(honest[r.product]!);
    return { ...r, data: encodeBlock(data), proof: merklePath(layers[r.product]!, r.block) };
  });
  const checks = checkRevealedBlocks({ seedHex: seed, n: N, rowBlock: ROW_BLOCK, digests: new Map([[0, layers.map(merkleRoot)]]), requested, blocks, random });
  return checks.some((c) => !c.ok);
}

/** The analytic catch rate of a cheat given the reveal counts (2 of 8 products, 2 of 16 blocks each). */
export function expectedCatch(cheat: ProductCheat): number {
  if (cheat === 'honest') return 0;
  if (cheat === 'half-products-garbage') return 1 - (4 / 8) * (3 / 7);
  if (cheat === 'one-block-wrong-per-product') return 1 - ((BLOCKS - 2) / BLOCKS) ** 2;
  return 1;
}
