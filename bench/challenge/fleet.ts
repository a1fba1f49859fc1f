/**
 * The modelled fleet of the challenge bench: 1,000 nodes joining at once, each with a class, a GPU count and a
 * true speed; honest and cheating runs produce the timings the coordinator would see, and core's real
 * challengeVerdict judges them. Times are modelled (no GPU here); the checks' CPU cost is measured (check-cost.ts).
 */
import { type ChallengeSizing, challengeSizing, challengeVerdict, expectedComputeMs, type Random } from '@gpux/core';

export interface NodeModel {
  classKey: string;
  gpus: number;
  vramMb: number;
  /** True speed relative to the class row (estimated rows expect half the vendor peak: real sgemm reaches 0.6–0.9 of it). */
  speed: number;
}

const MIX: Array<{ classKey: string; share: number; vramMb: number }> = [
  { classKey: 'cpu', share: 0.1, vramMb: 0 },
  { classKey: 'nvidia-rtx4090-24gb', share: 0.35, vramMb: 24_564 },
  { classKey: 'nvidia-a100-80gb', share: 0.2, vramMb: 81_920 },
  { classKey: 'nvidia-h100-80gb', share: 0.25, vramMb: 81_559 },
  { classKey: 'nvidia-l40s-48gb', share: 0.1, vramMb: 46_068 },
];

export function buildFleet(count: number, random: Random): NodeModel[] {
  return Array.from({ length: count }, () => {
    let u = random.next();
    let cls = MIX[MIX.length - 1]!;
    for (const m of MIX) {
      if (u < m.share) {
        cls = m;
        break;
      }
      u -= m.share;
    }
    const cpu = cls.classKey === 'cpu';
    // Datacenter classes: 1 in 5 nodes has 8 GPUs; CPU rows were measured on the runner itself (0.6–2×: other CPUs).
    const gpus = cpu ? 0 : cls.classKey.includes('rtx') || random.next() > 0.2 ? 1 : 8;
    const speed = cpu ? 0.6 + random.next() * 1.4 : 0.7 + random.next() * 1.1;
    return { classKey: cls.classKey, gpus, vramMb: cls.vramMb, speed };
  });
}

export function sizingOf(node: NodeModel): ChallengeSizing {
  return challengeSizing(node.gpus === 0 ? [] : Array.from({ length: node.gpus }, () => ({ classKey: node.classKey, vramMb: node.vramMb })));
}

/** Timing noise: log-normal with sigma, and with probability `stallP` a 2× stall (a noisy neighbour, thermal throttling). */
export interface Jitter {
  sigma: number;
  stallP: number;
}

function gauss(random: Random): number {
  const u = Math.max(1e-12, random.next());
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random.next());
}

export function noise(random: Random, j: Jitter): number {
  return Math.exp(j.sigma * gauss(random)) * (random.next() < j.stallP ? 2 : 1);
}

export interface Timing {
  /** What the node reports per GPU. */
  computeMs: number;
  /** Coordinator's clock, delivery to digests. */
  elapsedMs: number;
}

/**
 * An honest run: start-up (GPU: python, torch import, CUDA context 2–15 s; CPU: a worker, 0.05–1 s), compute at
 * the node's speed with jitter, hashing at 4–20 GB/s on the host (GPU runner's thread pool), network 10–500 ms.
 * `work` multiplies the device work (one GPU answering for several identities does it `work` times over).
 */
export function honestTiming(node: NodeModel, s: ChallengeSizing, random: Random, j: Jitter, work = 1): Timing {
  const cpu = node.gpus === 0;
  const computeMs = (work * expectedComputeMs(node.classKey, s.n, s.products) * noise(random, j)) / node.speed;
  const startup = cpu ? 50 + random.next() * 950 : 2000 + random.next() * 13_000;
  const bytes = work * Math.max(1, node.gpus) * s.products * 4 * s.n * s.n;
  const hash = cpu ? 0 : bytes / ((4 + random.next() * 16) * 1e6);
  return { computeMs, elapsedMs: startup + computeMs + hash + 10 + random.next() * 490 };
}

export function verdictOf(node: NodeModel, s: ChallengeSizing, t: Timing, reportedComputeMs = t.computeMs, claimed = node.classKey) {
  const gpus = Array.from({ length: Math.max(1, node.gpus) }, (_, i) => ({ index: i, classKey: claimed, computeMs: reportedComputeMs }));
  return challengeVerdict({ sizing: s, elapsedMs: t.elapsedMs, gpus, checks: [{ gpu: 0, product: 0, block: 0, ok: true, reason: null }] });
}
