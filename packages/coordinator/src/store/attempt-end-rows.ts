/** Attempt rows as the core's attempt-end rules see them (core attempt-end/snapshot.ts AttemptFacts). */
import type { AttemptFacts } from '@gpux/core';
import type { AttemptState } from '@gpux/protocol';
import { type AttemptRow, attemptPriceFromRow } from './rows.js';

export function attemptFactsFromRow(r: AttemptRow): AttemptFacts {
  return {
    id: r.id,
    jobId: r.job_id,
    nodeId: r.node_id,
    state: r.state as AttemptState,
    gpuIndices: JSON.parse(r.gpu_indices),
    gangLeader: r.gang_leader ?? null,
    startedAt: r.started_at === null ? null : Number(r.started_at),
    stopBy: r.stop_by === null || r.stop_by === undefined ? null : Number(r.stop_by),
    leaseExpiresAt: r.lease_expires_at === null ? null : Number(r.lease_expires_at),
    deadlineAt: r.deadline_at === null || r.deadline_at === undefined ? null : Number(r.deadline_at),
    price: attemptPriceFromRow(r),
    settlement: { charged: Number(r.settled_charged), fee: Number(r.settled_fee), settledMs: Number(r.settled_ms) },
  };
}
