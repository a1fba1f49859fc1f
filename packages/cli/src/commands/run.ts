/**
 * `gpux run IMAGE [flags] -- CMD ARGS…`: the one-liner. Builds a spec from flags (validated as a spec file is),
 * uploads `--input` files, submits, streams the logs (stdout to stdout, the rest to stderr), writes the outputs
 * to ./gpux-out/JOB_ID and exits with the job's exit code. Ctrl-C asks before leaving a job running.
 */
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { ASSETS, type Asset, type JobSpecInput, type JobView } from '@gpux/protocol';
import { blobsOf, type GpuxClient } from '@gpux/sdk';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { summarizeJob } from '../job-format.js';
import { verifyOutputDigest, writeBlobOutputs, writeOutputs } from '../job-outputs.js';
import { parseAmountArg } from '../money-format.js';
import { escapeControl } from '../output.js';
import { EXIT_INTERRUPTED, type InterruptDeps, InterruptWatch, processInterruptDeps } from '../signals.js';
import { parseSpecDocument } from '../spec-file.js';
import { formatQuote, heldLine, stillRunningMessage, submitLoaded, type WatchState, watchJob } from './job-submit.js';

interface RunFlags {
  gpus?: number;
  gpuModel?: string[];
  env?: string[];
  input?: string[];
  maxPrice?: string;
  timeout?: number;
  name?: string;
  out: string;
  cancelOnExit?: boolean;
  dryRun?: boolean;
  coordinator?: string;
  token?: string;
}

/** What `run` needs from the terminal, as a port: tests answer the question and interrupt without a TTY or signals. */
export interface RunDeps extends InterruptDeps {
  /** A terminal to ask on (stdin and stderr are TTYs), or null: then nobody is asked. */
  ask: ((question: string) => Promise<string>) | null;
}

/** Asks on the terminal; the line is read with the terminal in its normal mode, so Ctrl-C still sends SIGINT. */
function terminalAsk(io: Io): RunDeps['ask'] {
  if (process.stdin.isTTY !== true || io.err.isTTY !== true) return null;
  return (question) =>
    new Promise((resolve) => {
      const rl = createInterface({ input: process.stdin, terminal: false });
      io.err.write(question);
      rl.once('line', (line) => {
        rl.close();
        resolve(line);
      });
      rl.once('close', () => resolve(''));
    });
}

const collect = (value: string, previous: string[] = []) => [...previous, value];

/** The spec's exit code as the process's: 0..255; a failed job without one (or with 0) exits 1; cancelled 130. */
export function runExitCode(job: JobView): number {
  if (job.state === 'succeeded') return 0;
  if (job.state === 'cancelled') return EXIT_INTERRUPTED;
  const code = job.exitCode;
  return code !== null && Number.isInteger(code) && code >= 1 && code <= 255 ? code : 1;
}

/** "2.5", "2.5 USDC" or "2.5 credit" → minor units and asset. */
export function parseMaxPrice(text: string): { amount: number; asset: Asset } {
  const m = /^\s*([0-9.,\-−]+)\s*([A-Za-z]*)\s*$/.exec(text);
  const unit = m?.[2] ? m[2].toLowerCase() : undefined;
  if (unit !== undefined && !(ASSETS as readonly string[]).includes(unit)) throw usageError(`--max-price "${text}": the asset must be ${ASSETS.join(' or ')}, got "${m?.[2]}"`);
  const asset = (unit ?? 'usdc') as Asset;
  return { amount: parseAmountArg('--max-price', m?.[1] ?? text, asset), asset };
}

/** `--env K=V` sets K; `--env K` passes K from this shell (as docker run -e does). */
function parseEnv(entries: readonly string[], env: Io['env']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of entries) {
    const eq = e.indexOf('=');
    const key = eq < 0 ? e : e.slice(0, eq);
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw usageError(`--env "${e}": write KEY=VALUE (or KEY to pass it from this shell); KEY is letters, digits and _, not starting with a digit`);
    const value = eq < 0 ? env[key] : e.slice(eq + 1);
    if (value === undefined) throw usageError(`--env ${key}: ${key} is not set in this shell; write --env ${key}=VALUE`);
    out[key] = value;
  }
  return out;
}

/** The job spec the flags describe: validated and its `--input` files checked exactly as a spec file's would be. */
export function runSpec(image: string, argv: readonly string[], flags: RunFlags, env: Io['env']) {
  if (argv.length === 0) throw usageError('gpux run needs a command after the image: gpux run IMAGE [flags] -- CMD ARGS…');
  const [command, ...args] = argv as [string, ...string[]];
  const price = flags.maxPrice !== undefined ? parseMaxPrice(flags.maxPrice) : undefined;
  const inputs = (flags.input ?? []).map((file) => ({ path: basename(file), file }));
  // Typed loosely: {path, file} inputs are the spec file's form, replaced by blobs before the submit.
  const raw: Omit<JobSpecInput, 'inputs'> & { inputs: Array<{ path: string; file: string }> } = {
    name: flags.name ?? `run-${(basename(image.split('@')[0] ?? image).split(':')[0] ?? 'job').replace(/[^A-Za-z0-9_.-]/g, '-') || 'job'}`,
    image,
    command: [command],
    args,
    env: parseEnv(flags.env ?? [], env),
    resources: { gpu: { count: flags.gpus ?? 0, ...(flags.gpuModel?.length ? { models: flags.gpuModel } : {}) } },
    inputs,
    ...(flags.timeout !== undefined ? { timeoutSeconds: flags.timeout } : {}),
    ...(price ? { maxPricePerGpuHour: price.amount, asset: price.asset } : {}),
  };
  // The same checks and messages as `gpux job submit`; {path, file} inputs are resolved from the working directory.
  return parseSpecDocument(JSON.stringify(raw), 'the job gpux run built from its flags', process.cwd());
}

