/**
 * The baseline of the placement benchmark: the same filters and scores as the engine, but over every node
 * for every job (no index, no sampling) — what a scheduler without a capacity index does.
 */
import {
  bestSlot,
  type CapacityIndex,
  DEFAULT_SCORE_WEIGHTS,
  type JobRecord,
  type NodeCapacity,
  type Placement,
  type PlacementContext,
  pickGpus,
  rejectNode,
  requirementsOf,
  scoreNode,
} from '@gpux/core';

export class NaivePlacer {
  placeJob(job: JobRecord, index: CapacityIndex, ctx: PlacementContext): Placement[] {
    const req = requirementsOf(job);
    let best: NodeCapacity | undefined;
    let bestScore = Number.NEGATIVE_INFINITY;
    for (const n of index.allNodes()) {
      const why = rejectNode(req, n);
      if (why !== null && why !== 'failedBefore') continue;
      const slot = req.gpuCount > 0 ? bestSlot(req, n.slots) : undefined;
      const s = scoreNode(req, n, slot, ctx.now, DEFAULT_SCORE_WEIGHTS) - (why === 'failedBefore' ? 1000 : 0);
      if (s > bestScore) {
        bestScore = s;
        best = n;
      }
    }
    if (!best) return [];
    const slot = req.gpuCount > 0 ? bestSlot(req, best.slots) : undefined;
    const gpuIndices = slot ? pickGpus(req, slot) : [];
    const attemptId = ctx.newAttemptId();
    index.reserve({ attemptId, nodeId: best.nodeId, gpuIndices, cpu: req.cpu, memoryMb: req.memoryMb, buyerId: job.buyerId, jobId: job.id });
    return [{ jobId: job.id, attemptId, nodeId: best.nodeId, gpuIndices, leaseExpiresAt: ctx.now + ctx.leaseTtlMs }];
  }
}
