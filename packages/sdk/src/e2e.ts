/**
 * End-to-end encrypted jobs from the SDK (issue 13). The buyer's X25519 key and each job's data key stay on
 * the buyer's machine (files 0600); the coordinator only ever sees ciphertext and wrapped keys.
 * - encryptInputFile: a local file to an encrypted blob input (streamed through a temp file, then uploaded);
 * - releaseKeys / serveKeys: answer the job's key requests (its attempts and its audit/referee runs): each node's
 *   encryption key must be signed by the identity key its node id derives from, then the data key is wrapped to it
 *   for that attempt and this very spec (e2eSpecDigest);
 * - downloadEncryptedOutputs: the result's ciphertext outputs, decrypted with the output key the node wrapped to
 *   the buyer, each plaintext checked against its digest (which the node's signed commitment covers).
 */
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type BlobInputFile,
  e2eSpecDigest,
  type JobSpec,
  type KeyRequest,
  nodeIdFromPublicKey,
  outputRootDigest,
  verifyNodeEncryptionKey,
} from '@gpux/protocol';
import { ciphertextSize, decryptFile, encryptFile, generateX25519KeyPair, unwrapKey, wrapKey, x25519Fingerprint, x25519PublicOf, type X25519KeyPair } from '@gpux/protocol/e2e';
import { blobsOf, type BlobTransferOptions, downloadOutputBlob, hashFile } from './blobs.js';
import type { GpuxClient } from './client.js';
import { GpuxClientError } from './errors.js';
import { callRoute, type TransportConfig } from './transport.js';

const cfgOf = (client: GpuxClient) => (client as unknown as { cfg: TransportConfig }).cfg;
const BUYER_KEY_FILE = 'e2e-key.json';
const JOB_KEYS_DIR = 'e2e-jobs';

async function writeSecret(path: string, value: unknown): Promise<void> {
  const part = `${path}.${randomBytes(4).toString('hex')}.part`;
  await writeFile(part, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o600 });
  await chmod(part, 0o600);
  await rename(part, path);
}

/** Make the buyer key pair in `dir` (a CLI profile dir). Refuses to replace one unless `force`: its jobs' outputs need it. */
export async function createBuyerKeys(dir: string, opts: { force?: boolean } = {}): Promise<X25519KeyPair> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, BUYER_KEY_FILE);
  if (!opts.force && (await readFile(path).catch(() => null)) !== null) {
    throw new GpuxClientError(`${path} already holds an encryption key; replacing it loses the outputs of the jobs encrypted to it (pass force to replace it anyway)`);
  }
  const keys = generateX25519KeyPair();
  await writeSecret(path, keys);
  return keys;
}

/** The buyer key pair of `dir`, checked whole (the private key gives the public one). */
export async function loadBuyerKeys(dir: string): Promise<X25519KeyPair> {
  const path = join(dir, BUYER_KEY_FILE);
  const raw = await readFile(path, 'utf8').catch(() => null);
  if (raw === null) throw new GpuxClientError(`no encryption key at ${path}: create one with \`gpux keys create\``);
  const k = JSON.parse(raw) as Partial<X25519KeyPair>;
  if (typeof k.privateKey !== 'string' || typeof k.publicKey !== 'string' || x25519PublicOf(k.privateKey) !== k.publicKey) throw new GpuxClientError(`${path} is damaged: its private key does not give its public key`);
  return { publicKey: k.publicKey, privateKey: k.privateKey };
}

/** What the buyer's client keeps per encrypted job: the data key and the digest of the spec it was released for. */
export interface JobDataKey {
  jobId: string;
  dataKey: string; // base64
  specDigest: string;
}

export const newDataKey = (): Uint8Array => new Uint8Array(randomBytes(32));

