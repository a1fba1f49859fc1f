/**
 * The verification pass: steps whose dispute window closed with nothing open release their held pay to the
 * providers; steps whose check runs all ended outside an attempt end (a run that failed its queue timeout)
 * are decided. Runs every expiryPassIntervalMs (a window is days long; the pass is a short indexed read
 * when nothing is due). Nodes a decision banned leave the index.
 */
import type { Runtime } from '../runtime.js';
import { PeriodicPass } from './periodic.js';
import { takeOutBannedOfStep } from '../services/commitments.js';

const BATCH = 200;

export class VerificationLoop extends PeriodicPass {
  constructor(rt: Runtime) {
    super(rt, 'verification pass');
  }

  protected override enabled(): boolean {
    return this.rt.config.verify;
  }

  protected tick(): Promise<number> {
    return this.pass();
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
