/**
 * The challenge class table (issue 12): per class, the fp32 matrix-product rate an honest device reaches, so
 * the coordinator can size a challenge and judge its time. Keyed by the market class (market/classes.ts
 * marketClassOf: `nvidia-h100-80gb`, …, `cpu`) — the normalized name the rest of the market and the verdict's
 * provenClass use, so driver spellings ("H100 80GB HBM3", "H100 PCIe") meet in one row.
 *
 * What the time proves, and what it does not: it proves throughput — the node did the checked work at least
 * as fast as the class row, within the tolerance. It does not prove the exact model (a faster, cheaper card
 * passes for a slower class) nor the VRAM: a revealed row block can be recomputed in O(rowBlock · n²) from the
 * seed, so keeping the products resident is what the honest runner does, not something the coordinator can
 * check. TRUST.md's wording must stay "proved a GPU of class X at challenge time (timed, checked computation)".
 */
import type { GpuDevice } from '@gpux/protocol';
import { CPU_CLASS, marketClassOf } from '../market/classes.js';
import { blockCount } from './product.js';

export interface ChallengeClassRow {
  /** fp32 matrix-product rate an honest device of the class reaches, GFLOP/s (1 GFLOP/s = 1e6 flop/ms). */
  gflops: number;
  /** measured: a run recorded it (fixture named in basis); estimated: vendor peak × DEFAULT_EFFICIENCY. */
  source: 'measured' | 'estimated';
  basis: string;
}

/** Share of the vendor's fp32 peak an estimated row expects (cuBLAS sgemm with TF32 off reaches 60–90%). */
export const DEFAULT_EFFICIENCY = 0.5;

const est = (peakTflops: number, what: string): ChallengeClassRow => ({
  gflops: peakTflops * 1000 * DEFAULT_EFFICIENCY,
  source: 'estimated',
  basis: `estimated, not measured: ${peakTflops} TFLOP/s fp32 peak (${what}) × ${DEFAULT_EFFICIENCY}`,
});

/**
 * The table. GPU rows are estimates from vendor fp32 (non-tensor) peaks until a GPU run records them; the cpu
 * row is the TypeScript runner (core multiplyInt in a worker) measured on the 2-core CI container.
 */
export const CHALLENGE_CLASSES: Readonly<Record<string, ChallengeClassRow>> = {
  [CPU_CLASS]: { gflops: 0.5, source: 'measured', basis: 'cpu runner (multiplyInt, one worker thread), n = 256, 2-core CI container: 0.5–0.9 GFLOP/s' },
  'nvidia-h200-141gb': est(67, 'H200 SXM'),
  'nvidia-h200-140gb': est(67, 'H200 SXM'),
  // The market class cannot tell SXM (67) from PCIe (51): the lower figure, so an honest PCIe card passes.
  'nvidia-h100-80gb': est(51, 'H100 PCIe'),
  'nvidia-a100-80gb': est(19.5, 'A100'),
  'nvidia-a100-40gb': est(19.5, 'A100'),
  'nvidia-l40s-48gb': est(91.6, 'L40S'),
  'nvidia-l4-24gb': est(30.3, 'L4'),
  'nvidia-a10-24gb': est(31.2, 'A10'),
  'nvidia-t4-16gb': est(8.1, 'T4'),
  'nvidia-v100-32gb': est(15.7, 'V100 SXM2'),
  'nvidia-v100-16gb': est(15.7, 'V100 SXM2'),
  'nvidia-rtx4090-24gb': est(82.6, 'RTX 4090'),
  'nvidia-rtx3090-24gb': est(35.6, 'RTX 3090'),
  'amd-mi300x-192gb': est(163.4, 'MI300X'),
  'amd-mi250x-128gb': est(47.9, 'MI250X'),
};

/** A GPU class not in the table: a low, safe figure (any current datacenter or gaming GPU beats it; no CPU does). */
export const UNKNOWN_GPU_ROW: ChallengeClassRow = est(8, 'unknown class: the floor of current GPUs');

export function challengeClassOf(gpu: Pick<GpuDevice, 'vendor' | 'model' | 'vramMb'>): string {
  return marketClassOf(gpu);
}

export function challengeClassRow(classKey: string): ChallengeClassRow {
  return CHALLENGE_CLASSES[classKey] ?? UNKNOWN_GPU_ROW;
}

/** How far from the table an honest run may fall, and the fixed costs the deadline allows for. */
export interface ChallengeTolerance {
  /** Compute may take up to expected × maxSlowdown. Below 8, so one GPU answering for 8 identities fails. */
  maxSlowdown: number;
  /** Runner start-up (python + torch import + CUDA context, or a worker thread) and the heartbeat round trip. */
  startupMs: number;
  /** Added to the compute limit: first-call costs inside the timed part (JIT warm-up, cuBLAS handle and kernel load). */
  warmupMs: number;
  /** Host bytes/ms the digests may be hashed at (the torch runner hashes with a thread pool). */
  hashBytesPerMs: number;
}

