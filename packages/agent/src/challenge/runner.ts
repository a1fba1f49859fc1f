/**
 * Challenge runners (issue 12): plug-ins that compute a proof-of-hardware challenge. A run generates every
 * GPU's matrices from the seed, computes and keeps the products, and hands back one digest per product with
 * the timings; the coordinator then names row blocks, which the same run reveals with their Merkle paths.
 * Runners: `cpu` (TypeScript in a worker thread: CI and CPU-only nodes) and `nvidia-torch` (PyTorch on the
 * node's NVIDIA GPUs, on the host's python3 or in a container).
 */
import type { ChallengeAssignment, ChallengeGpuDigests as GpuDigestsSchema, RevealedBlock as RevealedBlockSchema, RevealItem } from '@gpux/protocol';
import type { z } from 'zod';

/** One GPU's digests and timings, and one revealed block, as the wire carries them. */
export type ChallengeGpuDigests = z.infer<typeof GpuDigestsSchema>;
export type RevealedBlock = z.infer<typeof RevealedBlockSchema>;

export type ChallengeRunnerKind = 'cpu' | 'nvidia-torch';

export interface ChallengeRun {
  /** Which runner computed it (the digests request's `runner`). */
  readonly runner: string;
  /** Per GPU (a CPU-only node: index 0), the digests and timings. */
  readonly gpus: ChallengeGpuDigests[];
  /** The asked row blocks in full (int32 LE, base64) with their Merkle paths, from the kept products. */
  reveal(items: readonly RevealItem[]): Promise<RevealedBlock[]>;
  /** Frees the products (worker, process, GPU memory). Idempotent. */
  dispose(): Promise<void>;
}

export interface ChallengeRunner {
  readonly kind: ChallengeRunnerKind;
  /** Computes the challenge; `signal` aborts it (deadline passed, agent stopping) and frees everything. */
  run(assignment: ChallengeAssignment, signal: AbortSignal): Promise<ChallengeRun>;
}

/** The GPU indices a run covers: a CPU-only node proves its CPU as index 0. */
export function challengeGpus(a: ChallengeAssignment): number[] {
  return a.gpuIndices.length > 0 ? [...a.gpuIndices] : [0];
}
