/** `gpux job submit FILE`: validate locally, submit (idempotent), then optionally wait with a progress line or follow logs. */
import { randomUUID } from 'node:crypto';
import { formatAmount, type JobPayment, type JobSpec, type JobState, type JobView, priceUnit, type QuoteJobResponse, type SubmitJobResponse, unitsPhrase } from '@gpux/protocol';
import { blobsOf, dropPendingSubmission, EncryptedLogReader, GpuxApiError, type GpuxClient, loadBuyerKeys } from '@gpux/sdk';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { summarizeJob, writeLogEntry } from '../job-format.js';
import { formatBytes, formatDuration, formatKeyValues, toJson } from '../output.js';
import { gpuxHome } from '../profile.js';
import { EXIT_INTERRUPTED, type InterruptDeps, InterruptWatch, processInterruptDeps } from '../signals.js';
import { type LoadedSpec, type LocalInput, loadSpecWithFiles } from '../spec-file.js';
import { formatRegionAdvice } from './job-explain.js';
import { encryptedSubmission, keepDataKey, serveWhileWaiting } from './keys.js';

interface SubmitFlags {
  encrypt?: boolean;
  dryRun?: boolean;
  wait?: boolean;
  follow?: boolean;
  idempotencyKey?: string;
  json?: boolean;
  coordinator?: string;
  token?: string;
}

/** What a watch knows of the job when it is interrupted: its last state seen. */
export interface WatchState {
  state: JobState;
}

/**
 * Wait for a job to finish. With `follow`, its logs stream to stdout/stderr; otherwise a TTY gets a live
 * progress line (state, elapsed, attempt) and a pipe gets one line per state change (unless quiet). `signal`
 * stops the watch (Ctrl-C: it rejects); `seen` keeps the last state seen, to say what was left running.
 */
export async function watchJob(
  io: Io,
  client: GpuxClient,
  jobId: string,
  opts: { follow?: boolean; quiet?: boolean; pollMs?: number; signal?: AbortSignal; seen?: WatchState } = {},
): Promise<JobView> {
  const signal = opts.signal ? { signal: opts.signal } : {};
  if (opts.follow) {
    const first = (await client.getJob(jobId, { eventsLimit: 1, ...signal })).job;
    if (opts.seen) opts.seen.state = first.state;
    // An encrypted job's entries are decrypted with your key (issue 13).
    const reader = first.spec.encryption ? new EncryptedLogReader(client, jobId, await loadBuyerKeys(gpuxHome(io.env))) : null;
    for await (const entry of client.followLogs(jobId, signal)) {
      // The job's own output means an attempt runs (an entry of the node or the coordinator may come before).
      if (opts.seen && entry.stream !== 'system') opts.seen.state = 'running';
      writeLogEntry(io, reader ? await reader.decrypt(entry) : entry);
    }
    return (await client.getJob(jobId, signal)).job;
  }
  const started = Date.now();
  const tty = io.err.isTTY === true && !opts.quiet;
  let last = '';
  const clearLine = () => {
    if (tty && last) io.err.write('\r\x1b[2K');
  };
  const job = await client
    .waitForJob(jobId, {
      pollMs: opts.pollMs ?? 1000,
      ...signal,
      onUpdate: (j) => {
        if (opts.seen) opts.seen.state = j.state;
        const line = `job ${j.id}: ${j.state}  ${formatDuration(Date.now() - started)}  attempt ${Math.max(1, j.attemptCount)}`;
        if (tty) io.err.write(`\r\x1b[2K${line}`);
        else if (!opts.quiet && j.state !== last) io.err.write(`${line}\n`);
        last = j.state;
      },
    })
    .finally(clearLine);
  return job;
}

/** The lines a watch stopped by Ctrl-C prints: the job goes on (and bills), and the exact command that cancels it. */
export function stillRunningMessage(jobId: string, state: JobState): string {
  const what = state === 'queued' ? 'is still queued: it will run (and bill) once a node takes it' : `is still ${state === 'assigned' ? 'starting' : 'running'} and billing`;
  return `interrupted: job ${jobId} ${what}; only this command stopped\n  cancel it:    gpux job cancel ${jobId}\n  follow it:    gpux job logs ${jobId} -f\n`;
}

/**
 * Runs a watch of `jobId` that Ctrl-C interrupts: the first Ctrl-C stops the watch, prints what is left running
 * and the cancel command and returns null (exit code 130); a second one exits at once. A finished job is returned.
 */
export async function watchUntilInterrupted(
  io: Io,
  jobId: string,
  initial: JobState,
  watch: (signal: AbortSignal, seen: WatchState) => Promise<JobView>,
  deps: InterruptDeps = processInterruptDeps,
): Promise<JobView | null> {
  const seen: WatchState = { state: initial };
  const interrupts = new InterruptWatch(deps);
  interrupts.onAgain = () => io.err.write(`\nleaving; job ${jobId} is not cancelled: gpux job cancel ${jobId}\n`);
  try {
    return await watch(interrupts.signal, seen);
  } catch (err) {
    if (!interrupts.interrupted) throw err;
    io.err.write(`\n${stillRunningMessage(jobId, seen.state)}`);
    io.exitCode = EXIT_INTERRUPTED;
    return null;
  } finally {
    interrupts.dispose();
  }
}

