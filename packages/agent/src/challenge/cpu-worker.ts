/**
 * The cpu runner's worker thread: generates, multiplies and digests every product with core's own functions
 * (so the agent's heartbeats keep going), keeps the products and Merkle layers, and answers reveals.
 * Messages in: {type:'run', assignment} then {type:'reveal', items}; out: {type:'digests', gpus} /
 * {type:'blocks', blocks} / {type:'error', message}.
 */
import { parentPort } from 'node:worker_threads';
import { blockLeaves, blockRows, encodeBlock, generateMatrix, merkleLayers, merklePath, merkleRoot, multiplyInt } from '@gpux/core';
import type { ChallengeAssignment, RevealItem } from '@gpux/protocol';
import type { ChallengeGpuDigests, RevealedBlock } from './runner.js';

type In = { type: 'run'; assignment: ChallengeAssignment; receivedAt: number } | { type: 'reveal'; items: RevealItem[] };

/** Products kept whole up to this many bytes; beyond it only the Merkle layers, and revealed rows are recomputed. */
const KEEP_BYTES = 256 * 2 ** 20;

let assignment: ChallengeAssignment | null = null;
const kept = new Map<string, { product: Int32Array | null; layers: string[][] }>();

function run(a: ChallengeAssignment, receivedAt: number): ChallengeGpuDigests[] {
  assignment = a;
  const gpus = a.gpuIndices.length > 0 ? a.gpuIndices : [0];
  const keep = gpus.length * a.products * a.n * a.n * 4 <= KEEP_BYTES;
  const out: ChallengeGpuDigests[] = [];
  // One CPU does every claimed GPU's work in turn: honest timings, so a CPU behind many GPU claims is slow.
  for (const gpu of gpus) {
    const began = performance.now();
    const products: Int32Array[] = [];
    for (let p = 0; p < a.products; p++) {
      const c = multiplyInt(generateMatrix(a.seed, gpu, p, 'A', a.n), generateMatrix(a.seed, gpu, p, 'B', a.n), a.n);
      if (keep) products.push(c);
      else digestInto(gpu, p, c, false); // too big to keep: digest now (the hashing then counts as compute)
    }
    const computeMs = performance.now() - began;
    for (const [p, c] of products.entries()) digestInto(gpu, p, c, true);
    const digests = Array.from({ length: a.products }, (_, p) => merkleRoot(kept.get(`${gpu}/${p}`)!.layers));
    out.push({ index: gpu, digests, computeMs, totalMs: 0 });
  }
  const totalMs = Date.now() - receivedAt;
  return out.map((g) => ({ ...g, totalMs }));
}

function digestInto(gpu: number, p: number, c: Int32Array, keepProduct: boolean): void {
  const a = assignment!;
  kept.set(`${gpu}/${p}`, { product: keepProduct ? c : null, layers: merkleLayers(blockLeaves(c, a.n, a.rowBlock)) });
}

function reveal(items: RevealItem[]): RevealedBlock[] {
  const a = assignment;
  if (!a) throw new Error('reveal before run');
  return items.map((it) => {
    const k = kept.get(`${it.gpu}/${it.product}`);
    if (!k) throw new Error(`no product ${it.product} of GPU ${it.gpu} was computed`);
    const { rowStart, rows } = blockRows(a.n, a.rowBlock, it.block);
    const block = k.product
      ? k.product.subarray(rowStart * a.n, (rowStart + rows) * a.n)
      : multiplyInt(generateMatrix(a.seed, it.gpu, it.product, 'A', a.n), generateMatrix(a.seed, it.gpu, it.product, 'B', a.n), a.n, new Int32Array(rows * a.n), rowStart, rows);
    return { ...it, data: encodeBlock(block), proof: merklePath(k.layers, it.block) };
  });
}

parentPort!.on('message', (m: In) => {
  try {
    if (m.type === 'run') parentPort!.postMessage({ type: 'digests', gpus: run(m.assignment, m.receivedAt) });
    else parentPort!.postMessage({ type: 'blocks', blocks: reveal(m.items) });
  } catch (e) {
    parentPort!.postMessage({ type: 'error', message: (e as Error).message });
  }
});
