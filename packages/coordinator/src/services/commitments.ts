/**
 * Signed result commitments on the coordinator (issue 11, TRUST.md layer 2): a result report's commitment
 * must name the route's attempt, its job and the calling node, repeat the report's output digest, exit
 * code and metrics, commit to the job's inputs as the coordinator holds them, and carry the node key's
 * signature. Two different valid commitments for one ended attempt are equivocation: evidence, the
 * node's whole stake to the treasury, and a ban.
 */
import { type AttemptRecord, type EquivocationRecord, GpuxError, type VerificationRecord } from '@gpux/core';
import { canonicalJson, inputRootDigest, metricsDigest, outputRootDigest, type ResultCommitment, type ResultReport, verifyCommitment } from '@gpux/protocol';
import type { z } from 'zod';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type CommitmentsDeps = Needs<'clock' | 'decider' | 'logger' | 'metrics' | 'nodeKeys' | 'signals' | 'store' | 'work'>;

const EXPIRE_BATCH = 1000;

const invalid = (path: string, message: string): never => {
  throw new GpuxError('REQUEST_INVALID', `result commitment refused: ${path} ${message}`, { problems: [{ path, message }] });
};

/**
 * Check the report's commitment and signature; returns the canonical JSON to store. Nothing is stored on
 * a refusal (400 REQUEST_INVALID, the field in problems).
 */
export async function checkCommitment(rt: CommitmentsDeps, nodeId: string, a: AttemptRecord, r: z.output<typeof ResultReport>): Promise<string> {
  const c: ResultCommitment = r.commitment;
  if (c.attemptId !== a.id) invalid('commitment.attemptId', `is ${c.attemptId}, but the report is for attempt ${a.id}`);
  if (c.jobId !== a.jobId) invalid('commitment.jobId', `is ${c.jobId}, but attempt ${a.id} belongs to job ${a.jobId}`);
  if (c.nodeId !== nodeId) invalid('commitment.nodeId', `is ${c.nodeId}, but the report comes from node ${nodeId}`);
  if (c.outputDigest !== r.outputDigest) invalid('commitment.outputDigest', 'does not match the report\'s outputDigest');
  if (c.exitCode !== r.exitCode) invalid('commitment.exitCode', `is ${c.exitCode}, but the report's exitCode is ${r.exitCode}`);
  if (c.metricsDigest !== metricsDigest(r.metrics)) invalid('commitment.metricsDigest', 'is not the sha256 of the canonical (sorted-key JSON) metrics of the report');
  const job = await rt.store.getJob(a.jobId);
  if (!job) throw new GpuxError('ATTEMPT_NOT_FOUND', `no job ${a.jobId} for attempt ${a.id}`);
  if (c.inputDigest !== inputRootDigest(job.spec.inputs ?? [])) {
    invalid('commitment.inputDigest', 'does not match the job\'s inputs (sha256 over sorted "path\\0sha256\\n" lines: an inline input by its decoded bytes, a blob input by its blob digest, a URL input by its expected sha256)');
  }
  if (job.spec.encryption) {
    if (c.ciphertextDigest !== outputRootDigest(r.outputs)) {
      invalid('commitment.ciphertextDigest', 'of an encrypted job must be the root digest over the reported outputs\' ciphertext sha256 (sorted "path\\0sha256\\n" lines)');
    }
  } else if (c.ciphertextDigest !== undefined) {
    invalid('commitment.ciphertextDigest', 'is only for encrypted jobs; leave it out');
  }
  // The key the request's signature was checked with (cached: a node's key never changes, its id derives from it).
  const key = await rt.nodeKeys.get(nodeId);
  if (!key || !verifyCommitment(c, r.commitmentSignature, key)) {
    invalid('commitmentSignature', `does not verify against node ${nodeId}'s key over the canonical commitment ("gpux-commitment-v1\\n" + sorted-key JSON)`);
  }
  return canonicalJson(c);
}

/**
 * After a CONFLICT for an ended attempt: if its stored commitment differs from this (verified) one, record
 * the equivocation and ban the node here too (refused from its next request, out of the index, its active
 * attempts ended as lost so their jobs retry elsewhere).
 */
export async function handleEquivocation(rt: CommitmentsDeps, nodeId: string, attemptId: string, commitment: string, signature: string): Promise<EquivocationRecord | null> {
  const now = rt.clock.now();
  const ev = await rt.store.recordEquivocation({ attemptId, nodeId, commitment, signature, now });
  if (!ev) return null;
  await takeOutBannedNode(rt, nodeId, now);
  rt.logger.warn({ nodeId, attemptId, evidenceId: ev.id, slashed: ev.slashed }, 'node equivocated: two different signed commitments for one attempt; stake slashed, node banned');
  return ev;
}

/**
 * A node the store banned (equivocation, a confirmed wrong result): refused from its next request, out of
 * the index, its active attempts ended as lost so their jobs retry elsewhere.
 */
export async function takeOutBannedNode(rt: CommitmentsDeps, nodeId: string, now: number): Promise<void> {
  rt.nodeKeys.markRemoved(nodeId, now);
  await rt.signals.nodeChanged(nodeId);
  rt.work.wake(nodeId);
  for (;;) {
    const lost = await rt.store.expireLeases(now, rt.decider, EXPIRE_BATCH);
    for (const l of lost) {
      rt.metrics.leaseExpiries.inc();
      rt.signals.attemptEnded(l.attemptId, l.jobId, 'lost');
    }
    if (lost.length < EXPIRE_BATCH) break;
  }
}

/**
 * After a verification step moved (a check run ended, a window pass): the nodes it banned leave the index
 * now. The store wrote the ban; a banned node reads back removed.
 */
export async function takeOutBannedOfStep(rt: CommitmentsDeps, v: VerificationRecord): Promise<void> {
  if (v.state !== 'failed' && v.checks.every((c) => c.outputDigest === null || (c.outputDigest === v.outputDigest && c.exitCode === v.exitCode))) return;
  const now = rt.clock.now();
  for (const nodeId of new Set([v.nodeId, ...v.checks.map((c) => c.nodeId).filter((n): n is string => n !== null)])) {
    const node = await rt.store.getNode(nodeId);
    if (node?.removedAt !== undefined && node.removedAt !== null) {
      await takeOutBannedNode(rt, nodeId, now);
      rt.logger.warn({ nodeId, jobId: v.jobId, label: v.label }, 'node banned: a referee-confirmed wrong result; stake slashed');
    }
  }
}
