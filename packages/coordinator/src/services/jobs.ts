/** Buyer-side job operations: submit (idempotent), list, get, cancel. Visibility: buyers see only their own. */
import { GpuxError, isGpuxError, type JobRecord, type NewJob, newId } from '@gpux/core';
import type { GetJobResponse, JobSpec, JobState, ListJobsResponse, SubmitJobResponse } from '@gpux/protocol';
import { AttemptEventType, formatAmount, JOB_STATES, priceUnit, unitsPhrase } from '@gpux/protocol';
import { canSeeBuyer, type Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { attemptView, eventView, jobView } from '../views.js';
import { paymentFor } from './market.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type JobsDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

/** The job, if this principal may see it; someone else's job is reported missing, not forbidden. */
export async function visibleJob(rt: JobsDeps, p: Principal, id: string): Promise<JobRecord> {
  const job = await rt.store.getJob(id);
  if (!job || !canSeeBuyer(p, job.buyerId)) throw new GpuxError('JOB_NOT_FOUND', `no job ${id}`);
  return job;
}

/** JSON with sorted keys, so two specs compare by content. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Whether two specs say the same (key order aside): an idempotent replay's test. */
export const sameSpec = (a: JobSpec, b: JobSpec): boolean => canonical(a) === canonical(b);

/**
 * A spec as the store's new job, with the refusals a submit makes (replicas without verification, the market cap
 * against the class floors) and its payment (the hold). Shared by a buyer's submit and a peer region's forwarded
 * job (federation/remote-jobs.ts), so both are checked and held alike.
 */
export function newJobOf(rt: Needs<'book' | 'clock' | 'config' | 'index' | 'random' | 'store'>, p: Pick<Principal, 'accountId' | 'role'>, spec: JobSpec, idempotencyKey: string | null): NewJob {
  const now = rt.clock.now();
  const replicated = spec.replicas === 2;
  // The spec schema refuses replicas: 2 with deterministic: false or nodes > 1; the replica run is the verification step's.
  if (replicated && !rt.config.verify) {
    throw new GpuxError('SPEC_INVALID', 'replicas: 2 needs result verification, and this coordinator runs with it off', {
      problems: [{ path: 'replicas', message: 'drop replicas, or ask the operator to turn verification on (GPUX_VERIFY=on)' }],
    });
  }
  const payment = paymentFor(rt, spec);
  return {
    id: newId('job', now, rt.random),
    buyerId: p.accountId,
    spec,
    idempotencyKey,
    now,
    ...(payment ? { payment } : {}),
    // Pay after verification (TRUST.md layer 4): a paid job's provider share is held until its step passes or its window closes.
    // A replicated job opens its step without a market too: its second run is what the buyer asked for.
    // With a market, the store holds the replica's escrow (one more attempt) beside the job's (verification-jobs.ts).
    ...((payment || replicated) && rt.config.verify
      ? { holdPay: true, verifyTerms: { disputeWindowMs: rt.config.disputeWindowSeconds * 1000, auditFloorBps: rt.config.auditFloorBps } }
      : {}),
    // Operators are exempt: the bound is against a buyer crowding the queue (issue 10 item 7).
    ...(p.role === 'operator' ? {} : { maxQueued: rt.config.maxQueuedPerBuyer }),
  };
}

export async function submitJob(rt: JobsDeps, p: Principal, spec: JobSpec, idempotencyKey: string | null): Promise<SubmitJobResponse> {
  const replicated = spec.replicas === 2;
  const newJob = newJobOf(rt, p, spec, idempotencyKey);
  const payment = newJob.payment;
  const { job, created } = await rt.store
    .submitJob(newJob)
    .catch((err: unknown) => {
      if (!(isGpuxError(err) && err.code === 'INSUFFICIENT_FUNDS' && payment)) throw err;
      const c = payment;
      const runs = replicated ? ` × 2 runs (replicas: 2): ${formatAmount(2 * c.held, c.asset)} in all` : '';
      const why = `this job holds ${formatAmount(c.held, c.asset)} in escrow (cap ${formatAmount(c.capPerUnitHour, c.asset)} per ${priceUnit(spec.resources.gpu.count)} × ${unitsPhrase(spec.resources.gpu.count, c.units, spec.nodes ?? 1)} × ${spec.timeoutSeconds} s)${runs}`;
      throw new GpuxError('INSUFFICIENT_FUNDS', `${why}; ${err.message} — deposit funds (gpux wallet deposit), or lower maxPricePerGpuHour or timeoutSeconds${replicated ? ', or drop replicas' : ''}`, { cause: err });
    });
  if (!created && !sameSpec(job.spec, spec)) {
    throw new GpuxError('IDEMPOTENCY_KEY_REUSED', `Idempotency-Key ${JSON.stringify(idempotencyKey)} was used for job ${job.id} with a different spec`);
  }
  if (created) {
    rt.logger.debug({ jobId: job.id, buyerId: p.accountId }, 'job submitted');
    rt.signals.kick();
  }
  return { job: jobView(job), created };
}

export function parseStates(raw: string | undefined): JobState[] | undefined {
  if (raw === undefined) return undefined;
  const states = raw.split(',');
  const bad = states.filter((s) => !(JOB_STATES as readonly string[]).includes(s));
  if (bad.length) {
    throw new GpuxError('REQUEST_INVALID', `unknown job state ${bad.join(', ')}`, {
      problems: [{ path: 'state', message: `expected one or more of ${JOB_STATES.join(', ')}, comma-separated` }],
    });
  }
  return states as JobState[];
}

export async function listJobs(rt: JobsDeps, p: Principal, q: { state?: string; limit: number; cursor?: string }): Promise<ListJobsResponse> {
  const states = parseStates(q.state);
  const page = await rt.store.listJobs({
    limit: q.limit,
    ...(p.role === 'buyer' ? { buyerId: p.accountId } : {}),
    ...(states ? { states } : {}),
    ...(q.cursor ? { cursor: q.cursor } : {}),
  });
  const steps = new Map((await rt.store.getVerifications(page.items.map((j) => j.id))).map((v) => [v.jobId, v]));
  return { jobs: page.items.map((j) => jobView(j, steps.get(j.id) ?? null)), nextCursor: page.nextCursor };
}

/**
 * The job with its newest events: a page of its own (state, money) events and the node-reported ones in
 * their range, so a node's image-pull events can never push the job's end or its charges out of view.
 */
export async function getJob(rt: JobsDeps, p: Principal, id: string, q: { eventsBefore?: number | undefined; eventsLimit: number } = { eventsLimit: 200 }): Promise<GetJobResponse> {
  const job = await visibleJob(rt, p, id);
  const [attempts, page, verification] = await Promise.all([
    rt.store.listAttempts(id),
    rt.store.listJobHistory(id, { limit: q.eventsLimit, nodeTypes: AttemptEventType.options, ...(q.eventsBefore !== undefined ? { before: q.eventsBefore } : {}) }),
    rt.store.getVerification(id),
  ]);
  return {
    job: jobView(job, verification ?? null),
    attempts: attempts.map(attemptView),
    events: page.events.map(eventView),
    moreEventsBefore: page.moreBefore,
    nodeEventsElided: page.nodeElided,
  };
}

/** Queued: cancelled at once. Running: cancelRequested, and the node hears it on its next call or long-poll. */
export async function cancelJob(rt: JobsDeps, p: Principal, id: string): Promise<JobRecord> {
  await visibleJob(rt, p, id);
  const { job, stopAttemptIds } = await rt.store.requestCancel(id, rt.clock.now(), rt.config.cancelGraceMs);
  rt.logger.info({ jobId: id, state: job.state, stopAttemptIds }, 'job cancel requested');
  rt.logs.wake(id);
  for (const attemptId of stopAttemptIds) {
    const a = await rt.store.getAttempt(attemptId);
    if (a) rt.work.wake(a.nodeId);
  }
  return job;
}
