/**
 * The node agent's attempt lifecycle calls: heartbeat, start, result. The caller's node id is already
 * verified. Registration is register.ts; logs and events are attempt-writes.ts.
 */
import { type AttemptRecord, GpuxError, type JobRecord } from '@gpux/core';
import {
  type HeartbeatResponse,
  type OutputFile,
  outputRootDigest,
  type RefuseAttemptResponse,
  type ResultReport,
  type ResultResponse,
  type StartAttemptResponse,
  sha256Hex,
} from '@gpux/protocol';
import type { z } from 'zod';
import type { Needs } from '../runtime.js';

/** HeartbeatResponse.cancel's bound. */
const MAX_CANCELS = 1024;
import { heartbeatChallenge } from './challenges.js';
import { checkCommitment, handleEquivocation, takeOutBannedOfStep } from './commitments.js';
import { checkResultEncryption } from './e2e-keys.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type AgentDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

/**
 * Cancels for attempts the agent lists but that are not active here are sealed too (50 µs each): at most this
 * many per heartbeat, so a node listing a thousand made-up ids cannot make every heartbeat cost 50 ms of
 * signing. An honest agent holds a handful; the rest come with the next heartbeat.
 */
export const MAX_STRAY_CANCELS = 64;

/** The attempt, if it belongs to this node. */
export async function nodeAttempt(rt: AgentDeps, nodeId: string, attemptId: string): Promise<AttemptRecord> {
  const a = await rt.store.getAttempt(attemptId);
  if (!a || a.nodeId !== nodeId) throw new GpuxError('ATTEMPT_NOT_FOUND', `no attempt ${attemptId} on node ${nodeId}`);
  return a;
}

/**
 * Renew the node and its leases. `cancel` = attempts whose job has a cancel request, plus attempts the
 * agent still holds that are no longer active here (lost, or never its own). A running attempt the agent
 * no longer reports, past a lease of grace since it started, is ended as failed: the agent restarted and
 * its heartbeats would otherwise keep that lease alive forever.
 */
export async function heartbeat(rt: AgentDeps, nodeId: string, held: readonly string[]): Promise<HeartbeatResponse> {
  const { store, config } = rt;
  const now = rt.clock.now();
  const { cancelAttemptIds, active } = await store.heartbeat(nodeId, now, now + config.leaseTtlMs);
  if (rt.offlineNodes.has(nodeId)) {
    await rt.signals.nodeChanged(nodeId);
    rt.logger.info({ nodeId }, 'node back online');
    rt.signals.kick();
  } else if (rt.signals.backlog() && rt.index.usage(nodeId).activeAttempts === 0) {
    rt.signals.kick();
  }
  const activeIds = new Set(active.map((a) => a.id));
  const heldIds = new Set(held);
  const cancel = new Set(cancelAttemptIds);
  let stray = 0;
  for (const id of heldIds) {
    if (activeIds.has(id) || cancel.has(id)) continue;
    if (++stray > MAX_STRAY_CANCELS) break;
    cancel.add(id);
  }
  for (const a of active) {
    if (!heldIds.has(a.id) && unheldTooLong(a, now, config.leaseTtlMs)) await abandon(rt, a, now);
  }
  // A pending proof-of-hardware challenge rides on the heartbeat (issue 12).
  const challenge = await heartbeatChallenge(rt, nodeId);
  const sealedCancels = [...cancel].slice(0, MAX_CANCELS).map((id) => rt.signer.sealCancel(id, nodeId));
  return { cancel: sealedCancels, heartbeatIntervalMs: config.heartbeatIntervalMs, serverTime: now, ...(challenge && { challenge }) };
}

/**
 * An attempt the node's heartbeats do not list for a whole lease: running since before that (the agent
 * restarted), or assigned before that and never taken up (the agent dropped it, e.g. while the coordinator
 * was down). Heartbeats renew every active lease of the node, so without this it would never expire.
 */
function unheldTooLong(a: AttemptRecord, now: number, leaseTtlMs: number): boolean {
  if (a.state === 'running') return a.startedAt !== null && a.startedAt < now - leaseTtlMs;
  return a.createdAt < now - leaseTtlMs;
}

async function abandon(rt: AgentDeps, a: AttemptRecord, now: number): Promise<void> {
  const error = a.state === 'running' ? 'the node no longer runs this attempt (agent restarted?)' : 'the node never took up this assignment';
  const res = await rt.store.finishAttempt(
    { attemptId: a.id, nodeId: a.nodeId, outcome: 'failed', exitCode: null, error, outputDigest: outputRootDigest([]), outputs: [], metrics: { durationMs: now - (a.startedAt ?? now) }, now },
    rt.decider,
  );
  if (!res.duplicate) rt.signals.attemptEnded(a.id, a.jobId, 'failed');
  rt.logger.warn({ nodeId: a.nodeId, attemptId: a.id, jobId: a.jobId, jobState: res.job.state }, error);
}

/** POST /v1/agent/attempts/:id/start, and each start a work exchange carries (work.ts). */
export async function startAttempt(rt: Needs<'clock' | 'delivery' | 'logger' | 'signer' | 'store'>, nodeId: string, attemptId: string): Promise<StartAttemptResponse> {
  const { job } = await rt.store.startAttempt(attemptId, nodeId, rt.clock.now());
  rt.delivery.forget(attemptId);
  rt.logger.debug({ nodeId, attemptId, jobId: job.id }, 'attempt started');
  return job.cancelRequested ? { ok: true, cancel: true, cancelSeal: rt.signer.sealCancel(attemptId, nodeId).seal } : { ok: true, cancel: false };
}

