/** A queued market JobRecord built in memory (no store), for tests and benches that drive core or the runtime directly. */
import type { JobRecord } from '@gpux/core';
import { JobSpec, type JobSpecInput } from '@gpux/protocol';

export function queuedJobRecord(o: { id: string; buyerId: string; createdAt: number; cap: number; spec: Partial<JobSpecInput> }): JobRecord {
  const spec = JobSpec.parse({ name: 'j', image: 'img', command: ['x'], maxPricePerGpuHour: o.cap, ...o.spec });
  return {
    id: o.id,
    name: spec.name,
    buyerId: o.buyerId,
    state: 'queued',
    spec,
    attemptCount: 0,
    currentAttemptId: null,
    runAfter: null,
    exitCode: null,
    error: null,
    cancelRequested: false,
    createdAt: o.createdAt,
    updatedAt: o.createdAt,
    startedAt: null,
    finishedAt: null,
    idempotencyKey: null,
    avoidNodeIds: [],
    payment: { asset: 'usdc', capPerUnitHour: o.cap, units: Math.max(1, spec.resources.gpu.count), held: 1 },
  };
}
