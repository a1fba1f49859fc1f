/**
 * End-to-end encrypted jobs (issue 13): the coordinator relays wrapped keys and never holds a data key in clear.
 * - A node announces its X25519 key at registration, signed by its identity key (checked here, and again by the
 *   buyer's client, which trusts only the identity key the node id derives from).
 * - The buyer's client lists the attempts waiting for their data key (the job's and its audit/referee runs') and
 *   releases the key wrapped to each node; the node reads only its own attempt's key. A key pre-wrapped in the
 *   spec for a named node is used when an attempt of the job itself lands there.
 * - An attempt still without its key after GPUX_E2E_KEY_WAIT_S ends unstarted, at no cost to the node.
 * - Results: outputs carry their plaintext digest (the commitment covers it, so audits compare across nodes) and
 *   the output key wrapped to the buyer.
 */
import { type AttemptRecord, GpuxError, type JobRecord } from '@gpux/core';
import {
  type AttemptKeyResponse,
  type KeyRequest,
  type KeyRequestsResponse,
  type NodeEncryptionKey,
  type OutputFile,
  outputRootDigest,
  type ReleaseKeyResponse,
  TERMINAL_JOB_STATES,
  verifyNodeEncryptionKey,
} from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { nodeAttempt } from './agent.js';
import { visibleJob } from './jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type E2eKeysDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

const isEncrypted = (job: JobRecord) => job.spec.encryption !== undefined;
const ACTIVE = new Set(['assigned', 'running']);
/** Attempts ended per key-wait pass (the next pass takes the rest). */
const KEY_WAIT_BATCH = 100;

/** Registration: a node's encryption key must be signed by the identity key it registers with. */
export function checkNodeEncryptionKey(key: NodeEncryptionKey | undefined, identityPublicKey: string): void {
  if (key && !verifyNodeEncryptionKey(key, identityPublicKey)) {
    throw new GpuxError('REQUEST_INVALID', 'encryptionKey.signature is not the node key\'s ed25519 signature over "gpux-node-enc-key-v1\\n" + encryptionKey.publicKey: sign the key you send', {
      problems: [{ path: 'encryptionKey.signature', message: 'does not verify against publicKey' }],
    });
  }
}

export async function storeNodeEncryptionKey(rt: E2eKeysDeps, nodeId: string, key: NodeEncryptionKey | undefined): Promise<void> {
  if (key) await rt.store.setNodeEncryptionKey({ nodeId, publicKey: key.publicKey, signature: key.signature, updatedAt: rt.clock.now() });
}

/** The buyer's encrypted job and its check runs (audit, replica, referee) that rerun it with the same inputs. */
async function family(rt: E2eKeysDeps, p: Principal, jobId: string): Promise<{ root: JobRecord; jobs: JobRecord[] }> {
  const root = await visibleJob(rt, p, jobId);
  if (!isEncrypted(root)) throw new GpuxError('REQUEST_INVALID', `job ${jobId} is not encrypted (its spec has no encryption): there are no keys to release`);
  const v = await rt.store.getVerification(root.id);
  const checks = (v?.checks ?? []).filter((c) => c.kind !== 'checker').map((c) => c.jobId);
  const jobs = [root];
  for (const id of checks) {
    const j = await rt.store.getJob(id);
    if (j && isEncrypted(j)) jobs.push(j);
  }
  return { root, jobs };
}