/**
 * POST /v1/agent/attempts/:id/refuse (issue 19): the node could not verify an assignment (no seal, an unknown
 * key, altered on the way). Still assigned and this node's: ended with the reason and requeued, at no cost to
 * the node. Anything else (started, over, another node's) is answered ended: false and changes nothing.
 */
export async function refuseAttempt(rt: AgentDeps, nodeId: string, attemptId: string, reason: string): Promise<RefuseAttemptResponse> {
  const res = await rt.store.refuseAttempt({ attemptId, nodeId, reason, now: rt.clock.now() }, rt.decider);
  if (!res.ended) return { ok: true, ended: false };
  rt.signals.attemptEnded(attemptId, res.job.id, 'refused');
  rt.logger.warn({ nodeId, attemptId, jobId: res.job.id, reason, jobState: res.job.state }, 'the node refused an assignment it could not verify');
  return { ok: true, ended: true };
}

/**
 * Inline output content must be the bytes its entry names (size and sha256): the commitment covers the
 * entries, so content that differs would let a node show the buyer (and a checker) other bytes than it
 * committed to.
 */
function checkInlineOutputs(outputs: readonly OutputFile[]): void {
  for (const [i, f] of outputs.entries()) {
    if (f.content === undefined) continue;
    const bytes = Buffer.from(f.content, 'base64');
    if (bytes.length !== f.size || sha256Hex(bytes) !== f.sha256) {
      throw new GpuxError('REQUEST_INVALID', `output ${f.path}: its inline content is not the ${f.size} bytes with sha256 ${f.sha256} that its entry names`, {
        problems: [{ path: `outputs.${i}.content`, message: 'does not match size and sha256' }],
      });
    }
  }
}

/**
 * Issue 13: an output sent without content is a blob output when a completed upload of THIS attempt has its
 * sha256 and size; the bytes then become the buyer's (a hold, in case they dropped it meanwhile). A node's own
 * `blob` field is never believed.
 */
async function markBlobOutputs(rt: AgentDeps, a: AttemptRecord, outputs: readonly OutputFile[]): Promise<OutputFile[]> {
  const plain = outputs.map(({ blob: _claimed, ...f }) => f);
  if (plain.every((f) => f.content !== undefined)) return plain;
  const uploaded = new Set((await rt.store.completedOutputUploads(a.id)).map((u) => `${u.sha256}/${u.size}`));
  const marked: OutputFile[] = plain.map((f) => (f.content === undefined && uploaded.has(`${f.sha256}/${f.size}`) ? { ...f, blob: true } : f));
  const blobs = marked.filter((f) => f.blob).map((f) => ({ sha256: f.sha256, size: f.size }));
  const job = blobs.length > 0 ? await rt.store.getJob(a.jobId) : undefined;
  if (job) await rt.store.grantBlobHolds(job.buyerId, blobs, rt.clock.now());
  return marked;
}

/** The signed result commitment. Same report twice: duplicate; a different one for an ended attempt: 409. */
export async function finishAttempt(rt: AgentDeps, nodeId: string, attemptId: string, r: z.output<typeof ResultReport>): Promise<ResultResponse> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  // outputDigest (over plaintext digests of encrypted outputs), and the output key of an encrypted job (issue 13).
  await checkResultEncryption(rt, a, r);
  checkInlineOutputs(r.outputs);
  const commitment = await checkCommitment(rt, nodeId, a, r);
  const outputs = await markBlobOutputs(rt, a, r.outputs);
  const input = { attemptId, nodeId, outcome: r.outcome, exitCode: r.exitCode, error: r.error, outputDigest: r.outputDigest, outputs, metrics: r.metrics, now: rt.clock.now() };
  let res: Awaited<ReturnType<typeof rt.store.finishAttempt>>;
  try {
    // The audit draw is taken now, after the commitment arrived: the node cannot know it when it signs.
    res = await rt.store.finishAttempt({ ...input, commitment, commitmentSignature: r.commitmentSignature, auditDraw: rt.random.next() }, rt.decider);
  } catch (e) {
    // Still 409; a different valid commitment for an attempt that ended with one is also equivocation.
    if (!(e instanceof GpuxError && e.code === 'CONFLICT')) throw e;
    const ev = await handleEquivocation(rt, nodeId, attemptId, commitment, r.commitmentSignature).catch((err: unknown) => {
      rt.logger.error({ err, nodeId, attemptId }, 'recording equivocation evidence failed');
      return null;
    });
    if (!ev) throw e;
    throw new GpuxError('CONFLICT', `${e.message}. Two different signed commitments for one attempt are equivocation: evidence ${ev.id} recorded, the node's stake slashed and the node banned`);
  }
  if (!res.duplicate) {
    rt.signals.attemptEnded(attemptId, a.jobId, r.outcome);
    rt.logger.info({ nodeId, attemptId, jobId: a.jobId, outcome: r.outcome, jobState: res.job.state }, 'attempt finished');
    await afterCheckRun(rt, res.job);
  }
  return { accepted: true, duplicate: res.duplicate };
}

/** A check run (audit, referee) that ended may have banned a node in the same transaction: take it out now. */
async function afterCheckRun(rt: AgentDeps, job: JobRecord): Promise<void> {
  if ((job.kind !== 'audit' && job.kind !== 'referee' && job.kind !== 'checker') || !job.checkOf) return;
  const v = await rt.store.getVerification(job.checkOf);
  if (v) await takeOutBannedOfStep(rt, v);
}
