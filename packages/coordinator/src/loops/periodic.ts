/**
 * The one helper every background pass runs on (issue 14): every `everyMs`, and soon after a kick; never two at
 * once (a kick during a pass asks for one more after it); a pass that reports more work (returns true) runs again
 * at once; a failure is logged and retried on the next tick; stop() waits for the pass in flight. By default only
 * on the replica that leads (rt.leads()).
 */
import type { Runtime } from '../runtime.js';

export interface PeriodicTaskSpec {
  /** For the log: "<what> failed". */
  what: string;
  everyMs: number;
  /** One pass. true: it did something and more may be waiting, so another pass follows at once. */
  pass: () => Promise<unknown>;
  /** false: start() does nothing (the feature is off). Default true. */
  enabled?: boolean;
  /** Run on every replica, not only the leader's. Default false. */
  everyReplica?: boolean;
}

export class PeriodicTask {
  private interval: NodeJS.Timeout | undefined;
  private kickTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private started = false;

  constructor(
    private readonly rt: Pick<Runtime, 'leads' | 'logger'>,
    private readonly spec: PeriodicTaskSpec,
  ) {}

  get isStarted(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started || this.spec.enabled === false) return;
    this.started = true;
    this.interval = setInterval(() => void this.run(), this.spec.everyMs);
    this.interval.unref();
  }

  async stop(): Promise<void> {
    this.started = false;
    clearInterval(this.interval);
    clearTimeout(this.kickTimer);
    this.interval = undefined;
    this.kickTimer = undefined;
    await this.running;
  }

  /** A pass soon; kicks arriving together (a burst of submits) share one. Nothing while stopped. */
  kick(): void {
    if (!this.started || this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = undefined;
      void this.run();
    }, 1);
  }

  /** Passes now, until one finds nothing more to do; while one runs, one more after it. */
  run(): Promise<void> {
    if (!this.spec.everyReplica && !this.rt.leads()) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          if ((await this.spec.pass()) === true) this.again = true;
          // SQLite answers in microtasks: let HTTP requests in between back-to-back passes.
          if (this.again) await new Promise((r) => setImmediate(r));
        } while (this.again && this.started);
      } catch (err) {
        this.rt.logger.error({ err }, `${this.spec.what} failed`);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }
}