export async function keyRequests(rt: E2eKeysDeps, p: Principal, jobId: string): Promise<KeyRequestsResponse> {
  const { root, jobs } = await family(rt, p, jobId);
  const attempts = (await Promise.all(jobs.map((j) => rt.store.listAttempts(j.id)))).flat();
  const waiting = attempts.filter((a) => a.state === 'assigned');
  const keys = await rt.store.attemptKeys(waiting.map((a) => a.id));
  const open = waiting.filter((a) => !keys.get(a.id)?.dataKey);
  const encKeys = await rt.store.nodeEncryptionKeys(open.map((a) => a.nodeId));
  const waitMs = rt.config.e2eKeyWaitSeconds * 1000;
  const requests: KeyRequest[] = [];
  for (const a of open) {
    const node = await rt.store.getNode(a.nodeId);
    if (!node) continue;
    const k = encKeys.get(a.nodeId);
    requests.push({
      jobId: a.jobId,
      attemptId: a.id,
      nodeId: a.nodeId,
      nodePublicKey: node.publicKey,
      encryptionKey: k ? { publicKey: k.publicKey, signature: k.signature } : null,
      waitingSince: a.createdAt,
      expiresAt: a.createdAt + waitMs,
    });
  }
  const outputKeys = (await rt.store.attemptKeysOfJobs(jobs.map((j) => j.id)))
    .filter((k) => k.outputKey !== null)
    .map((k) => ({ jobId: k.jobId, attemptId: k.attemptId, nodeId: k.nodeId, wrappedKey: k.outputKey as string }));
  const ended = jobs.every((j) => TERMINAL_JOB_STATES.includes(j.state));
  return { jobId: root.id, encrypted: true, ended, requests, outputKeys };
}

/** The buyer releases the data key of an assigned attempt of its encrypted job (or of one of its check runs). */
export async function releaseKey(rt: E2eKeysDeps, p: Principal, jobId: string, attemptId: string, wrappedKey: string): Promise<ReleaseKeyResponse> {
  const { jobs } = await family(rt, p, jobId);
  const a = await rt.store.getAttempt(attemptId);
  if (!a || !jobs.some((j) => j.id === a.jobId)) throw new GpuxError('ATTEMPT_NOT_FOUND', `job ${jobId} and its check runs have no attempt ${attemptId}`);
  if (!ACTIVE.has(a.state)) throw new GpuxError('CONFLICT', `attempt ${attemptId} is ${a.state}: a key is released only for an assigned attempt (see GET /v1/jobs/${jobId}/key-requests)`);
  const res = await rt.store.releaseDataKey({ attemptId, jobId: a.jobId, nodeId: a.nodeId, wrappedKey, scope: 'attempt', now: rt.clock.now() });
  rt.logger.info({ jobId: a.jobId, attemptId, nodeId: a.nodeId, stored: res.stored }, 'data key released for an attempt');
  return { attemptId, stored: res.stored };
}

async function encryptedAttempt(rt: E2eKeysDeps, nodeId: string, attemptId: string): Promise<{ a: AttemptRecord; job: JobRecord }> {
  const a = await nodeAttempt(rt, nodeId, attemptId);
  const job = await rt.store.getJob(a.jobId);
  if (!job || !isEncrypted(job)) throw new GpuxError('REQUEST_INVALID', `attempt ${attemptId} is of a job that is not encrypted: it has no keys`);
  if (!ACTIVE.has(a.state)) throw new GpuxError('NOT_FOUND', `attempt ${attemptId} is ${a.state}: its keys are no longer served`);
  return { a, job };
}

/** The node reads its own attempt's data key: released, or pre-wrapped for it in the spec (attempts of the job itself). */
export async function attemptKey(rt: E2eKeysDeps, nodeId: string, attemptId: string): Promise<AttemptKeyResponse> {
  const { a, job } = await encryptedAttempt(rt, nodeId, attemptId);
  const k = (await rt.store.attemptKeys([attemptId])).get(attemptId);
  if (k?.dataKey) return { attemptId, jobId: a.jobId, wrappedKey: k.dataKey, scope: k.dataScope === 'job' ? 'job' : 'attempt' };
  // Pre-wrapped keys name the buyer's job in their HPKE context, so they serve its own attempts only, not check runs'.
  const pre = (job.kind ?? 'buyer') === 'buyer' ? job.spec.encryption?.preWrapped?.find((w) => w.nodeId === nodeId) : undefined;
  if (pre) {
    await rt.store.releaseDataKey({ attemptId, jobId: a.jobId, nodeId, wrappedKey: pre.wrappedKey, scope: 'job', now: rt.clock.now() });
    return { attemptId, jobId: a.jobId, wrappedKey: pre.wrappedKey, scope: 'job' };
  }
  const left = Math.max(0, Math.ceil((a.createdAt + rt.config.e2eKeyWaitSeconds * 1000 - rt.clock.now()) / 1000));
  throw new GpuxError('KEY_NOT_RELEASED', `no data key released yet for attempt ${attemptId}: the buyer's client releases it (gpux job keys serve); ask again with backoff (the attempt ends unstarted in ${left} s without one)`);
}

