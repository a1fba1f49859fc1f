/**
 * Products and their digests (issue 12). A product's digest is a Merkle root (sha256) over its row blocks:
 * leaf b = sha256(0x00 ‖ rows [b·rowBlock, (b+1)·rowBlock) as int32 little-endian), inner node =
 * sha256(0x01 ‖ left ‖ right); the prefixes keep a leaf from ever passing for an inner node. A level with an
 * odd count carries its last node up unchanged, so the tree's shape follows from the leaf count alone and a
 * proof is exactly the siblings that exist, leaf level first.
 */
import { sha256Hex } from '@gpux/protocol';

/** Row blocks of an n-row product (the last may be short when rowBlock does not divide n). */
export function blockCount(n: number, rowBlock: number): number {
  return Math.ceil(n / rowBlock);
}

/** Rows of block b: [rowStart, rowStart + rows). */
export function blockRows(n: number, rowBlock: number, block: number): { rowStart: number; rows: number } {
  const rowStart = block * rowBlock;
  if (!Number.isInteger(block) || block < 0 || rowStart >= n) throw new Error(`block ${block} outside an n = ${n}, rowBlock = ${rowBlock} product`);
  return { rowStart, rows: Math.min(rowBlock, n - rowStart) };
}

/**
 * C = A · B for n × n int-valued float32 matrices, into an Int32Array (exact: every partial sum is an integer
 * below 2^24 in magnitude, and the sums here run in doubles anyway). i-k-j order with a double row accumulator,
 * skipping zero entries of A (1 in 7): the CPU runner's kernel, fast enough for n ≤ 512 in well under a second.
 */
export function multiplyInt(a: ArrayLike<number>, b: ArrayLike<number>, n: number, out = new Int32Array(n * n), rowStart = 0, rowCount = n): Int32Array {
  const acc = new Float64Array(n);
  for (let i = 0; i < rowCount; i++) {
    acc.fill(0);
    const aRow = (rowStart + i) * n;
    for (let k = 0; k < n; k++) {
      const x = a[aRow + k]!;
      if (x === 0) continue;
      const bRow = k * n;
      for (let j = 0; j < n; j++) acc[j]! += x * b[bRow + j]!;
    }
    const cRow = i * n;
    for (let j = 0; j < n; j++) out[cRow + j] = acc[j]!;
  }
  return out;
}

function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** Little-endian bytes of an int32 view (copies on a big-endian host, where none is expected). */
function int32LeBytes(rows: Int32Array): Uint8Array {
  const bytes = new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength);
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] === 1) return bytes;
  const copy = new Uint8Array(rows.byteLength);
  const view = new DataView(copy.buffer);
  for (let i = 0; i < rows.length; i++) view.setInt32(i * 4, rows[i]!, true);
  return copy;
}

/** Leaf hash of one row block (rows × n int32 values). */
export function leafHash(block: Int32Array): string {
  const bytes = int32LeBytes(block);
  const msg = new Uint8Array(bytes.length + 1);
  msg[0] = 0;
  msg.set(bytes, 1);
  return sha256Hex(msg);
}

/** Inner node hash. */
export function nodeHash(left: string, right: string): string {
  const msg = new Uint8Array(65);
  msg[0] = 1;
  msg.set(hexToBytes(left), 1);
  msg.set(hexToBytes(right), 33);
  return sha256Hex(msg);
}

/** Leaf hashes of a product's row blocks. */
export function blockLeaves(product: Int32Array, n: number, rowBlock: number): string[] {
  const leaves: string[] = [];
  for (let b = 0; b < blockCount(n, rowBlock); b++) {
    const { rowStart, rows } = blockRows(n, rowBlock, b);
    leaves.push(leafHash(product.subarray(rowStart * n, (rowStart + rows) * n)));
  }
  return leaves;
}

/** Every level of the tree, leaves first, root last (what a runner keeps to answer reveals). */
export function merkleLayers(leaves: readonly string[]): string[][] {
  if (leaves.length === 0) throw new Error('a Merkle tree needs at least one leaf');
  const layers: string[][] = [[...leaves]];
  let level = layers[0]!;
  while (level.length > 1) {
    const up: string[] = [];
    for (let i = 0; i < level.length; i += 2) up.push(i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!);
    layers.push(up);
    level = up;
  }
  return layers;
}

export function merkleRoot(layers: readonly string[][]): string {
  return layers[layers.length - 1]![0]!;
}

/** The digest of a whole product. */
export function productDigest(product: Int32Array, n: number, rowBlock: number): string {
  return merkleRoot(merkleLayers(blockLeaves(product, n, rowBlock)));
}

/** Siblings from leaf `index` to the root, leaf level first (levels where the node has no sibling add none). */
export function merklePath(layers: readonly string[][], index: number): string[] {
  const path: string[] = [];
  let i = index;
  for (let l = 0; l < layers.length - 1; l++) {
    const level = layers[l]!;
    const sibling = i ^ 1;
    if (sibling < level.length) path.push(level[sibling]!);
    i >>= 1;
  }
  return path;
}

/**
 * Does `leaf` at `index` of a tree of `leafCount` leaves lead to `root` through `path`? The shape follows from
 * leafCount, so a path of the wrong length, or a leaf index outside the tree, is refused rather than guessed.
 */
export function verifyMerklePath(leaf: string, index: number, leafCount: number, path: readonly string[], root: string): boolean {
  if (!Number.isInteger(index) || index < 0 || index >= leafCount) return false;
  let h = leaf;
  let i = index;
  let width = leafCount;
  let used = 0;
  while (width > 1) {
    const sibling = i ^ 1;
    if (sibling < width) {
      const s = path[used++];
      if (s === undefined) return false;
      h = i % 2 === 0 ? nodeHash(h, s) : nodeHash(s, h);
    }
    i >>= 1;
    width = Math.ceil(width / 2);
  }
  return used === path.length && h === root;
}
