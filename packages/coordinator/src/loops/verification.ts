/**
 * The verification pass: steps whose dispute window closed with nothing open release their held pay to the
 * providers; steps whose check runs all ended outside an attempt end (a run that failed its queue timeout)
 * are decided. Runs every expiryPassIntervalMs (a window is days long; the pass is a short indexed read
 * when nothing is due). Nodes a decision banned leave the index.
 */
import type { Runtime } from '../runtime.js';
import { takeOutBannedOfStep } from '../services/commitments.js';

const BATCH = 200;

export class VerificationLoop {
  private interval: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly rt: Runtime) {}

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
    this.running ??= this.pass()
      .then(() => undefined)
      .catch((err) => this.rt.logger.error({ err }, 'verification pass failed'))
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }

  async pass(): Promise<number> {
    const moved = await this.rt.store.closeVerificationWindows(this.rt.clock.now(), BATCH);
    for (const v of moved) {
      this.rt.logger.debug({ jobId: v.jobId, state: v.state, label: v.label }, 'verification step moved');
      await takeOutBannedOfStep(this.rt, v);
    }
    if (moved.length > 0) this.rt.scheduling.kick();
    return moved.length;
  }
}