export function registerRun(program: Command, io: Io, deps: RunDeps = { ...processInterruptDeps, ask: terminalAsk(io) }): void {
  connectionOptions(
    program
      .command('run')
      .description('run a command in an image on the network: submit, stream its logs, write its outputs to ./gpux-out/JOB_ID, exit with its exit code')
      .usage('IMAGE [options] -- CMD [ARGS...]')
      .argument('<image>', 'container image, e.g. busybox:1.36 or pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime')
      .argument('[command...]', 'the command and its arguments, after --')
      .option('--gpus <n>', 'GPUs on one node (0: CPU-only, the default)', intArg('--gpus', 0, 64))
      .option('--gpu-model <model>', 'accepted GPU model, e.g. H100 (repeat for several)', collect)
      .option('--env <KEY=VALUE>', 'an environment variable of the job (repeat; KEY alone passes it from this shell)', collect)
      .option('--input <path>', 'upload this local file as an input: the job reads it as $GPUX_INPUTS/<its file name> (repeat)', collect)
      .option('--max-price <price>', 'the most it pays per GPU-hour (per job-hour when CPU-only), e.g. 2.5 or "2.5 USDC" (default: the market price)')
      .option('--timeout <seconds>', 'longest the job may run (default 3600)', intArg('--timeout', 1, 7 * 24 * 3600))
      .option('--name <name>', 'job name (default run-IMAGE)')
      .option('--out <dir>', 'write the outputs into DIR/JOB_ID', 'gpux-out')
      .option('--cancel-on-exit', 'Ctrl-C cancels the job without asking (default: ask on a terminal, else leave it running and print the cancel command)')
      .option('--dry-run', 'check the job and show the hold, the price range, the nodes that fit now and the expected wait; runs nothing'),
  ).action(async (image: string, command: string[], flags: RunFlags) => {
    const loaded = runSpec(image, command, flags, io.env);
    const client = clientFor(io, flags, 'buyer');
    if (flags.dryRun) {
      io.out.write(formatQuote(await client.quoteJob(loaded.spec), loaded.spec, 'gpux run'));
      return;
    }
    const { res } = await submitLoaded(io, client, loaded, { quiet: false });
    const id = res.job.id;
    io.err.write(`submitted job ${id} (${res.job.name}): ${res.job.state}; streaming its logs (Ctrl-C to stop)\n${heldLine(res.job)}`);
    const final = await followOrStop(io, client, id, res.job, flags.cancelOnExit === true, deps);
    if (!final) return;
    io.err.write(`${summarizeJob(final)}\n`);
    await fetchOutputs(io, client, final, join(flags.out, id));
    io.exitCode = runExitCode(final);
  });
}

/** Follows the logs to the end and returns the ended job; on Ctrl-C asks (or cancels, or says how to cancel) and returns null. */
async function followOrStop(io: Io, client: GpuxClient, id: string, job: JobView, cancelOnExit: boolean, deps: RunDeps): Promise<JobView | null> {
  const seen: WatchState = { state: job.state };
  const interrupts = new InterruptWatch(deps);
  interrupts.onAgain = () => io.err.write(`\nleaving; job ${id} is not cancelled: gpux job cancel ${id}\n`);
  try {
    return await watchJob(io, client, id, { follow: true, signal: interrupts.signal, seen });
  } catch (err) {
    if (!interrupts.interrupted) throw err;
  }
  try {
    io.exitCode = EXIT_INTERRUPTED;
    let cancel = cancelOnExit;
    if (!cancel && deps.ask) cancel = /^y(es)?$/i.test((await deps.ask(`\ncancel job ${id}? [y/N] `)).trim());
    if (!cancel) {
      io.err.write(`\n${stillRunningMessage(id, seen.state)}`);
      return null;
    }
    io.err.write(`\ncancelling job ${id} (Ctrl-C again leaves it running)\n`);
    const { job: after } = await client.cancelJob(id);
    io.err.write(after.state === 'cancelled' ? `job ${id} cancelled\n` : `job ${id}: cancel requested (${after.state}); its attempt stops within one heartbeat\n`);
    return null;
  } finally {
    interrupts.dispose();
  }
}

/** The outputs of an ended job into `dir` (created only when there are some); a job that never ran has none. */
async function fetchOutputs(io: Io, client: GpuxClient, job: JobView, dir: string): Promise<void> {
  const res = await client.jobResult(job.id).catch(() => null);
  if (!res || res.outputs.length === 0) return;
  if (!verifyOutputDigest(res.outputs, res.outputDigest)) throw new CliError(`the output list of job ${job.id} does not match its output digest ${res.outputDigest}`);
  const written = await writeBlobOutputs(dir, res.outputs, writeOutputs(dir, res.outputs), blobsOf(client));
  io.err.write(`wrote ${written.written.length} output file(s) to ${dir}\n`);
  if (written.skipped.length) io.err.write(`not written (the node could not upload them): ${written.skipped.map(escapeControl).join(', ')}\n`);
}
