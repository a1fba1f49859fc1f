/**
 * Trace variants, generated deterministically (seeded) from the shipped pod list and node list, so the
 * replay can test GPU-model-constrained and CPU-heavy workloads without other files:
 * - models-N: N% of the GPU pods name the GPU models they accept (gpu_spec), drawn following the fleet's
 *   model mix (weighted by GPUs) among models that have a node with enough GPUs for the pod; 30% of those
 *   name several models (`A|B`, up to 4), as the Alibaba gpuspec traces do.
 * - cpu-heavy: 30% of the pods ask 2–4× their CPU and 1.5–3× their memory (capped at the largest node), so
 *   nodes run out of CPU or memory while GPUs are still free: the state a bounded search is most likely to miss.
 * - models-N-cpu: both.
 */
import { seededRandom } from './fleet.js';
import type { NodeRow, PodRow } from './trace-csv.js';

export const VARIANTS = ['default', 'models-10', 'models-33', 'models-50', 'cpu-heavy', 'models-10-cpu', 'models-33-cpu', 'models-50-cpu'] as const;
export type VariantName = (typeof VARIANTS)[number];

export function isVariant(v: string): v is VariantName {
  return (VARIANTS as readonly string[]).includes(v);
}

const MULTI_SHARE = 0.3;
const CPU_HEAVY_SHARE = 0.3;

export function makeVariant(name: VariantName, pods: readonly PodRow[], nodes: readonly NodeRow[], seed: number): PodRow[] {
  if (name === 'default') return pods.map((p) => ({ ...p }));
  const m = /^models-(\d+)/.exec(name);
  const modelShare = m ? Number(m[1]) / 100 : 0;
  const cpuHeavy = name.endsWith('cpu') || name === 'cpu-heavy';
  const random = seededRandom(seed * 7919 + name.length * 31 + Math.round(modelShare * 100));
  // The fleet's model mix: GPUs per model, and the most GPUs one node of the model has.
  const gpusOf = new Map<string, number>();
  const biggest = new Map<string, number>();
  for (const n of nodes) {
    if (n.gpus <= 0) continue;
    gpusOf.set(n.model, (gpusOf.get(n.model) ?? 0) + n.gpus);
    biggest.set(n.model, Math.max(biggest.get(n.model) ?? 0, n.gpus));
  }
  const maxCpu = Math.max(...nodes.map((n) => n.cpuCores));
  const maxMem = Math.max(...nodes.map((n) => n.memoryMb));
  const draw = (models: string[], exclude: ReadonlySet<string>): string | undefined => {
    const pool = models.filter((x) => !exclude.has(x));
    const total = pool.reduce((s, x) => s + (gpusOf.get(x) ?? 0), 0);
    let r = random.next() * total;
    for (const x of pool) {
      r -= gpusOf.get(x) ?? 0;
      if (r < 0) return x;
    }
    return pool[pool.length - 1];
  };
  return pods.map((p) => {
    const out: PodRow = { ...p, models: [...p.models] };
    // Draws are made for every pod, used or not, so one variant's choices do not shift another's.
    const rName = random.next();
    const rMulti = random.next();
    const rCount = random.next();
    const rHeavy = random.next();
    const cpuX = 2 + 2 * random.next();
    const memX = 1.5 + 1.5 * random.next();
    if (modelShare > 0 && p.gpus > 0 && rName < modelShare) {
      const fitting = [...gpusOf.keys()].filter((x) => (biggest.get(x) ?? 0) >= p.gpus).sort();
      const picked = new Set<string>();
      const first = draw(fitting, picked);
      if (first) picked.add(first);
      const extra = rMulti < MULTI_SHARE ? 1 + Math.floor(rCount * 3) : 0;
      for (let i = 0; i < extra && picked.size < fitting.length; i++) picked.add(draw(fitting, picked) as string);
      out.models = [...picked].sort();
    }
    if (cpuHeavy && rHeavy < CPU_HEAVY_SHARE) {
      out.cpuCores = Math.min(maxCpu, Math.round(p.cpuCores * cpuX * 1000) / 1000);
      out.memoryMb = Math.min(maxMem, Math.round(p.memoryMb * memX));
    }
    return out;
  });
}
