/**
 * End-to-end encryption from the CLI (issue 13):
 * - `gpux keys create|show`: the buyer's X25519 key pair in the profile dir ($GPUX_HOME/e2e-key.json, 0600);
 *   nodes encrypt outputs and logs of your encrypted jobs to it.
 * - `gpux job keys release|serve ID`: answer the job's key requests (its attempts, audits and referee runs) with
 *   the data key kept at submission ($GPUX_HOME/e2e-jobs/ID.json, 0600), after checking each node's key is
 *   signed by the identity its node id derives from.
 * - submitEncrypted: `gpux job submit --encrypt` (or `encrypted: true` in the spec file).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eSpecDigest, isBlobInput, type JobSpec, sha256Hex } from '@gpux/protocol';
import {
  createBuyerKeys,
  encryptInputFile,
  type GpuxClient,
  loadBuyerKeys,
  loadJobDataKey,
  loadPendingSubmission,
  newDataKey,
  type ReleaseReport,
  releaseKeys,
  savePendingSubmission,
  serveKeys,
  settlePendingSubmission,
} from '@gpux/sdk';
import type { Command } from 'commander';
import { x25519Fingerprint } from '@gpux/protocol/e2e';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { formatBytes, formatKeyValues, type OutputFlags, outputOption, render, toJson } from '../output.js';
import { gpuxHome } from '../profile.js';
import type { LoadedSpec, LocalInput } from '../spec-file.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

export function registerKeys(program: Command, io: Io): void {
  const keys = program.command('keys').description('your end-to-end encryption key (encrypted jobs)');
  jsonOption(keys.command('create').description('create your X25519 key pair in the profile dir (0600)').option('--force', 'replace an existing key (the outputs of jobs encrypted to it become unreadable)')).action(
    async (flags: { force?: boolean; json?: boolean }) => {
      const k = await createBuyerKeys(gpuxHome(io.env), { force: flags.force === true });
      const shown = { publicKey: k.publicKey, fingerprint: x25519Fingerprint(k.publicKey), file: join(gpuxHome(io.env), 'e2e-key.json') };
      io.out.write(flags.json ? toJson(shown) : formatKeyValues([['public key', shown.publicKey], ['fingerprint', shown.fingerprint], ['file', `${shown.file} (keep it: back it up)`]]));
    },
  );
  outputOption(keys.command('show').description('your public encryption key and its fingerprint')).action(async (flags: OutputFlags) => {
    const k = await loadBuyerKeys(gpuxHome(io.env));
    const shown = { publicKey: k.publicKey, fingerprint: x25519Fingerprint(k.publicKey) };
    render(io, flags, shown, () => formatKeyValues([['public key', shown.publicKey], ['fingerprint', shown.fingerprint]]));
  });
}

function writeRelease(io: Io, r: ReleaseReport, json: boolean): void {
  if (json) return void io.out.write(toJson(r));
  for (const x of r.released) io.err.write(`released the data key to node ${x.nodeId} for attempt ${x.attemptId}${x.jobId ? ` (job ${x.jobId})` : ''}\n`);
  for (const x of r.refused) io.err.write(`NOT released to node ${x.nodeId} for attempt ${x.attemptId}: ${x.why}\n`);
}

/** `gpux job keys release|serve ID`. */
export function registerJobKeys(job: Command, io: Io): void {
  const keys = job.command('keys').description('release the data key of an encrypted job to its assigned nodes');
  jsonOption(connectionOptions(keys.command('release').description('answer the key requests waiting now, once').argument('<id>', 'job id'))).action(async (id: string, flags: Flags) => {
    const client = clientFor(io, flags, 'buyer');
    const r = await releaseKeys(client, id, await loadJobDataKey(gpuxHome(io.env), id));
    writeRelease(io, r, flags.json === true);
    if (!flags.json && r.released.length + r.refused.length === 0) io.err.write(r.ended ? `job ${id} is over: no key requests\n` : `no attempt of job ${id} waits for a key now\n`);
    if (r.refused.length > 0) io.exitCode = 1;
  });
  connectionOptions(keys.command('serve').description('answer key requests until the job and its audits end').argument('<id>', 'job id').option('--interval-ms <ms>', 'how often to look (200-3600000)', intArg('--interval-ms', 200, 3_600_000), 2000)).action(
    async (id: string, flags: Flags & { intervalMs: number }) => {
      const client = clientFor(io, flags, 'buyer');
      await serveKeys(client, id, await loadJobDataKey(gpuxHome(io.env), id), { intervalMs: flags.intervalMs, onPass: (r) => writeRelease(io, r, false) });
      io.err.write(`job ${id} is over: no more key requests\n`);
    },
  );
}

