/** SimulatedExecutor: sleeps instead of running anything (demo and benchmark nodes). Writes no outputs. */
import { type Clock, type Execution, type ExecutionOutcome, type ExecutionRequest, type Executor, type LogSink, type StopReason, systemClock } from '@gpux/core';
import { outputRootDigest } from '@gpux/protocol';

/**
 * The job's env steers it: GPUX_SIM_SECONDS (default 1) is how long it "runs", capped by the job's timeout (then it
 * fails as timed out); GPUX_SIM_EXIT_CODE (default 0) is its exit code, so replayed traces can inject failures.
 */
export class SimulatedExecutor implements Executor {
  readonly kind = 'simulated' as const;
  constructor(private readonly clock: Clock = systemClock) {}

  async start(req: ExecutionRequest, log: LogSink): Promise<Execution> {
    const startedAt = this.clock.now();
    const wanted = nonNegative(req.spec.env.GPUX_SIM_SECONDS, 1);
    const exitCode = Math.trunc(nonNegative(req.spec.env.GPUX_SIM_EXIT_CODE, 0));
    const timedOut = wanted > req.spec.timeoutSeconds;
    const seconds = Math.min(wanted, req.spec.timeoutSeconds);
    log('stdout', `simulated run of ${req.spec.command.join(' ')} on GPUs [${req.gpuIndices.join(',')}] for ${seconds} s\n`);

    let resolve!: (o: ExecutionOutcome) => void;
    const done = new Promise<ExecutionOutcome>((r) => {
      resolve = r;
    });
    const base = { outputs: [], outputDigest: outputRootDigest([]) };
    let settled = false;
    const settle = (o: Omit<ExecutionOutcome, 'outputs' | 'outputDigest' | 'durationMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...base, ...o, durationMs: this.clock.now() - startedAt });
    };
    const timer = setTimeout(() => {
      log('stdout', `simulated run finished with exit code ${timedOut ? 'none' : exitCode}\n`);
      if (timedOut) settle({ outcome: 'failed', exitCode: null, error: `timed out after ${req.spec.timeoutSeconds} s` });
      else if (exitCode === 0) settle({ outcome: 'succeeded', exitCode: 0, error: null });
      else settle({ outcome: 'failed', exitCode, error: `exited with code ${exitCode}` });
    }, seconds * 1000);

    return {
      done,
      async stop(reason: StopReason) {
        settle({ outcome: 'cancelled', exitCode: null, error: `stopped (${reason})` });
        await done;
      },
    };
  }
}

function nonNegative(v: string | undefined, fallback: number): number {
  const n = v === undefined ? Number.NaN : Number(v);
  return Number.isFinite(n) && n >= 0 ? n : fallback;
}