/** The node announces its output key wrapped to the buyer (before its first log or output). */
export async function announceOutputKey(rt: E2eKeysDeps, nodeId: string, attemptId: string, wrappedKey: string): Promise<{ ok: true; stored: boolean }> {
  const { a } = await encryptedAttempt(rt, nodeId, attemptId);
  const res = await rt.store.setOutputKey({ attemptId, jobId: a.jobId, nodeId, wrappedKey, now: rt.clock.now() });
  return { ok: true, stored: res.stored };
}

function invalid(message: string, path: string): GpuxError {
  return new GpuxError('REQUEST_INVALID', message, { problems: [{ path, message }] });
}

/**
 * A result's outputDigest covers each output's plaintext digest when the output is encrypted (`encrypted.sha256`),
 * its sha256 otherwise. Encrypted jobs: every output says `encrypted`, and outputs come with the output key (stored
 * now, before the result is acknowledged; a key different from the announced one is a CONFLICT). Plain jobs: neither.
 */
export async function checkResultEncryption(rt: E2eKeysDeps, a: AttemptRecord, r: { outputs: readonly OutputFile[]; outputDigest: string; outputKey?: string | undefined }): Promise<void> {
  if (outputRootDigest(r.outputs.map((f) => ({ path: f.path, sha256: f.encrypted?.sha256 ?? f.sha256 }))) !== r.outputDigest) {
    throw invalid('outputDigest does not match the outputs (sha256 over sorted "path\\0sha256\\n" lines, with the plaintext sha256 of an encrypted output)', 'outputDigest');
  }
  const anyE2e = r.outputKey !== undefined || r.outputs.some((f) => f.encrypted !== undefined);
  const job = anyE2e || r.outputs.length > 0 ? await rt.store.getJob(a.jobId) : undefined;
  if (!job) return;
  if (!isEncrypted(job)) {
    if (anyE2e) throw invalid(`job ${a.jobId} is not encrypted: its outputs carry no encrypted field and the result no outputKey`, 'outputKey');
    return;
  }
  const plain = r.outputs.findIndex((f) => f.encrypted === undefined);
  if (plain >= 0) throw invalid(`job ${a.jobId} is encrypted: output ${r.outputs[plain]?.path} must be ciphertext with encrypted {sha256, size} of its plaintext`, `outputs.${plain}.encrypted`);
  if (r.outputs.length > 0 && r.outputKey === undefined) throw invalid(`job ${a.jobId} is encrypted: the result must carry outputKey (the output key wrapped to the buyer)`, 'outputKey');
  if (r.outputKey !== undefined) await rt.store.setOutputKey({ attemptId: a.id, jobId: a.jobId, nodeId: a.nodeId, wrappedKey: r.outputKey, now: rt.clock.now() });
}

/**
 * Assigned attempts of encrypted jobs that waited GPUX_E2E_KEY_WAIT_S without a data key end unstarted (as a
 * refusal: no cost to the node); the job retries (away from that node) or fails with the reason.
 */
export async function expireKeyWaits(rt: E2eKeysDeps, now: number): Promise<number> {
  const reason = `no data key released by the buyer within ${rt.config.e2eKeyWaitSeconds} s (run \`gpux job keys serve JOB\`, or pre-wrap keys for named nodes)`;
  let ended = 0;
  for (const w of await rt.store.keyWaitingAttempts(now - rt.config.e2eKeyWaitSeconds * 1000, KEY_WAIT_BATCH)) {
    const job = await rt.store.getJob(w.jobId);
    if (!job || !isEncrypted(job)) continue;
    const res = await rt.store.refuseAttempt({ attemptId: w.attemptId, nodeId: w.nodeId, reason, now }, rt.decider);
    if (!res.ended) continue;
    ended++;
    rt.signals.attemptEnded(w.attemptId, w.jobId, 'refused');
    rt.logger.warn({ attemptId: w.attemptId, jobId: w.jobId, nodeId: w.nodeId, jobState: res.job.state }, 'no data key released: attempt ended unstarted');
  }
  return ended;
}
