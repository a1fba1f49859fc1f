/**
 * The canary loop: every expiryPassIntervalMs, one issuing pass (services/canaries.ts). Runs while
 * verification is on (canaries are verification: their pay is held and judged like a check run's).
 */
import type { Runtime } from '../runtime.js';
import { PeriodicPass } from './periodic.js';
import { canaryPass } from '../services/canaries.js';

export class CanaryLoop extends PeriodicPass {
  /** Bans at or after this time are still to be taken out of the index (the index was rebuilt at start). */
  private bansSince: number;

  constructor(rt: Runtime) {
    super(rt, 'canary pass');
    this.bansSince = rt.startedAt;
  }

  protected override enabled(): boolean {
    return this.rt.config.verify;
  }

  protected async tick(): Promise<void> {
    this.bansSince = (await canaryPass(this.rt, this.bansSince)).bansSince;
  }
}
