/**
 * The first-fit placer the project started with, kept as the FIFO first-fit baseline of the replay
 * benchmark: jobs in the order given, each on the first schedulable node (in registration order) whose free
 * GPUs, CPU and memory fit, preferring nodes the job has not failed on. Scans nodes; not for production.
 */
import type { GpuDevice } from '@gpux/protocol';
import type { JobRecord, Placement } from '../records.js';
import type { CapacityIndex, NodeCapacity } from './capacity-index.js';
import { jobCpu, jobMemoryMb } from './requirements.js';
import type { PlacementContext, Scheduler } from './types.js';

function gpuMatches(gpu: GpuDevice, job: JobRecord): boolean {
  const want = job.spec.resources.gpu;
  if (want.vendor && gpu.vendor !== want.vendor) return false;
  if (want.minVramGb !== undefined && gpu.vramMb < want.minVramGb * 1024) return false;
  if (want.models && !want.models.some((m) => gpu.model.toLowerCase().includes(m.toLowerCase()))) return false;
  return true;
}

/** GPU indices on `node` that would serve `job`, or undefined if it does not fit. */
export function fitOnNode(job: JobRecord, node: NodeCapacity): number[] | undefined {
  if (!node.schedulable) return undefined;
  if (node.freeCpu < jobCpu(job) || node.freeMemoryMb < jobMemoryMb(job)) return undefined;
  const c = job.spec.constraints;
  if (c.region !== undefined && node.region !== c.region) return undefined;
  if (c.nodeLabels) for (const [k, v] of Object.entries(c.nodeLabels)) if (node.labels[k] !== v) return undefined;
  const count = job.spec.resources.gpu.count;
  if (count === 0) return [];
  if (node.freeGpus.size < count) return undefined;
  const picked: number[] = [];
  for (const gpu of node.gpus) {
    if (node.freeGpus.has(gpu.index) && gpuMatches(gpu, job)) picked.push(gpu.index);
    if (picked.length === count) return picked;
  }
  return undefined;
}

export class FirstFitScheduler implements Scheduler {
  place(jobs: readonly JobRecord[], index: CapacityIndex, ctx: PlacementContext): Placement[] {
    const out: Placement[] = [];
    for (const job of jobs) {
      const gpu = job.spec.resources.gpu;
      const vendor = gpu.count === 0 ? undefined : gpu.vendor;
      let fallback: { node: NodeCapacity; gpus: number[] } | undefined;
      let chosen: { node: NodeCapacity; gpus: number[] } | undefined;
      for (const node of index.candidates(vendor)) {
        const gpus = fitOnNode(job, node);
        if (!gpus) continue;
        if (job.avoidNodeIds.includes(node.nodeId)) {
          fallback ??= { node, gpus };
          continue;
        }
        chosen = { node, gpus };
        break;
      }
      const pick = chosen ?? fallback;
      if (!pick) continue;
      const attemptId = ctx.newAttemptId();
      index.reserve({ attemptId, nodeId: pick.node.nodeId, gpuIndices: pick.gpus, cpu: jobCpu(job), memoryMb: jobMemoryMb(job), buyerId: job.buyerId, jobId: job.id });
      out.push({ jobId: job.id, attemptId, nodeId: pick.node.nodeId, gpuIndices: pick.gpus, leaseExpiresAt: ctx.now + ctx.leaseTtlMs });
    }
    return out;
  }
}
