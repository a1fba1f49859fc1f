/**
 * The proof-of-hardware challenge on the wire (issue 12, TRUST.md "the node proved a GPU of class X at
 * challenge time (timed, checked computation)"). Three steps, all signed node requests:
 *
 * 1. The coordinator hands the node a challenge in its heartbeat response (`challenge`): a seed, the matrix
 *    size n, how many products each GPU computes, the GPUs it covers (all the node's GPUs, and every node of
 *    the provider is challenged at the same time) and a deadline.
 * 2. The node generates the matrices from the seed (core challenge/matrices.ts: small integers, so float32
 *    products are exact on any device), computes every product, and posts one digest per product (a Merkle
 *    root over row blocks) with its timings: POST /v1/agent/challenges/:id/digests. Only then does the
 *    response name a few (product, row block) pairs to reveal.
 * 3. The node posts those row blocks in full: POST /v1/agent/challenges/:id/reveal. The coordinator checks each
 *    against its digest (the Merkle path) and with Freivalds' algorithm (k rounds, error ≤ 2^-k, O(n²) each),
 *    and the time against the claimed class's table. The response is the verdict.
 */
import { z } from 'zod';
import { Seal } from './coordinator-identity.js';

export const MAX_CHALLENGE_GPUS = 64;
export const MAX_CHALLENGE_PRODUCTS = 4096;
export const MAX_REVEALS = 64;

const Hex32 = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex characters (32 bytes)');

export const ChallengeAssignment = z.object({
  id: z.string(),
  seed: Hex32.describe('The coordinator CSPRNG seed every matrix derives from'),
  n: z.number().int().min(8).max(65_536).describe('Matrix size: every product is an n × n times n × n'),
  products: z.number().int().min(1).max(MAX_CHALLENGE_PRODUCTS).describe('Products each GPU computes and keeps resident'),
  rowBlock: z.number().int().min(1).describe('Rows per block: the Merkle leaves of a product digest, and the unit of a reveal'),
  gpuIndices: z.array(z.number().int().min(0)).max(MAX_CHALLENGE_GPUS).describe('Every GPU the node advertises (empty: a CPU-only node proves its CPU)'),
  issuedAt: z.number().int(),
  deadlineAt: z.number().int().describe('Digests after this instant fail the challenge'),
  seal: Seal.optional().describe('The coordinator signature (kind challenge) over this assignment without the seal; sealed until deadlineAt'),
});
export type ChallengeAssignment = z.infer<typeof ChallengeAssignment>;

export const ChallengeGpuDigests = z.object({
  index: z.number().int().min(0).describe('GPU index (-1 is not used: a CPU-only node reports index 0)'),
  digests: z.array(Hex32).min(1).max(MAX_CHALLENGE_PRODUCTS).describe('Per product, the Merkle root (sha256) over its row blocks'),
  computeMs: z.number().min(0).max(86_400_000).describe('Time from first generation to the last product on the device'),
  totalMs: z.number().min(0).max(86_400_000).describe('Time from receiving the challenge to the digests being ready'),
});
export const ChallengeDigestsRequest = z
  .object({
    runner: z.string().min(1).max(64).describe('Which runner computed it: cpu, nvidia-torch, …'),
    gpus: z.array(ChallengeGpuDigests).min(1).max(MAX_CHALLENGE_GPUS),
  })
  .strict();
export type ChallengeDigestsRequest = z.infer<typeof ChallengeDigestsRequest>;

export const RevealItem = z.object({ gpu: z.number().int().min(0), product: z.number().int().min(0), block: z.number().int().min(0) });
export type RevealItem = z.infer<typeof RevealItem>;
export const ChallengeDigestsResponse = z.object({ reveal: z.array(RevealItem).max(MAX_REVEALS).describe('Row blocks to send in full, chosen after the digests arrived') });
export type ChallengeDigestsResponse = z.infer<typeof ChallengeDigestsResponse>;

export const RevealedBlock = RevealItem.extend({
  data: z.string().describe('The block: rowBlock × n int32 little-endian, base64'),
  proof: z.array(Hex32).max(32).describe('Merkle path from the block leaf to the product digest, leaf level first'),
});
export const ChallengeRevealRequest = z.object({ blocks: z.array(RevealedBlock).min(1).max(MAX_REVEALS) }).strict();
export type ChallengeRevealRequest = z.infer<typeof ChallengeRevealRequest>;

export const ChallengeOutcome = z.enum(['pending', 'passed', 'failed', 'expired']);
export type ChallengeOutcome = z.infer<typeof ChallengeOutcome>;

export const ChallengeVerdict = z.object({
  outcome: ChallengeOutcome,
  reason: z.string().nullable().describe('Why it failed, in words (wrong product, too slow for the class, timed out, …)'),
  provenClass: z.string().nullable().describe('The GPU class proven (e.g. nvidia-h100-80gb), null unless passed'),
  score: z.number().nullable().describe('Measured speed relative to the class table (1 = as the table expects)'),
});
export type ChallengeVerdict = z.infer<typeof ChallengeVerdict>;

/** What the API shows of a node's proof (NodeView.proof). */
export const NodeProofView = z.object({
  state: z.enum(['unproven', 'challenging', 'proven', 'failed', 'skipped']).describe('skipped: a private cluster (GPUX_MARKET=off) that does not require the challenge'),
  provenClass: z.string().nullable(),
  score: z.number().nullable(),
  provenAt: z.number().int().nullable(),
  reason: z.string().nullable().describe('Why dispatch is blocked (failed or timed-out challenge), or null'),
  nextCheckAt: z.number().int().nullable().describe('When the next random re-check is due at the latest'),
});
export type NodeProofView = z.infer<typeof NodeProofView>;
