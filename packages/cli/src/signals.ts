/** Waiting for Ctrl-C / SIGTERM so long-running commands can stop their components cleanly. */

/** Resolves on the first SIGINT or SIGTERM; a second one forces the process out. */
export function waitForShutdown(onForce: () => void = () => process.exit(130)): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let received = false;
    const handler = (signal: NodeJS.Signals) => {
      if (received) return onForce();
      received = true;
      resolve(signal);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
}

/** Subscribes to Ctrl-C (SIGINT) and SIGTERM; returns the unsubscribe. A port, so tests can interrupt without signals. */
export type InterruptSource = (onSignal: (signal: NodeJS.Signals) => void) => () => void;

export const processInterrupts: InterruptSource = (onSignal) => {
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
};

export interface InterruptDeps {
  listen: InterruptSource;
  /** Leaves the process at once (a second Ctrl-C). */
  exit: (code: number) => void;
}

export const processInterruptDeps: InterruptDeps = { listen: processInterrupts, exit: (code) => process.exit(code) };

/** The exit code of a command stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130;

/**
 * While a command watches a job: the first Ctrl-C aborts `signal` (the watch stops, the command says what is left
 * running); a second one runs `onAgain` (a last word) and exits at once. `dispose` gives the signals back.
 */
export class InterruptWatch {
  private readonly controller = new AbortController();
  private received: NodeJS.Signals | null = null;
  private readonly off: () => void;
  /** Printed before a second Ctrl-C leaves: what is still running, how to cancel it. */
  onAgain: () => void = () => {};

  constructor(private readonly deps: InterruptDeps = processInterruptDeps) {
    this.off = deps.listen((signal) => {
      if (this.received) {
        this.onAgain();
        this.deps.exit(EXIT_INTERRUPTED);
        return;
      }
      this.received = signal;
      this.controller.abort(new Error(`interrupted by ${signal}`));
    });
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** The signal that interrupted, or null. */
  get interrupted(): NodeJS.Signals | null {
    return this.received;
  }

  dispose(): void {
    this.off();
  }
}
