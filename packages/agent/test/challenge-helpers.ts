/** A challenge as the coordinator would run it, with core's real checks (issue 12): reveal choice, Merkle, Freivalds, verdict. */
import { challengeSizing, challengeVerdict, checkRevealedBlocks, chooseReveals, seededRandom } from '@gpux/core';
import type { ChallengeAssignment, ChallengeDigestsRequest, ChallengeRevealRequest, ChallengeVerdict, RevealItem } from '@gpux/protocol';

export function assignment(over: Partial<ChallengeAssignment> = {}): ChallengeAssignment {
  return { id: 'ch-1', seed: '5e'.repeat(32), n: 32, products: 3, rowBlock: 4, gpuIndices: [], issuedAt: Date.now(), deadlineAt: Date.now() + 60_000, ...over };
}

/** Holds one challenge; answers digests with a reveal list and a reveal with the verdict, checking everything. */
export class CheckingCoordinator {
  digests: ChallengeDigestsRequest | null = null;
  reveal: RevealItem[] = [];
  verdict: ChallengeVerdict | null = null;
  private readonly random = seededRandom(99);
  private readonly deliveredAt = Date.now();

  constructor(
    readonly a: ChallengeAssignment,
    private readonly classKey = 'cpu',
  ) {}

  async challengeDigests(id: string, body: ChallengeDigestsRequest) {
    if (id !== this.a.id) throw new Error(`unknown challenge ${id}`);
    this.digests = body;
    const blocks = Math.ceil(this.a.n / this.a.rowBlock);
    this.reveal = chooseReveals(this.random, { gpus: body.gpus.map((g) => g.index), products: this.a.products, blocks });
    return { reveal: this.reveal };
  }

  async challengeReveal(id: string, body: ChallengeRevealRequest): Promise<ChallengeVerdict> {
    if (id !== this.a.id || !this.digests) throw new Error('reveal before digests');
    const checks = checkRevealedBlocks({
      seedHex: this.a.seed,
      n: this.a.n,
      rowBlock: this.a.rowBlock,
      digests: new Map(this.digests.gpus.map((g) => [g.index, g.digests])),
      requested: this.reveal,
      blocks: body.blocks,
      random: this.random,
    });
    const sizing = { ...challengeSizing([], { n: this.a.n }), classKey: this.classKey, products: this.a.products, deadlineMs: this.a.deadlineAt - this.a.issuedAt };
    const v = challengeVerdict({ sizing, elapsedMs: Date.now() - this.deliveredAt, gpus: this.digests.gpus.map((g) => ({ index: g.index, classKey: this.classKey, computeMs: g.computeMs })), checks });
    this.verdict = { outcome: v.outcome, reason: v.reason, provenClass: v.provenClass, score: v.score };
    return this.verdict;
  }
}
