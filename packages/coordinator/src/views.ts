/** Records as the API shows them: internal fields (idempotency keys, avoid lists, metrics) stay inside. */
import type { AttemptRecord, CapacityIndex, EventRecord, JobRecord, NodeRecord } from '@gpux/core';
import type { AttemptView, EventView, JobView, NodeView } from '@gpux/protocol';

export function jobView(j: JobRecord): JobView {
  return {
    id: j.id,
    name: j.name,
    buyerId: j.buyerId,
    state: j.state,
    spec: j.spec,
    attemptCount: j.attemptCount,
    currentAttemptId: j.currentAttemptId,
    runAfter: j.runAfter,
    exitCode: j.exitCode,
    error: j.error,
    cancelRequested: j.cancelRequested,
    createdAt: j.createdAt,
    updatedAt: j.updatedAt,
    startedAt: j.startedAt,
    finishedAt: j.finishedAt,
    payment: j.payment,
  };
}

export function attemptView(a: AttemptRecord): AttemptView {
  return {
    id: a.id,
    jobId: a.jobId,
    nodeId: a.nodeId,
    state: a.state,
    gpuIndices: a.gpuIndices,
    exitCode: a.exitCode,
    error: a.error,
    outputDigest: a.outputDigest,
    leaseExpiresAt: a.leaseExpiresAt,
    createdAt: a.createdAt,
    startedAt: a.startedAt,
    finishedAt: a.finishedAt,
    price: a.price
      ? { asset: a.price.asset, pricePerUnitHour: a.price.pricePerUnitHour, units: a.price.units, marketClass: a.price.marketClass, providerId: a.price.providerId, charged: a.settlement.charged }
      : null,
    commitment: a.commitment ? JSON.parse(a.commitment) : null,
    commitmentSignature: a.commitmentSignature ?? null,
  };
}

export function eventView(e: EventRecord): EventView {
  return { seq: e.seq, at: e.at, subject: e.subject, subjectId: e.subjectId, type: e.type, data: e.data };
}

/** Busy GPUs and active attempts come from the capacity index (a cache of the store's active attempts). */
export function nodeView(n: NodeRecord, index: CapacityIndex): NodeView {
  const usage = index.usage(n.id);
  return {
    id: n.id,
    status: n.status,
    adminState: n.adminState,
    adminReason: n.adminReason ?? null,
    drained: n.adminState === 'draining' && usage.activeAttempts === 0,
    simulated: n.simulated,
    advertisement: n.advertisement,
    gpusTotal: n.advertisement.gpus.length,
    gpusBusy: usage.gpusBusy,
    activeAttempts: usage.activeAttempts,
    providerId: n.providerId,
    enrollmentId: n.enrollmentId ?? null,
    removedAt: n.removedAt ?? null,
    registeredAt: n.registeredAt,
    lastHeartbeatAt: n.lastHeartbeatAt,
  };
}