/**
 * Uploads each `{path, file}` input as a blob (streamed in chunks, resumed after a cut; nothing is sent for a blob
 * you already hold) and puts `{path, blob, size}` in its place (issue 13).
 */
export async function uploadLocalInputs(io: Io, client: GpuxClient, spec: JobSpec, local: readonly LocalInput[], quiet: boolean): Promise<JobSpec> {
  const inputs = [...spec.inputs];
  for (const l of local) {
    if (!quiet) io.err.write(`uploading input ${l.path} from ${l.file} (${formatBytes(l.size)})\n`);
    const blob = await blobsOf(client).uploadFile(l.file);
    inputs[l.index] = { path: l.path, blob: blob.sha256, size: blob.size };
  }
  return { ...spec, inputs };
}

/** A failed encrypted submit: a refusal for good made no job (the kept key goes); otherwise say how to retry. */
async function forgetOrKeep(io: Io, err: unknown, idempotencyKey: string): Promise<void> {
  if (err instanceof GpuxApiError && (err.code === 'IDEMPOTENCY_KEY_REUSED' || err.code === 'SPEC_INVALID')) {
    await dropPendingSubmission(gpuxHome(io.env), idempotencyKey);
    return;
  }
  io.err.write(`the job's data key is kept under idempotency key ${idempotencyKey}: retry with --idempotency-key ${idempotencyKey} to submit the same encrypted job\n`);
}

/**
 * Submits a loaded spec: encrypted end to end when asked (the data key kept first), local `{path, file}` inputs
 * uploaded as blobs. `serve()` starts serving the data key to the assigned nodes and returns its stop.
 */
export async function submitLoaded(
  io: Io,
  client: GpuxClient,
  loaded: LoadedSpec,
  opts: { encrypt?: boolean; idempotencyKey?: string | undefined; quiet: boolean },
): Promise<{ res: SubmitJobResponse; serve: () => () => Promise<void> | void }> {
  const encrypt = opts.encrypt === true || loaded.encrypted === true;
  // An encrypted job's data key is kept under the idempotency key before the submit (issue 13), so it needs one now.
  const idempotencyKey = opts.idempotencyKey ?? (encrypt ? randomUUID() : undefined);
  if (encrypt && !opts.idempotencyKey && !opts.quiet) io.err.write(`idempotency key ${idempotencyKey} (if this submit is cut short, run it again with --idempotency-key ${idempotencyKey})\n`);
  const e2e = encrypt ? await encryptedSubmission(io, client, loaded, idempotencyKey as string, opts.quiet) : null;
  const spec = e2e ? e2e.spec : loaded.localInputs.length ? await uploadLocalInputs(io, client, loaded.spec, loaded.localInputs, opts.quiet) : loaded.spec;
  const res = await client.submitJob(spec, idempotencyKey ? { idempotencyKey } : {}).catch(async (err: unknown) => {
    if (e2e) await forgetOrKeep(io, err, idempotencyKey as string);
    throw err;
  });
  // Kept under the job's id before anything else: without it nobody can release the job's key.
  if (e2e) await keepDataKey(io, idempotencyKey as string, res.job.id);
  return { res, serve: () => (e2e ? serveWhileWaiting(io, client, res.job.id, e2e.dataKey, e2e.specDigest) : () => {}) };
}

/**
 * What a submit holds in escrow, as the coordinator computes it (core holdFor) and says it in an insufficient-funds
 * error: "1.500000 USDC in escrow (cap 2.500000 USDC per GPU-hour × 2 GPUs × 1 node × 600 s)".
 */
export function holdPhrase(p: JobPayment, spec: JobSpec, runs = 1): string {
  const gpus = spec.resources.gpu.count;
  const twice = runs > 1 ? `; × ${runs} runs (replicas: 2): ${formatAmount(p.held, p.asset)} each` : '';
  return `${formatAmount(p.held * runs, p.asset)} in escrow (cap ${formatAmount(p.capPerUnitHour, p.asset)} per ${priceUnit(gpus)} × ${unitsPhrase(gpus, p.units, spec.nodes ?? 1)} × ${spec.timeoutSeconds} s${twice})`;
}

