/** The agent's work long-poll: its assigned attempts (until started) and cancels, woken by the scheduler. */
import { performance } from 'node:perf_hooks';
import type { Assignment } from '@gpux/protocol';
import type { Runtime } from '../runtime.js';

export interface WorkSnapshot {
  assignments: Assignment[];
  cancel: string[];
}

async function snapshot(rt: Runtime, nodeId: string): Promise<WorkSnapshot> {
  const out: WorkSnapshot = { assignments: [], cancel: [] };
  const now = rt.clock.now();
  for (const a of await rt.store.listActiveAttempts(nodeId)) {
    const job = await rt.store.getJob(a.jobId);
    if (!job) continue;
    if (job.cancelRequested) out.cancel.push(a.id);
    else if (a.state === 'assigned') {
      out.assignments.push({ attemptId: a.id, jobId: a.jobId, spec: job.spec, gpuIndices: a.gpuIndices, leaseExpiresAt: a.leaseExpiresAt ?? now + rt.config.leaseTtlMs });
    }
  }
  return out;
}

/** Wait up to `waitMs` for news for this node; always answers with the node's full current set. */
export async function pollWork(rt: Runtime, nodeId: string, waitMs: number): Promise<WorkSnapshot> {
  const begin = performance.now();
  const redeliverMs = rt.config.heartbeatIntervalMs;
  for (;;) {
    const sub = rt.work.subscribe(nodeId);
    try {
      const snap = await snapshot(rt, nodeId);
      const t = performance.now();
      const ids = snap.assignments.map((a) => a.attemptId);
      const dueAt = rt.delivery.nextDue(ids, t, redeliverMs);
      const remaining = waitMs - (t - begin);
      if (dueAt <= t || rt.delivery.hasUnsentCancel(snap.cancel) || remaining <= 0 || rt.work.isClosed) {
        rt.delivery.delivered(ids, snap.cancel, t);
        return snap;
      }
      await sub.wait(Math.min(remaining, dueAt - t));
    } finally {
      sub.dispose();
    }
  }
}
