/** ProcessExecutor: runs the job's command directly on the host (no isolation; opt-in only) in a per-attempt work dir. */
import { spawn } from 'node:child_process';
import { StringDecoder } from 'node:string_decoder';
import { type Clock, type Execution, type ExecutionOutcome, type ExecutionRequest, type Executor, GpuxError, type LogSink, type StopReason, systemClock } from '@gpux/core';
import { outputRootDigest } from '@gpux/protocol';
import { dataPlaneOf, finishOutputs } from '../data/attempt-data.js';
import { checkpointsOf } from '../data/checkpoints.js';
import { DataPlaneError } from '../data/download.js';
import { jobEnv } from './env.js';
import { killGroup, terminateGroup } from './process-group.js';
import { type CheckpointSetup, collectOutputs, DEFAULT_OUTPUT_LIMITS, type OutputLimits, prepareWorkDir, removeWorkDir, type WorkDir } from './work-dir.js';

/** Files and dirs a checkpoint may hold on this executor (it has no disk quotas; the size bound is the outputs'). */
const CHECKPOINT_MAX_ENTRIES = 100_000;

export interface ProcessExecutorOptions {
  /** Must be true: this executor runs untrusted code on the host. */
  allowUnsafe: boolean;
  /** Parent dir of the per-attempt work dirs (the agent uses <dataDir>/work). */
  workRoot: string;
  /** Between SIGTERM and SIGKILL on timeout or stop. Default 5000 ms. */
  killGraceMs?: number;
  clock?: Clock;
  limits?: Partial<OutputLimits>;
  /** Where PATH and LANG come from. Default process.env. */
  hostEnv?: Record<string, string | undefined>;
}

export const UNSAFE_PROCESS_MESSAGE =
  'the process executor runs untrusted job code directly on this host, with the agent user’s permissions and no isolation; ' +
  'use it only for jobs you trust (development, a private cluster). To opt in, start the node with --allow-unsafe-process ' +
  '(or GPUX_ALLOW_UNSAFE_PROCESS=1)';

type ResolvedOptions = Required<Omit<ProcessExecutorOptions, 'limits' | 'hostEnv'>> & { limits: OutputLimits; hostEnv: Record<string, string | undefined> };

export class ProcessExecutor implements Executor {
  readonly kind = 'process' as const;
  private readonly opts: ResolvedOptions;

  constructor(opts: ProcessExecutorOptions) {
    if (opts?.allowUnsafe !== true) throw new GpuxError('FORBIDDEN', UNSAFE_PROCESS_MESSAGE);
    this.opts = {
      allowUnsafe: true,
      workRoot: opts.workRoot,
      killGraceMs: opts.killGraceMs ?? 5000,
      clock: opts.clock ?? systemClock,
      limits: { ...DEFAULT_OUTPUT_LIMITS, ...opts.limits },
      hostEnv: opts.hostEnv ?? process.env,
    };
  }

  async start(req: ExecutionRequest, log: LogSink): Promise<Execution> {
    const { clock } = this.opts;
    const startedAt = clock.now();
    let dir: WorkDir;
    const checkpoint: CheckpointSetup | undefined = req.spec.checkpoint
      ? { keeper: checkpointsOf(req), limits: { maxBytes: this.opts.limits.totalBytes, maxEntries: CHECKPOINT_MAX_ENTRIES } }
      : undefined;
    try {
      dir = await prepareWorkDir(this.opts.workRoot, req.attemptId, req.spec.inputs, dataPlaneOf(req), checkpoint);
    } catch (e) {
      if (e instanceof DataPlaneError) return finished(failedOutcome(e.message, clock.now() - startedAt));
      return finished(failedOutcome(`executor failed: could not prepare the work dir: ${(e as Error).message}`, clock.now() - startedAt));
    }
    const run = new ProcessRun(req, dir, log, this.opts, startedAt);
    if (checkpoint && dir.checkpoints && dir.checkpointArchive) checkpoint.keeper?.watch(dir.checkpoints, dir.checkpointArchive, checkpoint.limits);
    return run;
  }
}

class ProcessRun implements Execution {
  readonly done: Promise<ExecutionOutcome>;
  private resolveDone!: (o: ExecutionOutcome) => void;
  private readonly pid: number | undefined;
  private stopReason: StopReason | null = null;
  private timedOut = false;
  private spawnError: NodeJS.ErrnoException | null = null;
  private exited = false;
  private finalizing = false;
  private killer: { cancel(): void } | null = null;
  private readonly timeout: NodeJS.Timeout;

