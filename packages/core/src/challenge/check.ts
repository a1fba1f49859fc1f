/**
 * Checking a reveal (issue 12): each revealed block must be the size asked, hold only possible product
 * entries, hash to a leaf that the Merkle path ties to the committed digest, and pass Freivalds. Blocks of
 * one product share one O(n²) pass over B. Every byte here came from the node: decode defensively.
 */
import type { Random } from '../ports.js';
import { bTimesVectors, DEFAULT_FREIVALDS_ROUNDS, freivaldsBlock, freivaldsVectors } from './freivalds.js';
import { blockCount, blockRows, leafHash, verifyMerklePath } from './product.js';
import type { RevealChoice } from './reveal.js';

export interface RevealedBlockInput extends RevealChoice {
  /** rows × n int32 little-endian: base64 as on the wire, or already decoded. */
  data: string | Int32Array;
  proof: readonly string[];
}

export interface BlockCheck extends RevealChoice {
  ok: boolean;
  /** Why it failed, in words; null when ok. */
  reason: string | null;
}

export interface CheckRevealInput {
  seedHex: string;
  n: number;
  rowBlock: number;
  /** Committed digests: gpu index → one root per product. */
  digests: ReadonlyMap<number, readonly string[]>;
  /** What the coordinator asked for; blocks not asked for are ignored, asked ones missing fail. */
  requested: readonly RevealChoice[];
  blocks: readonly RevealedBlockInput[];
  random: Random;
  rounds?: number;
}

/** base64 → Int32Array of exactly `entries` int32 LE values, or null when the length is wrong. */
export function decodeBlock(data: string | Int32Array, entries: number): Int32Array | null {
  if (typeof data !== 'string') return data.length === entries ? data : null;
  if (data.length > 4 * Math.ceil((entries * 4) / 3)) return null; // bound before decoding
  const bytes = Buffer.from(data, 'base64');
  if (bytes.length !== entries * 4) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Int32Array(entries);
  for (let i = 0; i < entries; i++) out[i] = view.getInt32(i * 4, true);
  return out;
}

/** base64 of a block as the wire carries it (int32 LE). */
export function encodeBlock(block: Int32Array): string {
  const view = new DataView(new ArrayBuffer(block.length * 4));
  for (let i = 0; i < block.length; i++) view.setInt32(i * 4, block[i]!, true);
  return Buffer.from(view.buffer).toString('base64');
}

const key = (r: RevealChoice) => `${r.gpu}/${r.product}/${r.block}`;

/** One result per requested block, in request order. */
export function checkRevealedBlocks(input: CheckRevealInput): BlockCheck[] {
  const { seedHex, n, rowBlock } = input;
  const leaves = blockCount(n, rowBlock);
  const given = new Map<string, RevealedBlockInput>();
  for (const b of input.blocks) if (!given.has(key(b))) given.set(key(b), b);
  const fail = (r: RevealChoice, reason: string): BlockCheck => ({ gpu: r.gpu, product: r.product, block: r.block, ok: false, reason });

  // Structure and Merkle first (cheap); Freivalds only for blocks that got that far, grouped by product.
  const results = new Map<string, BlockCheck>();
  const pending = new Map<string, Array<{ req: RevealChoice; block: Int32Array; rowStart: number; rows: number }>>();
  for (const req of input.requested) {
    const b = given.get(key(req));
    if (!b) {
      results.set(key(req), fail(req, 'the block was asked for and not revealed'));
      continue;
    }
    const root = input.digests.get(req.gpu)?.[req.product];
    if (root === undefined) {
      results.set(key(req), fail(req, 'no digest was committed for this product'));
      continue;
    }
    const { rowStart, rows } = blockRows(n, rowBlock, req.block);
    const block = decodeBlock(b.data, rows * n);
    if (!block) {
      results.set(key(req), fail(req, `the block must be ${rows} × ${n} int32 values`));
      continue;
    }
    if (!verifyMerklePath(leafHash(block), req.block, leaves, b.proof, root)) {
      results.set(key(req), fail(req, 'the block does not match the committed digest (Merkle path)'));
      continue;
    }
    const pk = `${req.gpu}/${req.product}`;
    pending.set(pk, [...(pending.get(pk) ?? []), { req, block, rowStart, rows }]);
  }
  for (const group of pending.values()) {
    const { gpu, product } = group[0]!.req;
    const xs = freivaldsVectors(input.random, n, input.rounds ?? DEFAULT_FREIVALDS_ROUNDS);
    const bx = bTimesVectors(seedHex, gpu, product, n, xs);
    for (const g of group) {
      const ok = freivaldsBlock({ seedHex, gpu, product, n, rowStart: g.rowStart, rows: g.rows, block: g.block, xs, bx });
      results.set(key(g.req), ok ? { ...g.req, ok, reason: null } : fail(g.req, 'wrong product: the block fails Freivalds check'));
    }
  }
  return input.requested.map((r) => results.get(key(r))!);
}
