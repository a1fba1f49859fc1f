/**
 * Pods of the trace as gpux jobs. Mapping (documented in bench/README.md):
 * - num_gpu → resources.gpu.count (a shared-GPU pod, gpu_milli < 1000, takes one whole GPU: gpux has no
 *   fractional GPUs); gpu_spec model codes → resources.gpu.models, as the names the fleet advertises; cpu_milli / 1000 → cpuCores; memory_mib → memoryGb.
 * - qos → priority: Guaranteed → high, LS and Burstable → normal, BE (best effort) → low.
 * - buyer: the trace has no user column; pods are dealt to `buyers` synthetic buyers with a skewed share
 *   (buyer i gets weight 1 / (i + 1)), so a few heavy buyers and a long tail compete.
 */
import type { JobRecord, Random } from '@gpux/core';
import type { JobSpec } from '@gpux/protocol';
import { advertisedModel } from './fleet.js';
import type { PodRow } from './trace-csv.js';

export function priorityOf(qos: string): 'high' | 'normal' | 'low' {
  if (qos === 'Guaranteed') return 'high';
  if (qos === 'BE') return 'low';
  return 'normal';
}

/**
 * A gpu_spec model code (T4, V100M16, …) as a `models` filter: the name the fleet advertises for that code
 * (fleet.ts), so a pod naming V100M16 matches the nodes of model V100M16 and no other.
 */
export const modelFilterOf = (code: string) => advertisedModel(code).name.toLowerCase();

export function specOf(pod: PodRow): JobSpec {
  const gpu = pod.gpus > 0 ? { count: Math.max(1, Math.round(pod.gpus)), ...(pod.models.length ? { models: pod.models.map(modelFilterOf) } : {}) } : { count: 0 };
  return {
    name: pod.name,
    image: 'bench/trace-pod',
    command: ['run'],
    args: [],
    env: {},
    resources: { gpu, cpuCores: pod.cpuCores, ...(pod.memoryMb > 0 ? { memoryGb: pod.memoryMb / 1024 } : {}) },
    inputs: [],
    timeoutSeconds: 3600,
    maxRetries: 20,
    labels: {},
    constraints: {},
    priority: priorityOf(pod.qos),
  };
}

/** Buyer ids with a skewed share: cumulative weights 1/(i+1). */
export function buyerPicker(buyers: number, random: Random): () => string {
  const weights = Array.from({ length: buyers }, (_, i) => 1 / (i + 1));
  const total = weights.reduce((a, b) => a + b, 0);
  const cum: number[] = [];
  let acc = 0;
  for (const w of weights) {
    acc += w / total;
    cum.push(acc);
  }
  return () => {
    const r = random.next();
    let i = 0;
    while (i < cum.length - 1 && (cum[i] as number) < r) i++;
    return `buyer-${String(i).padStart(3, '0')}`;
  };
}

export function jobRecord(id: string, spec: JobSpec, buyerId: string, createdAt: number): JobRecord {
  return {
    id,
    name: spec.name,
    buyerId,
    state: 'queued',
    spec,
    attemptCount: 0,
    currentAttemptId: null,
    runAfter: null,
    exitCode: null,
    error: null,
    cancelRequested: false,
    createdAt,
    updatedAt: createdAt,
    startedAt: null,
    finishedAt: null,
    idempotencyKey: null,
    avoidNodeIds: [],
    payment: null,
  };
}
