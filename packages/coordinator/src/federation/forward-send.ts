/**
 * The forwarder's talk with a peer about one forwarded attempt (issue 15): send the job (again, while the peer has
 * not confirmed it: idempotent by the attempt id), apply what the peer says of it (its id, start, logs, a renewed
 * lease), cancel it there when the buyer cancelled or this region fenced the attempt, and book its end with the
 * peer's bill and its outputs (store finishForward, with the same decider as any attempt's end; the outputs are
 * brought home first: forward-outputs.ts). A peer's signed refusal of a send means nothing was made there: the
 * attempt ends at no cost and the job goes back to the queue, the peer avoided.
 */
import type { ForwardProgress, JobRecord, PeerRecord, TransitionDecider } from '@gpux/core';
import { type ForwardedJobView, type OutputFile, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { LOG_MARKER_SEQ } from '../services/attempt-writes.js';
import { forgetOutputs, outputsGaveUp, outputsHome } from './forward-outputs.js';
import { cancelForwardedJob, type ExchangeDeps, PeerContactError, sendForwardedJob } from './peer-client.js';
import type { SummaryDeps } from './summary.js';

/** What the forwarder uses of the coordinator's runtime (wired in runtime.ts). */
export type ForwarderDeps = SummaryDeps & Needs<'decider' | 'leads' | 'logger' | 'logs' | 'random' | 'signals' | 'signer'>;

/** How the forwarder signs and sends (a test may pass its own fetch). */
export type PeerClient = ExchangeDeps;

/** Which forwarded attempt: its job and its peer. */
export interface ForwardRef {
  attemptId: string;
  jobId: string;
  peerId: string;
  /** The last failure to reach the peer about it (the first one in a row is logged). */
  lastError?: string | null;
}

/** How long one call to a peer may take: two poll periods, 2 to 10 s. */
export const callTimeoutMs = (rt: Needs<'config'>): number => Math.min(10_000, Math.max(2_000, 2 * rt.config.forwardPollMs));

/** The peer as the buyer may read it (events and errors are the buyer's): its own region name. */
export const regionOf = (peer: PeerRecord): string => `region ${peer.summary?.region ?? peer.name}`;

export function asContactError(err: unknown): PeerContactError {
  return err instanceof PeerContactError ? err : new PeerContactError('unreachable', (err as Error).message);
}

/** The most a peer may bill: the job's hold (per run), which the peer's own hold equals. */
function maxBill(job: JobRecord): number {
  if (!job.payment) return 0;
  return job.spec.replicas === 2 ? 2 * job.payment.held : job.payment.held;
}

/** A forward that made nothing at the peer: back to the queue at once (no retry spent), that peer avoided. */
function backHome(rt: Needs<'decider'>): TransitionDecider {
  return (job, end, now) => (job.cancelRequested ? rt.decider(job, end, now) : { state: 'queued', runAfter: now, error: end.error, exitCode: null, avoidNode: true });
}

/** A failed contact: recorded (the lease runs on; past it the job comes home by the normal expiry). */
export async function noteFailure(rt: ForwarderDeps, f: ForwardRef, err: PeerContactError): Promise<void> {
  if (!f.lastError) rt.logger.warn({ attemptId: f.attemptId, jobId: f.jobId, peerId: f.peerId, err: err.message }, 'forwarded job: peer contact failed');
  await rt.store.recordForwardProgress({ attemptId: f.attemptId, now: rt.clock.now(), error: err.message });
}

/** How the peer's job ended, as the home attempt books it. */
interface ForwardEnd {
  outcome: 'succeeded' | 'failed' | 'cancelled';
  exitCode: number | null;
  error: string | null;
  charged: number;
  outputs?: OutputFile[];
  outputDigest?: string | null;
}

/** End the home attempt, booking `charged` (and the outputs), and tell the caches. */
async function finish(rt: ForwarderDeps, f: ForwardRef, end: ForwardEnd, decide: TransitionDecider): Promise<void> {
  const res = await rt.store.finishForward({ attemptId: f.attemptId, ...end, now: rt.clock.now() }, decide);
  if (res.status === 'ended') {
    rt.signals.attemptEnded(f.attemptId, f.jobId, end.outcome);
    rt.logger.info({ attemptId: f.attemptId, jobId: f.jobId, peerId: f.peerId, outcome: end.outcome, charged: end.charged, jobState: res.job.state }, 'forwarded attempt ended');
  } else if (res.status === 'fenced' && end.charged > 0) {
    rt.logger.warn({ attemptId: f.attemptId, jobId: f.jobId, peerId: f.peerId, charged: end.charged }, "a fenced forward's bill arrived: written off (the buyer is not charged again)");
  }
}

/** The peer refused (signed): nothing runs there for this attempt. */
export async function refused(rt: ForwarderDeps, f: ForwardRef, peer: PeerRecord, err: PeerContactError): Promise<void> {
  rt.logger.warn({ attemptId: f.attemptId, jobId: f.jobId, peerId: f.peerId, refusal: err.refusal }, 'forwarded job: the peer refused it');
  const error = `${regionOf(peer)} refused it: ${err.refusal?.code ?? 'refused'}: ${err.refusal?.message ?? err.message}`;
  await finish(rt, f, { outcome: 'failed', exitCode: null, error: error.slice(0, 4096), charged: 0 }, backHome(rt));
}

/** The peer has no job for this attempt (signed): nothing to bill; the attempt ends as lost work. */
export async function forgotten(rt: ForwarderDeps, f: ForwardRef, peer: PeerRecord): Promise<void> {
  await finish(rt, f, { outcome: 'failed', exitCode: null, error: `${regionOf(peer)} has no record of the job it was sent`, charged: 0 }, rt.decider);
}

/**
 * Apply one answer about the attempt: progress (id, start, logs, lease), then cancel or finish as due. Returns
 * true when the peer has more log entries waiting and this attempt still wants them (ask again at once).
 */
export async function applyView(rt: ForwarderDeps, client: PeerClient, f: ForwardRef, peer: PeerRecord, view: ForwardedJobView, job: JobRecord): Promise<boolean> {
  const now = rt.clock.now();
  const terminal = TERMINAL_JOB_STATES.includes(view.state);
  // Once the peer's job has ended, an answer renews the lease only while its outputs may still come home.
  const renew = !(terminal && outputsGaveUp(rt, f.attemptId));
  const progress: ForwardProgress = {
    attemptId: f.attemptId,
    now,
    remoteJobId: view.remoteJobId,
    ...(renew ? { leaseExpiresAt: now + rt.config.forwardLeaseMs } : {}),
    logCursor: view.nextLogCursor,
    ...(view.startedAt !== null || view.state === 'running' ? { running: true } : {}),
  };
  // A peer's log lines take the attempt's budget, as a node's do: a hostile peer cannot grow this database. Written
  // before the cursor moves past them (a crash between reads them again; repeats are ignored).
  if (view.logs.length > 0) {
    const res = await rt.store.writeAttemptLogs({
      attemptId: f.attemptId,
      entries: view.logs,
      maxBytes: rt.config.attemptLogMaxBytes,
      maxEntries: rt.config.attemptLogMaxEntries,
      markerSeq: LOG_MARKER_SEQ,
      now,
    });
    if (res.accepted > 0 || res.dropped > 0) rt.logs.wake(f.jobId);
  }
  const status = await rt.store.recordForwardProgress(progress);
  const fenced = status === 'fenced';
  if (!terminal) {
    if (fenced || job.cancelRequested) {
      await cancelForwardedJob(client, peer, view.remoteJobId, callTimeoutMs(rt)).catch(async (err: unknown) => noteFailure(rt, f, asContactError(err)));
    }
    return !fenced && view.moreLogs;
  }
  // Every log line first (a fenced attempt wants none: its job has moved on), then the outputs (nor those: the
  // buyer is not served from a fenced attempt).
  if (view.moreLogs && !fenced) return true;
  const outputs = fenced ? {} : await outputsHome(rt, client, f, peer, view, job);
  if (!outputs) return false;
  const charged = Math.min(view.charged, maxBill(job));
  if (charged < view.charged) rt.logger.warn({ attemptId: f.attemptId, peerId: f.peerId, bill: view.charged, hold: maxBill(job) }, 'a peer billed more than the hold: only the hold is booked');
  // A cancel this region did not ask for (the peer's operator, its own limits) is the peer's failure: the job may run elsewhere.
  const outcome = view.state === 'cancelled' && !job.cancelRequested && !fenced ? 'failed' : (view.state as 'succeeded' | 'failed' | 'cancelled');
  const error = outcome !== view.state ? `${regionOf(peer)} cancelled it: ${view.error ?? 'no reason given'}` : view.error === null ? null : `${regionOf(peer)}: ${view.error}`;
  await finish(rt, f, { outcome, exitCode: outcome === 'failed' && view.state === 'cancelled' ? null : view.exitCode, error: error?.slice(0, 4096) ?? null, charged, ...outputs }, rt.decider);
  forgetOutputs(rt, f.attemptId);
  return false;
}

/** POST the job to the peer (a row still sending is sent again: idempotent by the attempt id) and apply the answer. */
export async function sendForward(rt: ForwarderDeps, client: PeerClient, f: ForwardRef, peer: PeerRecord, job: JobRecord): Promise<boolean> {
  let view: ForwardedJobView;
  try {
    const payment = job.payment ? { asset: job.payment.asset, capPerUnitHour: job.payment.capPerUnitHour } : null;
    view = (await sendForwardedJob(client, peer, { homeJobId: job.id, homeAttemptId: f.attemptId, spec: job.spec, payment }, callTimeoutMs(rt))).job;
    if (view.homeAttemptId !== f.attemptId) throw new PeerContactError('unreachable', `${peer.url} answered for attempt ${view.homeAttemptId}, not ${f.attemptId}`);
  } catch (err) {
    const contact = asContactError(err);
    if (contact.refusal) await refused(rt, f, peer, contact);
    else await noteFailure(rt, f, contact);
    return false;
  }
  return applyView(rt, client, f, peer, view, job);
}
