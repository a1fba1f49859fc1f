/**
 * A TestAgent's side of the proof-of-hardware challenge, computed with core's own functions (generator,
 * CPU matmul, Merkle): honest, or with one of the cheats the tests play (wrong products, fake reveals).
 * Times reported are what the computation really took (or what an emulated device took: see Device).
 */
import {
  blockLeaves,
  blockRows,
  encodeBlock,
  generateMatrix,
  merkleLayers,
  merklePath,
  merkleRoot,
  multiplyInt,
} from '@gpux/core';
import type { ChallengeAssignment, ChallengeDigestsRequest, RevealItem } from '@gpux/protocol';
import type { Res, TestAgent } from './helpers.js';

export type Cheat = 'none' | 'wrong-products' | 'fake-reveals';

export interface Solved {
  body: ChallengeDigestsRequest;
  products: Map<string, { c: Int32Array; layers: string[][] }>;
}

/**
 * A compute device several identities may share: run() takes at least `minMs` per challenge (a device of
 * that speed), one challenge at a time. Without it each agent computes on its own and reports what it took.
 */
export class Device {
  private queue: Promise<unknown> = Promise.resolve();
  constructor(readonly minMs: number) {}
  run<T>(fn: () => T): Promise<{ value: T; ms: number }> {
    const next = this.queue.then(async () => {
      const t0 = performance.now();
      const value = fn();
      const left = this.minMs - (performance.now() - t0);
      if (left > 0) await new Promise((r) => setTimeout(r, left));
      return { value, ms: performance.now() - t0 };
    });
    this.queue = next.catch(() => undefined);
    return next;
  }
}

/** Compute every product of the assignment (GPU indices, or [0] for a CPU-only node) and its digest. */
export function solve(a: ChallengeAssignment, cheat: Cheat = 'none'): Solved {
  const t0 = performance.now();
  const gpus = a.gpuIndices.length > 0 ? a.gpuIndices : [0];
  const products = new Map<string, { c: Int32Array; layers: string[][] }>();
  const out: ChallengeDigestsRequest['gpus'] = [];
  for (const g of gpus) {
    const g0 = performance.now();
    const digests: string[] = [];
    for (let i = 0; i < a.products; i++) {
      const c = multiplyInt(generateMatrix(a.seed, g, i, 'A', a.n), generateMatrix(a.seed, g, i, 'B', a.n), a.n);
      // A wrong product with a consistent digest: one entry off in every row block, so any block asked is wrong.
      if (cheat === 'wrong-products') for (let r = 0; r < a.n; r += a.rowBlock) c[r * a.n] = (c[r * a.n] ?? 0) + 1;
      const layers = merkleLayers(blockLeaves(c, a.n, a.rowBlock));
      products.set(`${g}/${i}`, { c, layers });
      digests.push(merkleRoot(layers));
    }
    out.push({ index: g, digests, computeMs: performance.now() - g0, totalMs: performance.now() - t0 });
  }
  return { body: { runner: 'cpu', gpus: out }, products };
}

/** The blocks asked for, with their Merkle paths; 'fake-reveals' sends other numbers on the honest paths. */
export function revealOf(a: ChallengeAssignment, s: Solved, items: readonly RevealItem[], cheat: Cheat = 'none') {
  return {
    blocks: items.map((it) => {
      const p = s.products.get(`${it.gpu}/${it.product}`);
      if (!p) throw new Error(`no product ${it.gpu}/${it.product}`);
      const { rowStart, rows } = blockRows(a.n, a.rowBlock, it.block);
      const block = p.c.slice(rowStart * a.n, (rowStart + rows) * a.n);
      if (cheat === 'fake-reveals') for (let i = 0; i < block.length; i++) block[i] = (i % 7) - 3;
      return { ...it, data: encodeBlock(block), proof: merklePath(p.layers, it.block) };
    }),
  };
}

/** The challenge the node's heartbeat carries now, if any. */
export async function pendingChallenge(agent: TestAgent): Promise<ChallengeAssignment | undefined> {
  const hb = await agent.heartbeat();
  if (hb.status !== 200) throw new Error(`heartbeat ${hb.status}: ${JSON.stringify(hb.body)}`);
  return hb.body.challenge;
}

export interface Answer {
  digests: Res;
  reveal?: Res;
}

/** Answer a challenge end to end: digests, then the reveal. `device` sets the reported time (shared compute). */
export async function answer(agent: TestAgent, a: ChallengeAssignment, o: { cheat?: Cheat; device?: Device } = {}): Promise<Answer> {
  const cheat = o.cheat ?? 'none';
  let s: Solved;
  if (o.device) {
    const { value, ms } = await o.device.run(() => solve(a, cheat));
    for (const g of value.body.gpus) [g.computeMs, g.totalMs] = [ms, ms];
    s = value;
  } else s = solve(a, cheat);
  const digests = await agent.request('POST', `/v1/agent/challenges/${a.id}/digests`, s.body);
  if (digests.status !== 200) return { digests };
  const reveal = await agent.request('POST', `/v1/agent/challenges/${a.id}/reveal`, revealOf(a, s, digests.body.reveal, cheat));
  return { digests, reveal };
}