  constructor(
    private readonly req: ExecutionRequest,
    private readonly dir: WorkDir,
    private readonly log: LogSink,
    private readonly opts: ResolvedOptions,
    private readonly startedAt: number,
  ) {
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
    const [program = '', ...lead] = req.spec.command;
    const child = spawn(program, [...lead, ...req.spec.args], {
      cwd: dir.root,
      env: jobEnv(req, dir, opts.hostEnv),
      detached: true, // its own process group, so timeout/stop reach everything it started
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.pid = child.pid;
    const decoders = { stdout: new StringDecoder('utf8'), stderr: new StringDecoder('utf8') };
    child.stdout.on('data', (b: Buffer) => this.emit('stdout', decoders.stdout.write(b)));
    child.stderr.on('data', (b: Buffer) => this.emit('stderr', decoders.stderr.write(b)));
    child.on('error', (e: NodeJS.ErrnoException) => {
      this.spawnError ??= e;
      if (child.pid === undefined) void this.finalize(null, null);
    });
    child.on('exit', () => {
      this.exited = true;
      // The job is over: anything it left running in its group goes too (and releases the pipes).
      killGroup(this.pid, 'SIGKILL');
    });
    child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
      this.emit('stdout', decoders.stdout.end());
      this.emit('stderr', decoders.stderr.end());
      void this.finalize(code, signal);
    });
    this.timeout = setTimeout(() => {
      if (this.exited || this.stopReason) return;
      this.timedOut = true;
      this.killer = terminateGroup(this.pid, this.opts.killGraceMs);
    }, req.spec.timeoutSeconds * 1000);
  }

  async stop(reason: StopReason): Promise<void> {
    if (!this.exited && !this.finalizing && !this.stopReason && !this.timedOut) {
      this.stopReason = reason;
      this.killer = terminateGroup(this.pid, this.opts.killGraceMs);
    }
    await this.done;
  }

  private emit(stream: 'stdout' | 'stderr', text: string): void {
    if (text.length > 0) this.log(stream, text);
  }

  private async finalize(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    if (this.finalizing) return;
    this.finalizing = true;
    clearTimeout(this.timeout);
    this.killer?.cancel();
    const duration = () => this.opts.clock.now() - this.startedAt;
    const program = this.req.spec.command[0];
    let outcome: ExecutionOutcome;
    try {
      if (this.spawnError) {
        const why = this.spawnError.code === 'ENOENT' ? 'command not found' : this.spawnError.message;
        outcome = failedOutcome(`cannot run "${program}": ${why}`, duration());
      } else if (this.stopReason) {
        outcome = { ...failedOutcome(`stopped (${this.stopReason})`, duration()), outcome: 'cancelled' };
      } else {
        outcome = await this.outcomeOfExit(code, signal, duration);
      }
    } catch (e) {
      outcome = failedOutcome(`executor failed: ${(e as Error).message}`, duration());
    }
    // The state the program left (on exit, stop or timeout) is uploaded before the result is reported.
    await checkpointsOf(this.req)?.finish();
    await removeWorkDir(this.dir).catch(() => {});
    this.resolveDone(outcome);
  }

  private async outcomeOfExit(code: number | null, signal: NodeJS.Signals | null, duration: () => number): Promise<ExecutionOutcome> {
    // Files too large to return inline (an encrypted job's: all, encrypted) go to the blob store now, while the work dir still exists (issue 13).
    const collected = await finishOutputs(this.req, this.dir.outputs, await collectOutputs(this.dir.outputs, this.opts.limits));
    const base = { outputs: collected.outputs, outputDigest: collected.outputDigest };
    if (this.timedOut) return { ...base, outcome: 'failed', exitCode: null, error: `timed out after ${this.req.spec.timeoutSeconds} s`, durationMs: duration() };
    if (collected.error) return { ...base, outcome: 'failed', exitCode: code, error: collected.error, durationMs: duration() };
    if (code === 0) return { ...base, outcome: 'succeeded', exitCode: 0, error: null, durationMs: duration() };
    if (code !== null) return { ...base, outcome: 'failed', exitCode: code, error: `exited with code ${code}`, durationMs: duration() };
    return { ...base, outcome: 'failed', exitCode: null, error: `killed by signal ${signal ?? 'unknown'}`, durationMs: duration() };
  }
}

export function failedOutcome(error: string, durationMs: number): ExecutionOutcome {
  return { outcome: 'failed', exitCode: null, error, outputs: [], outputDigest: outputRootDigest([]), durationMs };
}

function finished(outcome: ExecutionOutcome): Execution {
  return { done: Promise.resolve(outcome), stop: async () => {} };
}
