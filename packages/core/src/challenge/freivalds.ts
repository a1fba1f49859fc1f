/**
 * Freivalds' check of a revealed row block (issue 12): C_block · x == A_rows · (B · x) for k random integer
 * vectors x, O(n²) per round instead of the O(n³) product.
 *
 * Exactness in doubles: entries of A and B are in [-3, 3]; a revealed entry above 9n in magnitude cannot be a
 * product entry and fails before any sum (checkMagnitude). With x uniform in [0, 2^16) and n ≤ 2^16 every
 * partial sum is an integer below 9n² · 2^16 ≤ 9 · 2^48 < 2^53, so doubles hold it exactly: no rounding can
 * hide a wrong entry or flag a right one.
 *
 * Error: if a revealed row differs from the true row by d ≠ 0, d · x = 0 for at most one value of x at one
 * coordinate where d is nonzero, given the rest (Schwartz–Zippel), so a round misses with probability ≤ 2^-16
 * and k independent rounds with ≤ 2^-16k — stronger than the 2^-k the issue asks for.
 */
import type { Random } from '../ports.js';
import { ENTRY_MAX, fillKeyed, fillMatrixRows, matrixKey } from './matrices.js';

/** x entries are uniform integers in [0, X_RANGE). */
export const FREIVALDS_X_RANGE = 2 ** 16;
/** Rounds per block by default: a wrong block passes with probability ≤ 2^-32. */
export const DEFAULT_FREIVALDS_ROUNDS = 2;

/** The largest |C[r][c]| an honest product can hold. */
export function productEntryBound(n: number): number {
  return ENTRY_MAX * ENTRY_MAX * n;
}

/** k random vectors of length n (the coordinator's CSPRNG, drawn after the digests are committed). */
export function freivaldsVectors(random: Random, n: number, rounds: number): Float64Array[] {
  return Array.from({ length: rounds }, () => {
    const x = new Float64Array(n);
    for (let i = 0; i < n; i++) x[i] = Math.floor(random.next() * FREIVALDS_X_RANGE);
    return x;
  });
}

/** B · x for every x, regenerating B row by row (never held whole): one O(n²) pass shared by all rounds and blocks of a product. */
export function bTimesVectors(seedHex: string, gpu: number, product: number, n: number, xs: readonly Float64Array[]): Float64Array[] {
  const ys = xs.map(() => new Float64Array(n));
  const row = new Int32Array(n);
  const [k1, k2] = matrixKey(seedHex, gpu, product, 'B');
  for (let r = 0; r < n; r++) {
    fillKeyed(row, k1, k2, r * n, n);
    for (let j = 0; j < xs.length; j++) {
      const x = xs[j]!;
      let s = 0;
      for (let c = 0; c < n; c++) s += row[c]! * x[c]!;
      ys[j]![r] = s;
    }
  }
  return ys;
}

/** Is every entry a possible product entry? (Keeps the sums below 2^53; see the header.) */
export function checkMagnitude(block: Int32Array, n: number): boolean {
  const bound = productEntryBound(n);
  for (let i = 0; i < block.length; i++) if (block[i]! > bound || block[i]! < -bound) return false;
  return true;
}

export interface FreivaldsBlockInput {
  seedHex: string;
  gpu: number;
  product: number;
  n: number;
  rowStart: number;
  rows: number;
  /** rows × n revealed entries. */
  block: Int32Array;
  xs: readonly Float64Array[];
  /** bTimesVectors(…, xs) for this product. */
  bx: readonly Float64Array[];
}

/** Does C_block · x == A_rows · (B · x) for every x? False at the first mismatching row. */
export function freivaldsBlock(input: FreivaldsBlockInput): boolean {
  const { n, rows, block, xs, bx } = input;
  if (block.length !== rows * n || !checkMagnitude(block, n)) return false;
  const a = fillMatrixRows(new Int32Array(rows * n), input.seedHex, input.gpu, input.product, 'A', n, input.rowStart, rows);
  for (let j = 0; j < xs.length; j++) {
    const x = xs[j]!;
    const y = bx[j]!;
    for (let i = 0; i < rows; i++) {
      const off = i * n;
      let lhs = 0;
      let rhs = 0;
      for (let c = 0; c < n; c++) {
        lhs += block[off + c]! * x[c]!;
        rhs += a[off + c]! * y[c]!;
      }
      if (lhs !== rhs) return false;
    }
  }
  return true;
}
