/**
 * The verdict of a challenge (issue 12): wrong products fail first (the strongest finding), then the
 * coordinator's own clock (the deadline), then each GPU's reported compute time against its class row.
 * Reported times come from the node and are hostile: they can fail a node but never make it pass the
 * deadline, and the score uses the larger of the reported time and what the coordinator's clock allows.
 */
import type { BlockCheck } from './check.js';
import { type ChallengeSizing, computeLimitMs, expectedComputeMs } from './classes.js';

/** A score above this is not believed (an estimated row expects half of the vendor peak: 2 is the peak itself). */
export const MAX_SCORE = 4;

export interface GpuTiming {
  index: number;
  /** The class this GPU claimed (market class; `cpu` for a CPU-only node's index 0). */
  classKey: string;
  /** Reported by the node. */
  computeMs: number;
}

export interface VerdictInput {
  sizing: Pick<ChallengeSizing, 'classKey' | 'n' | 'products' | 'deadlineMs' | 'tolerance'>;
  /** Coordinator's clock: from delivering the challenge to receiving the digests. */
  elapsedMs: number;
  gpus: readonly GpuTiming[];
  checks: readonly BlockCheck[];
}

export interface GpuScore {
  index: number;
  expectedMs: number;
  /** The time judged: max(reported compute, elapsed − start-up and hashing allowances, 1 ms). */
  judgedMs: number;
  score: number;
}

export interface ChallengeVerdictResult {
  outcome: 'passed' | 'failed';
  reason: string | null;
  provenClass: string | null;
  /** The slowest GPU's score (1 = as the table expects), null when failed. */
  score: number | null;
  perGpu: GpuScore[];
}

const fmt = (ms: number) => (ms >= 10_000 ? `${(ms / 1000).toFixed(0)} s` : `${Math.round(ms)} ms`);

export function challengeVerdict(input: VerdictInput): ChallengeVerdictResult {
  const { sizing, elapsedMs } = input;
  const tol = sizing.tolerance;
  const hashAllowanceMs = (Math.max(1, input.gpus.length) * sizing.products * 4 * sizing.n * sizing.n) / tol.hashBytesPerMs;
  const perGpu = input.gpus.map((g): GpuScore => {
    const expectedMs = expectedComputeMs(g.classKey, sizing.n, sizing.products);
    const judgedMs = Math.max(g.computeMs, elapsedMs - tol.startupMs - hashAllowanceMs, 1);
    return { index: g.index, expectedMs, judgedMs, score: Math.min(MAX_SCORE, expectedMs / judgedMs) };
  });
  const failed = (reason: string): ChallengeVerdictResult => ({ outcome: 'failed', reason, provenClass: null, score: null, perGpu });

  const wrong = input.checks.filter((c) => !c.ok);
  if (wrong.length > 0) {
    const w = wrong[0]!;
    return failed(`GPU ${w.gpu} product ${w.product} block ${w.block}: ${w.reason}${wrong.length > 1 ? ` (and ${wrong.length - 1} more)` : ''}`);
  }
  if (input.checks.length === 0) return failed('no block was checked');
  if (perGpu.length === 0) return failed('no GPU reported timings');
  if (elapsedMs > sizing.deadlineMs) return failed(`timed out: digests after ${fmt(elapsedMs)}, the deadline for ${sizing.classKey} is ${fmt(sizing.deadlineMs)}`);
  for (const g of perGpu) {
    const limit = computeLimitMs(g.expectedMs, tol);
    if (g.judgedMs > limit) {
      const cls = input.gpus.find((x) => x.index === g.index)!.classKey;
      return failed(`too slow for ${cls}: GPU ${g.index} computed in ${fmt(g.judgedMs)}, the class allows ${fmt(limit)} (${tol.maxSlowdown} × ${fmt(g.expectedMs)} + ${fmt(tol.warmupMs)})`);
    }
  }
  const score = Math.min(...perGpu.map((g) => g.score));
  return { outcome: 'passed', reason: null, provenClass: sizing.classKey, score, perGpu };
}
