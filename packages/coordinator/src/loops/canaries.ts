/**
 * The canary loop: every expiryPassIntervalMs, one issuing pass (services/canaries.ts). Runs while
 * verification is on (canaries are verification: their pay is held and judged like a check run's).
 */
import type { Runtime } from '../runtime.js';
import { canaryPass } from '../services/canaries.js';

export class CanaryLoop {
  private interval: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Bans at or after this time are still to be taken out of the index (the index was rebuilt at start). */
  private bansSince: number;

  constructor(private readonly rt: Runtime) {
    this.bansSince = rt.startedAt;
  }

  start(): void {
    if (this.interval || !this.rt.config.verify) return;
    this.interval = setInterval(() => void this.run(), this.rt.config.expiryPassIntervalMs);
    this.interval.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.interval);
    this.interval = undefined;
    await this.running;
  }

  run(): Promise<void> {
    this.running ??= canaryPass(this.rt, this.bansSince)
      .then((r) => {
        this.bansSince = r.bansSince;
      })
      .catch((err) => this.rt.logger.error({ err }, 'canary pass failed'))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}