/** The dry run's answer for people: the hold, the wallet, the price range, the nodes that fit, the expected wait. */
export function formatQuote(q: QuoteJobResponse, spec: JobSpec, source: string): string {
  const p = q.payment;
  const asset = p?.asset ?? 'usdc';
  const price = (n: number) => formatAmount(n, asset);
  let range = 'no node fits, so no price yet';
  if (!q.market) range = 'none: this coordinator runs without a market (jobs are free)';
  else if (q.priceLow !== null && q.priceHigh !== null)
    range = `${q.priceLow === q.priceHigh ? price(q.priceLow) : `${formatAmount(q.priceLow, asset, { symbol: false })} to ${price(q.priceHigh)}`} per ${q.unit} (the cheapest and the dearest node that fits, as this job would pay there)`;
  let wallet: string | null = null;
  if (q.available !== null && q.holdTotal !== null)
    wallet = q.enoughFunds ? `${price(q.available)} available: enough` : `${price(q.available)} available: ${price(q.holdTotal - q.available)} short (gpux wallet deposit AMOUNT, or lower maxPricePerGpuHour or timeoutSeconds)`;
  const out = formatKeyValues([
    ['hold', p ? holdPhrase(p, spec, q.runs) : 'nothing (this coordinator runs without a market)'],
    ...(wallet ? ([['wallet', wallet]] as const) : []),
    ['price', range],
    ['nodes', `${q.nodesFitting} can take it now, ${q.nodesBusy} fit but are busy (of ${q.nodesTotal}); it needs ${q.nodesNeeded}`],
    ['wait', `${q.wait.kind === 'now' ? 'none expected' : q.wait.kind === 'recent' ? `about ${formatDuration((q.wait.seconds ?? 0) * 1000)}` : q.wait.kind === 'never' ? 'never, as specified' : 'unknown'}: ${q.wait.basis}`],
  ]);
  const change = q.suggestions.length ? `what to change:\n${q.suggestions.map((s) => `  - ${s}\n`).join('')}` : '';
  return `${source}: a valid job spec "${q.name}" (checked here and by the coordinator); dry run, nothing was submitted\n${out}${change}${formatRegionAdvice(q.regions)}`;
}

/** "held 1.500000 USDC in escrow (cap …)" after a submit; nothing without a market. */
export function heldLine(job: Pick<JobView, 'payment' | 'spec'>): string {
  return job.payment ? `held ${holdPhrase(job.payment, job.spec, job.spec.replicas === 2 ? 2 : 1)}\n` : '';
}

export function registerSubmit(job: Command, io: Io): void {
  const cmd = job
    .command('submit')
    .description('submit a job spec (YAML or JSON); validated locally first')
    .argument('<file>', 'the spec file, or - to read it from stdin')
    .option('--wait', 'wait for the job to finish; exit 0 only if it succeeded')
    .option('-f, --follow', 'stream the job logs until it finishes (implies --wait)')
    .option('--idempotency-key <key>', 'retry-safe key: a resubmission with the same key returns the first job')
    .option('--dry-run', 'check the spec here and on the coordinator and show the hold, the price range, the nodes that fit now and the expected wait; submits nothing')
    .option('--encrypt', 'end-to-end encrypt the {path, file} inputs to the assigned nodes (needs `gpux keys create`); same as `encrypted: true` in the file');
  jsonOption(connectionOptions(cmd)).action(async (file: string, flags: SubmitFlags) => {
    if (flags.dryRun && (flags.wait || flags.follow)) throw usageError('--dry-run submits nothing, so there is nothing to --wait for or --follow: drop one of them');
    const loaded = await loadSpecWithFiles(file);
    const client = clientFor(io, flags, 'buyer');
    if (flags.dryRun) {
      // Local {path, file} inputs stand in as placeholder blobs (nothing is uploaded); an encrypted job is quoted as its plain spec.
      const q = await client.quoteJob(loaded.spec);
      io.out.write(flags.json ? toJson(q) : formatQuote(q, loaded.spec, file === '-' ? 'stdin' : file));
      return;
    }
    const { res, serve } = await submitLoaded(io, client, loaded, { encrypt: flags.encrypt === true, idempotencyKey: flags.idempotencyKey, quiet: flags.json === true });
    if (!flags.wait && !flags.follow) {
      if (flags.json) io.out.write(toJson(res));
      else io.out.write(`${res.created ? `submitted job ${res.job.id} (${res.job.name}): ${res.job.state}` : `job ${res.job.id} was already submitted with this idempotency key: ${res.job.state}`}\n${heldLine(res.job)}`);
      return;
    }
    if (!flags.json) io.err.write(`${res.created ? `submitted job ${res.job.id} (${res.job.name})` : `job ${res.job.id} was already submitted with this idempotency key`}\n${heldLine(res.job)}`);
    const stopServing = serve();
    const final = await watchUntilInterrupted(io, res.job.id, res.job.state, (signal, seen) =>
      watchJob(io, client, res.job.id, { follow: flags.follow === true, quiet: flags.json === true, signal, seen }),
    ).finally(stopServing);
    if (!final) return;
    if (flags.json) io.out.write(toJson({ job: final, created: res.created }));
    else io.out.write(`${summarizeJob(final)}\n`);
    if (final.state !== 'succeeded') io.exitCode = 1;
  });
}