/**
 * Encrypt each `{path, file}` input under a fresh data key (streamed to a temp file), upload the ciphertext, and
 * answer the spec with encryption.buyerKey and encrypted blob inputs, plus the data key to keep once submitted.
 */
export async function encryptSpec(io: Io, client: GpuxClient, spec: JobSpec, local: readonly LocalInput[], quiet: boolean): Promise<{ spec: JobSpec; dataKey: Uint8Array; specDigest: string }> {
  const buyer = await loadBuyerKeys(gpuxHome(io.env));
  const localIdx = new Set(local.map((l) => l.index));
  const plain = spec.inputs.map((f, i) => ({ f, i })).find(({ f, i }) => !localIdx.has(i) || !isBlobInput(f));
  if (plain) throw usageError(`an encrypted job's inputs must be local files ({path, file}), which gpux encrypts before upload; ${plain.f.path} is not`);
  const dataKey = newDataKey();
  const tmp = await mkdtemp(join(tmpdir(), 'gpux-encrypt-'));
  try {
    const inputs = [...spec.inputs];
    for (const l of local) {
      if (!quiet) io.err.write(`encrypting and uploading input ${l.path} from ${l.file} (${formatBytes(l.size)})\n`);
      inputs[l.index] = await encryptInputFile(client, { path: l.path, file: l.file }, dataKey, tmp);
    }
    const { preWrapped: _none, ...rest } = spec.encryption ?? {};
    const out: JobSpec = { ...spec, inputs, encryption: { ...rest, buyerKey: buyer.publicKey } };
    return { spec: out, dataKey, specDigest: e2eSpecDigest(out) };
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}

export interface EncryptedSubmission {
  spec: JobSpec;
  dataKey: Uint8Array;
  specDigest: string;
}

/**
 * The encrypted spec of a submission, its data key kept (0600) under the idempotency key before anything is
 * submitted: a crash between the submit and its answer would otherwise lose the key, and the job could never run.
 * A retry with the same key finds it and submits the very same spec (a new encryption would be another spec).
 */
export async function encryptedSubmission(io: Io, client: GpuxClient, loaded: LoadedSpec, idempotencyKey: string, quiet: boolean): Promise<EncryptedSubmission> {
  const home = gpuxHome(io.env);
  const sourceDigest = submissionSource(loaded);
  const pending = await loadPendingSubmission(home, idempotencyKey);
  if (pending) {
    if (pending.sourceDigest !== sourceDigest) {
      throw new CliError(
        `idempotency key ${JSON.stringify(idempotencyKey)} was used on this machine for another spec or other input files (${pending.path}): use another --idempotency-key, or delete that file if its submission never reached the coordinator`,
      );
    }
    if (!quiet) io.err.write(`resuming the encrypted submission kept under this idempotency key (${pending.path})\n`);
    return { spec: pending.spec, dataKey: new Uint8Array(Buffer.from(pending.dataKey, 'base64')), specDigest: pending.specDigest };
  }
  const e2e = await encryptSpec(io, client, loaded.spec, loaded.localInputs, quiet);
  await savePendingSubmission(home, { idempotencyKey, dataKey: Buffer.from(e2e.dataKey).toString('base64'), specDigest: e2e.specDigest, spec: e2e.spec, sourceDigest });
  return e2e;
}

/** The submitted job is known: its data key moves to $GPUX_HOME/e2e-jobs/ID.json, where `gpux job keys` finds it. */
export function keepDataKey(io: Io, idempotencyKey: string, jobId: string): Promise<string> {
  return settlePendingSubmission(gpuxHome(io.env), idempotencyKey, jobId);
}

/** What a submission was made from: the plaintext spec and its local files (where and how large; not their bytes). */
function submissionSource(loaded: LoadedSpec): string {
  return sha256Hex(JSON.stringify({ spec: loaded.spec, files: loaded.localInputs.map((l) => [l.index, l.path, l.file, l.size]) }));
}

/** While `--wait` watches an encrypted job, release keys in the background; the returned function stops it. */
export function serveWhileWaiting(io: Io, client: GpuxClient, jobId: string, dataKey: Uint8Array, specDigest: string): () => Promise<void> {
  const stop = new AbortController();
  const key = { jobId, dataKey: Buffer.from(dataKey).toString('base64'), specDigest };
  const done = serveKeys(client, jobId, key, { signal: stop.signal, intervalMs: 1000, onPass: (r) => writeRelease(io, r, false) }).catch((err: unknown) => {
    if (!stop.signal.aborted) io.err.write(`releasing keys failed: ${(err as Error).message} (run \`gpux job keys serve ${jobId}\`)\n`);
  });
  return async () => {
    stop.abort();
    await done;
  };
}
