/** An Executor that runs nothing: every attempt succeeds at once with no outputs, so the bench measures the system. */
import type { Execution, ExecutionOutcome, ExecutionRequest, Executor, LogSink } from '@gpux/core';
import { outputRootDigest } from '@gpux/protocol';

/** The root digest of an empty output set (sha256 of the empty string). */
export const EMPTY_OUTPUT_DIGEST = outputRootDigest([]);

export class NoopExecutor implements Executor {
  // The agent advertises executors by kind; 'simulated' is the kind meant for demo and benchmark nodes.
  readonly kind = 'simulated' as const;
  /** Attempts started so far (all nodes using this instance). */
  started = 0;
  /** While held, runs end only at release (stages-cpu.ts: starts and results measured apart). */
  private gate: { done: Promise<void>; open(): void } | null = null;

  hold(): void {
    if (this.gate) return;
    let open = () => {};
    const done = new Promise<void>((resolve) => {
      open = resolve;
    });
    this.gate = { done, open };
  }

  release(): void {
    this.gate?.open();
    this.gate = null;
  }

  async start(_req: ExecutionRequest, _log: LogSink): Promise<Execution> {
    this.started++;
    const outcome: ExecutionOutcome = { outcome: 'succeeded', exitCode: 0, error: null, outputs: [], outputDigest: EMPTY_OUTPUT_DIGEST, durationMs: 0 };
    const done = this.gate ? this.gate.done.then(() => outcome) : Promise.resolve(outcome);
    return { done, stop: async () => {} };
  }
}
