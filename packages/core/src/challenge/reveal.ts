/**
 * Which row blocks to ask for, chosen with the coordinator's Random only after the digests are committed
 * (issue 12). Per GPU a few distinct products, and a few distinct blocks in each: a node that computed a
 * fraction f of the products (or of the rows) passes with probability about f^(products asked) (f^(blocks)).
 */
import type { Random } from '../ports.js';

export interface RevealChoice {
  gpu: number;
  product: number;
  block: number;
}

export interface RevealPlan {
  /** GPU indices that posted digests (a CPU-only node: [0]). */
  gpus: readonly number[];
  products: number;
  blocks: number;
  productsPerGpu?: number;
  blocksPerProduct?: number;
  /** Never ask for more in total (the wire's MAX_REVEALS). */
  maxTotal?: number;
}

export const DEFAULT_PRODUCTS_PER_GPU = 2;
export const DEFAULT_BLOCKS_PER_PRODUCT = 2;

/** k distinct integers of [0, range), uniform (partial Fisher–Yates over a sparse map: O(k), any range). */
export function sampleDistinct(random: Random, range: number, k: number): number[] {
  const take = Math.min(k, range);
  const swapped = new Map<number, number>();
  const out: number[] = [];
  for (let i = 0; i < take; i++) {
    const j = i + Math.floor(random.next() * (range - i));
    const vj = swapped.get(j) ?? j;
    swapped.set(j, swapped.get(i) ?? i);
    out.push(vj);
  }
  return out;
}

/** The reveal list: per GPU, productsPerGpu × blocksPerProduct, shrunk evenly when the total would pass maxTotal. */
export function chooseReveals(random: Random, plan: RevealPlan): RevealChoice[] {
  const maxTotal = plan.maxTotal ?? 64;
  let perProduct = Math.min(plan.blocksPerProduct ?? DEFAULT_BLOCKS_PER_PRODUCT, plan.blocks);
  let perGpu = Math.min(plan.productsPerGpu ?? DEFAULT_PRODUCTS_PER_GPU, plan.products);
  // Shrink blocks first: products asked catch skipped products, and a block costs little beside its product's B pass.
  while (plan.gpus.length * perGpu * perProduct > maxTotal && perProduct > 1) perProduct--;
  while (plan.gpus.length * perGpu * perProduct > maxTotal && perGpu > 1) perGpu--;
  const out: RevealChoice[] = [];
  for (const gpu of plan.gpus) {
    if (out.length + perProduct > maxTotal) break;
    for (const product of sampleDistinct(random, plan.products, perGpu).sort((a, b) => a - b)) {
      for (const block of sampleDistinct(random, plan.blocks, perProduct).sort((a, b) => a - b)) out.push({ gpu, product, block });
    }
  }
  return out;
}