export async function saveJobDataKey(dir: string, k: JobDataKey): Promise<string> {
  const d = join(dir, JOB_KEYS_DIR);
  await mkdir(d, { recursive: true, mode: 0o700 });
  const path = join(d, `${k.jobId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  await writeSecret(path, k);
  return path;
}

/**
 * An encrypted submission before its answer (issue 13): the data key is kept under the submission's idempotency key
 * before the job is submitted, so a crash between submit and answer loses nothing: a retry with the same key finds
 * it and sends the very same encrypted spec again (encrypting anew would make another spec for the same key).
 */
export interface PendingSubmission {
  idempotencyKey: string;
  dataKey: string; // base64
  specDigest: string;
  /** The encrypted spec as submitted. */
  spec: JobSpec;
  /** What it was made from (the caller's digest of the plaintext spec and its local files): a retry from anything else is refused. */
  sourceDigest: string;
}

// Named by a digest: an idempotency key is any string; `submit-` never starts a job id.
const pendingPath = (dir: string, idempotencyKey: string) => join(dir, JOB_KEYS_DIR, `submit-${createHash('sha256').update(idempotencyKey).digest('hex')}.json`);

export async function savePendingSubmission(dir: string, p: PendingSubmission): Promise<string> {
  await mkdir(join(dir, JOB_KEYS_DIR), { recursive: true, mode: 0o700 });
  const path = pendingPath(dir, p.idempotencyKey);
  await writeSecret(path, p);
  return path;
}

/** The pending submission of this idempotency key on this machine, or null. */
export async function loadPendingSubmission(dir: string, idempotencyKey: string): Promise<(PendingSubmission & { path: string }) | null> {
  const path = pendingPath(dir, idempotencyKey);
  const raw = await readFile(path, 'utf8').catch(() => null);
  if (raw === null) return null;
  const p = JSON.parse(raw) as PendingSubmission;
  if (p.idempotencyKey !== idempotencyKey || Buffer.from(p.dataKey ?? '', 'base64').length !== 32 || typeof p.specDigest !== 'string' || e2eSpecDigest(p.spec) !== p.specDigest) {
    throw new GpuxClientError(`${path} is damaged: delete it if its submission never reached the coordinator`);
  }
  return { ...p, path };
}

/** The job is known: its data key goes to `<jobId>.json` (written whole first), then the pending file goes. */
export async function settlePendingSubmission(dir: string, idempotencyKey: string, jobId: string): Promise<string> {
  const p = await loadPendingSubmission(dir, idempotencyKey);
  if (!p) throw new GpuxClientError(`no pending submission for idempotency key ${JSON.stringify(idempotencyKey)} in ${join(dir, JOB_KEYS_DIR)}`);
  const path = await saveJobDataKey(dir, { jobId, dataKey: p.dataKey, specDigest: p.specDigest });
  await rm(p.path, { force: true });
  return path;
}

/** Forget a pending submission the coordinator refused for good (no job was made from it). */
export async function dropPendingSubmission(dir: string, idempotencyKey: string): Promise<void> {
  await rm(pendingPath(dir, idempotencyKey), { force: true });
}

export async function loadJobDataKey(dir: string, jobId: string): Promise<JobDataKey> {
  const path = join(dir, JOB_KEYS_DIR, `${jobId.replace(/[^A-Za-z0-9_-]/g, '_')}.json`);
  const raw = await readFile(path, 'utf8').catch(() => null);
  if (raw === null) throw new GpuxClientError(`no data key for job ${jobId} at ${path}: only the machine that submitted it (gpux job submit --encrypt) can release its keys`);
  const k = JSON.parse(raw) as JobDataKey;
  if (k.jobId !== jobId || Buffer.from(k.dataKey, 'base64').length !== 32) throw new GpuxClientError(`${path} is damaged`);
  return k;
}

/** Encrypt `file` under the data key into `tmpDir`, upload the ciphertext, answer the spec's encrypted blob input. */
export async function encryptInputFile(
  client: GpuxClient,
  input: { path: string; file: string },
  dataKey: Uint8Array,
  tmpDir: string,
  opts: BlobTransferOptions = {},
): Promise<BlobInputFile> {
  const plain = await hashFile(input.file);
  const sealed = join(tmpDir, `${randomBytes(8).toString('hex')}.gpxe`);
  try {
    await encryptFile(input.file, sealed, dataKey);
    const blob = await blobsOf(client).uploadFile(sealed, opts);
    if (blob.size !== ciphertextSize(plain.size)) throw new GpuxClientError(`${input.file} changed while it was encrypted: submit again`);
    return { path: input.path, blob: blob.sha256, size: blob.size, encrypted: { sha256: plain.sha256, size: plain.size } };
  } finally {
    await rm(sealed, { force: true });
  }
}

/** Why a key request is not answered (the node's key does not check out), or null. */
export function keyRequestProblem(r: KeyRequest): string | null {
  if (!r.encryptionKey) return 'the node announced no encryption key';
  if (nodeIdFromPublicKey(r.nodePublicKey) !== r.nodeId) return 'the node id does not derive from the identity key the coordinator gave';
  if (!verifyNodeEncryptionKey(r.encryptionKey, r.nodePublicKey)) return 'the encryption key is not signed by the node identity';
  return null;
}

export interface ReleaseReport {
  released: { jobId: string; attemptId: string; nodeId: string }[];
  refused: { jobId: string; attemptId: string; nodeId: string; why: string }[];
  /** The job and its check runs are over: nothing more will be asked. */
  ended: boolean;
}

/** One pass over the job's key requests: check each node's key, wrap the data key for it, release. */
export async function releaseKeys(client: GpuxClient, jobId: string, key: JobDataKey, opts: { signal?: AbortSignal; spec?: JobSpec } = {}): Promise<ReleaseReport> {
  const sig = opts.signal ? { signal: opts.signal } : {};
  if (opts.spec && e2eSpecDigest(opts.spec) !== key.specDigest) throw new GpuxClientError(`job ${jobId}'s spec is not the one its data key was kept for: refusing to release keys for it`);
  const list = await callRoute(cfgOf(client), 'keyRequests', { params: { id: jobId }, ...sig });
  const out: ReleaseReport = { released: [], refused: [], ended: list.ended };
  const dataKey = new Uint8Array(Buffer.from(key.dataKey, 'base64'));
  for (const r of list.requests) {
    const why = keyRequestProblem(r);
    const enc = r.encryptionKey;
    if (why !== null || !enc) {
      out.refused.push({ jobId: r.jobId, attemptId: r.attemptId, nodeId: r.nodeId, why: why ?? 'no key' });
      continue;
    }
    const wrappedKey = await wrapKey(dataKey, enc.publicKey, { purpose: 'input', jobId: r.jobId, attemptId: r.attemptId, recipientFingerprint: x25519Fingerprint(enc.publicKey), specDigest: key.specDigest });
    await callRoute(cfgOf(client), 'releaseKey', { params: { id: jobId, attemptId: r.attemptId }, body: { wrappedKey }, ...sig });
    out.released.push({ jobId: r.jobId, attemptId: r.attemptId, nodeId: r.nodeId });
  }
  return out;
}

/** releaseKeys every `intervalMs` until the job and its check runs end (or `signal` aborts). */
export async function serveKeys(
  client: GpuxClient,
  jobId: string,
  key: JobDataKey,
  opts: { signal?: AbortSignal; intervalMs?: number; onPass?: (r: ReleaseReport) => void } = {},
): Promise<void> {
  for (;;) {
    const r = await releaseKeys(client, jobId, key, opts.signal ? { signal: opts.signal } : {});
    opts.onPass?.(r);
    if (r.ended || opts.signal?.aborted) return;
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 2000));
  }
}

