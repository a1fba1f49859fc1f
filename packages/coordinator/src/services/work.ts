/**
 * The agent's work long-poll: its assigned attempts (until started) and cancels, woken by the scheduler; as a
 * work exchange (POST) it also carries the starts of the assignments the agent took up (issue 14).
 * At most workPollsPerNode polls per node wait at once (one, plus one left over from a dropped connection).
 */
import { performance } from 'node:perf_hooks';
import { GpuxError } from '@gpux/core';
import { type Assignment, assignmentOrder, JobSpec, SEAL_TTL_MS, type StartOutcome, type WorkExchangeResponse, type WorkResponse } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { PollSlots } from '../waiters.js';
import { startAttempt } from './agent.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type WorkDeps = Needs<'clock' | 'config' | 'delivery' | 'logger' | 'signer' | 'store' | 'work'>;

const slotsOf = new WeakMap<object, PollSlots>();

export interface WorkSnapshot {
  assignments: Assignment[];
  cancel: string[];
}

/**
 * Seal what goes out (issue 19): each assignment over its attempt, job, node, spec digest, GPUs, lease and
 * gang; each cancel over its attempt and node. Signed where the response is built, never stored.
 */
function sealed(rt: WorkDeps, nodeId: string, snap: WorkSnapshot): WorkResponse {
  const expiresAt = rt.clock.now() + SEAL_TTL_MS.assignment;
  const assignments = snap.assignments.map((a) => {
    const order = assignmentOrder(a, nodeId);
    return { ...a, seal: rt.signer.seal(order, expiresAt) };
  });
  return { assignments, cancel: snap.cancel.map((id) => rt.signer.sealCancel(id, nodeId)) };
}

/**
 * The spec parsed by the schema the agent parses it with, so the seal's spec digest is over exactly what is
 * sent. A stored spec the schema no longer takes is sent as stored (the agent will refuse it) and logged.
 */
function specAsSent(rt: WorkDeps, jobId: string, spec: Assignment['spec']): Assignment['spec'] {
  const parsed = JobSpec.safeParse(spec);
  if (parsed.success) return parsed.data;
  rt.logger.warn({ jobId, problems: parsed.error.issues.slice(0, 5) }, 'a stored job spec does not parse as a JobSpec: sent as stored');
  return spec;
}

async function snapshot(rt: WorkDeps, nodeId: string): Promise<WorkSnapshot> {
  const out: WorkSnapshot = { assignments: [], cancel: [] };
  const now = rt.clock.now();
  const attempts = await rt.store.listActiveAttempts(nodeId);
  if (attempts.length === 0) return out;
  const jobs = new Map((await rt.store.getJobs(attempts.map((a) => a.jobId))).map((j) => [j.id, j]));
  // A retry starts from the job's latest checkpoint (issue 13); the seal covers its sha256 (assignmentOrder).
  const assignedJobs = attempts.filter((a) => a.state === 'assigned').map((a) => a.jobId);
  const checkpoints = assignedJobs.length > 0 ? await rt.store.latestCheckpoints(assignedJobs) : new Map();
  for (const a of attempts) {
    const job = jobs.get(a.jobId);
    if (!job) continue;
    if (job.cancelRequested) out.cancel.push(a.id);
    else if (a.state === 'assigned') {
      const cp = checkpoints.get(a.jobId);
      out.assignments.push({
        attemptId: a.id,
        jobId: a.jobId,
        spec: specAsSent(rt, job.id, job.spec),
        gpuIndices: a.gpuIndices,
        leaseExpiresAt: a.leaseExpiresAt ?? now + rt.config.leaseTtlMs,
        ...(a.gang ? { gang: { rank: a.gang.rank, worldSize: a.gang.worldSize, peers: a.gang.peers } } : {}),
        ...(cp ? { checkpoint: { sha256: cp.sha256, size: cp.size, attemptId: cp.attemptId, createdAt: cp.createdAt } } : {}),
      });
    }
  }
  return out;
}

/** Wait up to `waitMs` for news for this node; always answers with the node's full current set. */
export function pollWork(rt: WorkDeps, nodeId: string, waitMs: number): Promise<WorkResponse> {
  return inPollSlot(rt, nodeId, async () => sealed(rt, nodeId, await waitForWork(rt, nodeId, waitMs)));
}

/** The exchange's body: MAX_EXCHANGE_STARTS ids of at most 128 characters take about half of it. */
export const WORK_EXCHANGE_BODY_LIMIT_BYTES = 16 * 1024;

/**
 * POST /v1/agent/work: the poll carrying the starts of assignments the agent took up since its last one. Each
 * start is what POST …/start does; with any carried, the answer comes at once (the agent runs them on it) and
 * brings whatever else is assigned by then. One request for a delivery's starts instead of one per start.
 */
export function exchangeWork(rt: WorkDeps, nodeId: string, req: { waitMs: number; started: string[] }): Promise<WorkExchangeResponse> {
  return inPollSlot(rt, nodeId, async () => {
    // Concurrent, so they share one group commit (store/group-commit.ts), in id order: the order the node's
    // heartbeat locks its attempts in (store/nodes.ts), so the two never deadlock on PostgreSQL.
    const ids = [...new Set(req.started)].sort(byteOrder);
    const started = await Promise.all(ids.map((id) => startCarried(rt, nodeId, id)));
    const snap = await waitForWork(rt, nodeId, ids.length > 0 ? 0 : req.waitMs);
    return { ...sealed(rt, nodeId, snap), started };
  });
}

/** Ids compared as bytes, like PostgreSQL's COLLATE "C". */
const byteOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** A carried start the attempt's state refuses (not this node's, or ended) is answered, not thrown: the others still count. */
async function startCarried(rt: WorkDeps, nodeId: string, attemptId: string): Promise<StartOutcome> {
  try {
    return { attemptId, ...(await startAttempt(rt, nodeId, attemptId)) };
  } catch (e) {
    if (e instanceof GpuxError && (e.code === 'ATTEMPT_NOT_FOUND' || e.code === 'CONFLICT')) return { attemptId, ok: false, error: { code: e.code, message: e.message } };
    throw e;
  }
}

/** At most workPollsPerNode polls (plain or carrying starts) per node at once. */
async function inPollSlot<T>(rt: WorkDeps, nodeId: string, fn: () => Promise<T>): Promise<T> {
  let slots = slotsOf.get(rt);
  if (!slots) {
    slots = new PollSlots();
    slotsOf.set(rt, slots);
  }
  const max = rt.config.workPollsPerNode;
  const release = slots.take(nodeId, max);
  if (!release) {
    throw new GpuxError('LIMIT_EXCEEDED', `node ${nodeId} already holds ${max} work long-polls (the limit); wait for one to return before polling again`, {
      problems: [{ path: 'waitMs', message: `at most ${max} concurrent work polls per node` }],
    });
  }
  try {
    return await fn();
  } finally {
    release();
  }
}

async function waitForWork(rt: WorkDeps, nodeId: string, waitMs: number): Promise<WorkSnapshot> {
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
