/**
 * A background pass run every `intervalMs`: never two at once (a slow pass is not stacked on), a failure
 * logged and retried on the next tick, and stop() waits for the pass in flight.
 */
import type { Runtime } from '../runtime.js';

export abstract class PeriodicPass {
  private interval: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    protected readonly rt: Runtime,
    private readonly what: string,
  ) {}

  /** false: start() does nothing (the pass's feature is off). */
  protected enabled(): boolean {
    return true;
  }

  protected abstract tick(): Promise<unknown>;

  start(): void {
    if (this.interval || !this.enabled()) return;
    this.interval = setInterval(() => void this.run(), this.rt.config.expiryPassIntervalMs);
    this.interval.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.interval);
    this.interval = undefined;
    await this.running;
  }

  /** One pass now; on a replica that does not lead (issue 14) nothing: the leader's pass does the work. */
  run(): Promise<void> {
    if (!this.rt.leads()) return Promise.resolve();
    this.running ??= this.tick()
      .then(() => undefined)
      .catch((err) => this.rt.logger.error({ err }, `${this.what} failed`))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