/**
 * The outputs of a finished encrypted job, decrypted into `dir` with the buyer key: the output key the node
 * wrapped for this attempt opens them; each plaintext must have the digest and size the result (and the node's
 * commitment) names. Files land whole or not at all.
 */
export async function downloadEncryptedOutputs(
  client: GpuxClient,
  jobId: string,
  dir: string,
  buyer: X25519KeyPair,
  opts: BlobTransferOptions = {},
): Promise<{ written: { path: string; size: number; target: string }[]; missing: string[] }> {
  const sig = opts.signal ? { signal: opts.signal } : {};
  const res = await client.jobResult(jobId, sig);
  const plainDigest = outputRootDigest(res.outputs.map((f) => ({ path: f.path, sha256: f.encrypted?.sha256 ?? '' })));
  if (res.outputDigest !== null && plainDigest !== res.outputDigest) throw new GpuxClientError(`the output list of job ${jobId} does not match its output digest ${res.outputDigest}`);
  const keys = await callRoute(cfgOf(client), 'keyRequests', { params: { id: jobId }, ...sig });
  const wrapped = keys.outputKeys.find((k) => k.attemptId === res.attemptId);
  if (!wrapped && res.outputs.length > 0) throw new GpuxClientError(`attempt ${res.attemptId} of job ${jobId} announced no output key: its outputs cannot be decrypted`);
  const out = { written: [] as { path: string; size: number; target: string }[], missing: [] as string[] };
  if (!wrapped) return out;
  const outputKey = await unwrapKey(wrapped.wrappedKey, buyer.privateKey, { purpose: 'output', jobId, attemptId: res.attemptId, recipientFingerprint: x25519Fingerprint(buyer.publicKey) });
  await mkdir(dir, { recursive: true });
  const blobs = blobsOf(client);
  for (const f of res.outputs) {
    if (!f.encrypted) throw new GpuxClientError(`output ${JSON.stringify(f.path)} of an encrypted job is not marked encrypted`);
    if (f.content === undefined && f.blob !== true) {
      out.missing.push(f.path);
      continue;
    }
    const target = join(dir, f.path);
    if (!target.startsWith(join(dir, '/')) || f.path.split('/').includes('..')) throw new GpuxClientError(`refusing to write output ${JSON.stringify(f.path)} outside ${dir}`);
    await mkdir(join(target, '..'), { recursive: true });
    const sealed = `${target}.gpxe.part`;
    try {
      if (f.content !== undefined) await writeFile(sealed, Buffer.from(f.content, 'base64'));
      else await downloadOutputBlob(blobs, f, sealed, opts);
      await decryptFile(sealed, target, outputKey);
      const got = await hashFile(target);
      if (got.sha256 !== f.encrypted.sha256 || got.size !== f.encrypted.size) {
        await rm(target, { force: true });
        throw new GpuxClientError(`output ${JSON.stringify(f.path)} decrypted to other bytes than the result names (sha256 ${got.sha256}, not ${f.encrypted.sha256})`);
      }
      out.written.push({ path: f.path, size: got.size, target });
    } finally {
      await rm(sealed, { force: true });
    }
  }
  return out;
}