export const GPU_TOLERANCE: ChallengeTolerance = { maxSlowdown: 3, startupMs: 20_000, warmupMs: 1500, hashBytesPerMs: 4e6 };
/** CPUs vary far more than GPUs of one class, and a CPU proof only shows the node computes correctly: lax. */
export const CPU_TOLERANCE: ChallengeTolerance = { maxSlowdown: 10, startupMs: 5_000, warmupMs: 250, hashBytesPerMs: 2e5 };

export function challengeTolerance(classKey: string): ChallengeTolerance {
  return classKey === CPU_CLASS ? CPU_TOLERANCE : GPU_TOLERANCE;
}

/** The longest compute an honest device may take: expected × maxSlowdown, plus the warm-up allowance. */
export function computeLimitMs(expectedMs: number, tolerance: ChallengeTolerance): number {
  return expectedMs * tolerance.maxSlowdown + tolerance.warmupMs;
}

/** Expected compute time of `products` n × n products on one device of the class (generation folded into the rate). */
export function expectedComputeMs(classKey: string, n: number, products: number): number {
  return (products * 2 * n ** 3) / (challengeClassRow(classKey).gflops * 1e6);
}

export interface ChallengeSizing {
  /** The class the sizing was made for: the slowest of the node's GPUs (`cpu` for a CPU-only node). */
  classKey: string;
  n: number;
  products: number;
  rowBlock: number;
  /** Expected compute of the slowest GPU (each GPU is judged against its own class). */
  expectedComputeMs: number;
  /** From delivery to digests, on the coordinator's clock. */
  deadlineMs: number;
  tolerance: ChallengeTolerance;
}

export interface SizingOptions {
  /** Compute time aimed at per GPU (more products until reached, VRAM permitting). */
  targetComputeMs?: number;
  /** Force the matrix size (tests, benches). */
  n?: number;
  /** Share of the claimed VRAM the resident products may take. */
  vramFill?: number;
  maxProducts?: number;
}

export const GPU_N = 8192;
export const CPU_N = 256;
export const GPU_TARGET_COMPUTE_MS = 8_000;
export const CPU_TARGET_COMPUTE_MS = 2_000;
/** A reveal block stays near 256 KiB (its base64 travels in the reveal body). */
export const REVEAL_BLOCK_BYTES = 256 * 1024;

/** Rows per block: ≈ REVEAL_BLOCK_BYTES of int32, and at least 16 blocks a product so a partial product is caught by row. */
export function rowBlockFor(n: number): number {
  return Math.max(1, Math.min(Math.floor(REVEAL_BLOCK_BYTES / 4 / n), Math.floor(n / 16)));
}

/**
 * Size a challenge for a node whose GPUs are of these classes (empty: a CPU-only node). GPUs: n = 8192 and
 * enough products for ≈ GPU_TARGET_COMPUTE_MS on the slowest GPU, as VRAM permits (the runner keeps them
 * resident), so the device's work dominates start-up; CPU: n = 256, ≈ 2 s.
 */
export function challengeSizing(gpus: ReadonlyArray<{ classKey: string; vramMb?: number }>, opts: SizingOptions = {}): ChallengeSizing {
  const cpu = gpus.length === 0;
  const slowest = cpu ? CPU_CLASS : [...gpus].sort((a, b) => challengeClassRow(a.classKey).gflops - challengeClassRow(b.classKey).gflops)[0]!.classKey;
  const n = opts.n ?? (cpu ? CPU_N : GPU_N);
  const target = opts.targetComputeMs ?? (cpu ? CPU_TARGET_COMPUTE_MS : GPU_TARGET_COMPUTE_MS);
  let products = Math.max(1, Math.round(target / expectedComputeMs(slowest, n, 1)));
  if (!cpu) {
    const vramMb = Math.min(...gpus.map((g) => g.vramMb ?? Number.POSITIVE_INFINITY));
    if (Number.isFinite(vramMb)) products = Math.min(products, Math.max(1, Math.floor(((opts.vramFill ?? 0.75) * vramMb * 2 ** 20) / (4 * n * n))));
  }
  products = Math.min(products, opts.maxProducts ?? 4096);
  const tolerance = challengeTolerance(slowest);
  const expected = expectedComputeMs(slowest, n, products);
  const hashBytes = Math.max(1, gpus.length) * products * 4 * n * n;
  const deadlineMs = Math.ceil(computeLimitMs(expected, tolerance) + tolerance.startupMs + hashBytes / tolerance.hashBytesPerMs);
  return { classKey: slowest, n, products, rowBlock: rowBlockFor(n), expectedComputeMs: expected, deadlineMs, tolerance };
}

/** Row blocks per product for a sizing (the reveal chooser's range). */
export function sizingBlocks(s: Pick<ChallengeSizing, 'n' | 'rowBlock'>): number {
  return blockCount(s.n, s.rowBlock);
}
