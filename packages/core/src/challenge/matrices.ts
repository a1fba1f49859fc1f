/**
 * The challenge matrices (issue 12). Every entry is a small integer in [-3, 3] derived from the coordinator's
 * seed by a 32-bit hash, so:
 *  - float32 products are exact on any device and in any summation order: |C[r][c]| ≤ 9n < 2^24 for
 *    n ≤ 65,536 (TF32 must still be off on GPUs: the runner computes in plain float32);
 *  - the coordinator regenerates any rows of A and all of B itself, O(n²), to check a revealed block;
 *  - the hash mixes the row and column (no row or column structure, no low rank a cheater could exploit).
 *
 * The hash is multiply/xor-shift mixing with multipliers below 2^31, so the same steps in PyTorch int64
 * (`(x * M) & 0xffffffff`) never overflow: the NVIDIA runner's script (agent challenge/nvidia-torch.py)
 * reproduces it bit for bit, and a test holds the two together.
 */

/** 'A' is the left factor, 'B' the right; product i of GPU g is A(g, i) · B(g, i). */
export type ChallengeFactor = 'A' | 'B';

/** Magnitude bound of a matrix entry. */
export const ENTRY_MAX = 3;

/** Low-bias 32-bit mixer (xor-shift-multiply; multipliers < 2^31 so int64 ports cannot overflow). */
export function mix32(x: number): number {
  let h = x >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x21f0aaad);
  h ^= h >>> 15;
  h = Math.imul(h, 0x735a2d97);
  h ^= h >>> 15;
  return h >>> 0;
}

/** Two 32-bit keys for one matrix: from the seed's eight words, the GPU, the product and the factor. */
export function matrixKey(seedHex: string, gpu: number, product: number, which: ChallengeFactor): [number, number] {
  if (!/^[0-9a-f]{64}$/.test(seedHex)) throw new Error('challenge seed must be 64 lowercase hex characters');
  let k = 0x9e3779b9;
  for (let w = 0; w < 8; w++) k = mix32(k ^ Number.parseInt(seedHex.slice(w * 8, w * 8 + 8), 16));
  k = mix32(k ^ gpu);
  k = mix32(k ^ product);
  k = mix32(k ^ (which === 'A' ? 1 : 2));
  return [k, mix32(k ^ 0x5bd1e995)];
}

/** Entry at flat index `idx` (= r·n + c, < 2^32 since n ≤ 65,536) of the matrix keyed (k1, k2), in [-3, 3]. */
export function entryAt(k1: number, k2: number, idx: number): number {
  const h = mix32((mix32(idx ^ k1) + k2) >>> 0);
  return (h % 7) - ENTRY_MAX;
}

/** Any typed array that takes small integers: Float32Array for the runner, Int8Array/Float64Array for checks. */
export type IntMatrixBuffer = Float32Array | Float64Array | Int32Array | Int16Array | Int8Array;

/**
 * Fill `out` with rows [rowStart, rowStart + rowCount) of the n × n matrix (gpu, product, which), row-major.
 * The coordinator asks for A's rows of a block; the runner asks for all rows.
 */
export function fillMatrixRows(
  out: IntMatrixBuffer,
  seedHex: string,
  gpu: number,
  product: number,
  which: ChallengeFactor,
  n: number,
  rowStart = 0,
  rowCount = n,
): IntMatrixBuffer {
  if (rowStart < 0 || rowCount < 0 || rowStart + rowCount > n) throw new Error(`rows [${rowStart}, ${rowStart + rowCount}) outside an n = ${n} matrix`);
  if (out.length < rowCount * n) throw new Error(`buffer holds ${out.length} entries, ${rowCount * n} needed`);
  const [k1, k2] = matrixKey(seedHex, gpu, product, which);
  if (out instanceof Int32Array) return fillKeyed(out, k1, k2, rowStart * n, rowCount * n);
  // Other element types go through an int32 chunk: one monomorphic hot loop stays fast in V8.
  const chunk = new Int32Array(Math.min(rowCount * n, 1 << 16));
  for (let done = 0; done < rowCount * n; done += chunk.length) {
    const count = Math.min(chunk.length, rowCount * n - done);
    fillKeyed(chunk, k1, k2, rowStart * n + done, count);
    out.set(count === chunk.length ? chunk : chunk.subarray(0, count), done);
  }
  return out;
}

/** `count` entries from flat index idx0 of the matrix keyed (k1, k2): entryAt inlined by hand (4× faster). */
export function fillKeyed(out: Int32Array, k1: number, k2: number, idx0: number, count: number): Int32Array {
  for (let i = 0; i < count; i++) {
    let h = ((idx0 + i) ^ k1) >>> 0;
    h ^= h >>> 16;
    h = Math.imul(h, 0x21f0aaad);
    h ^= h >>> 15;
    h = Math.imul(h, 0x735a2d97);
    h ^= h >>> 15;
    h = (h + k2) | 0;
    h ^= h >>> 16;
    h = Math.imul(h, 0x21f0aaad);
    h ^= h >>> 15;
    h = Math.imul(h, 0x735a2d97);
    h ^= h >>> 15;
    out[i] = ((h >>> 0) % 7) - ENTRY_MAX;
  }
  return out;
}

/** The whole n × n matrix as float32 (what a runner multiplies). */
export function generateMatrix(seedHex: string, gpu: number, product: number, which: ChallengeFactor, n: number): Float32Array {
  return fillMatrixRows(new Float32Array(n * n), seedHex, gpu, product, which, n) as Float32Array;
}
