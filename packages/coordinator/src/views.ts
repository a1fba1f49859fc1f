/** Records as the API shows them: internal fields (idempotency keys, avoid lists, metrics) stay inside. */
import { type AttemptRecord, type CapacityIndex, decayReputation, type EventRecord, type JobRecord, type NodeRecord, type ReputationRecord, reputationScore, type VerificationRecord, verificationSummary } from '@gpux/core';
import type { AttemptView, EventView, JobView, NodeView, ReputationView, VerificationView } from '@gpux/protocol';

/** The job's verification step as the buyer sees it: the honest label and one sentence saying what it means. */
export function verificationView(v: VerificationRecord): VerificationView {
  return {
    state: v.state,
    label: v.label,
    summary: verificationSummary(v),
    attemptId: v.attemptId,
    nodeId: v.nodeId,
    p: v.p,
    draw: v.draw,
    reason: v.reason,
    windowClosesAt: v.windowClosesAt,
    checks: v.checks.map((c) => ({
      kind: c.kind,
      state: c.state,
      agreed: c.agreed !== undefined ? c.agreed : c.outputDigest === null ? null : c.outputDigest === v.outputDigest && c.exitCode === v.exitCode,
    })),
    dispute: v.dispute ? { reason: v.dispute.reason, bond: v.dispute.bond, asset: v.dispute.asset, at: v.dispute.at } : null,
    verdict: v.verdict,
    resolvedAt: v.resolvedAt,
  };
}

/** `verification`: the job's step when the caller read it (null: none); undefined leaves the field out. */
export function jobView(j: JobRecord, verification?: VerificationRecord | null): JobView {
  return {
    ...(verification !== undefined ? { verification: verification ? verificationView(verification) : null } : {}),
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
    // A check run its buyer can see (the replica of a replicas: 2 job) says what it checks.
    ...(j.kind && j.kind !== 'buyer' ? { kind: j.kind, checkOf: j.checkOf ?? null } : {}),
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

/** The node's reputation valued at `now` (sums decayed to it); null before its first outcome. */
export function reputationView(r: ReputationRecord | undefined, now: number): ReputationView | null {
  if (!r) return null;
  const d = decayReputation(r.state, now);
  return { score: reputationScore(d, d.asOf), good: d.good, bad: d.bad, auditsPassed: r.auditsPassed, asOf: d.asOf };
}

/** Busy GPUs and active attempts come from the capacity index (a cache of the store's active attempts). */
export function nodeView(n: NodeRecord, index: CapacityIndex, reputation: ReputationView | null): NodeView {
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
    reputation,
    // 0015: absent only on a record read before the migration.
    ...(n.proof ? { proof: { ...n.proof } } : {}),
    tier: n.tier ?? 'open',
  };
}
