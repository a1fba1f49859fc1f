/**
 * The challenge loop (issue 12): every expiryPassIntervalMs, open challenges past their deadline expire (the
 * node's proof fails: dispatch blocked, no slash), and nodes due a challenge get one, provider-wide: a
 * proven node whose random re-check time came, a failed one whose retry time came, and a live node never
 * proven. Runs while GPUX_CHALLENGE=required.
 */
import type { Runtime } from '../runtime.js';
import { challengePass } from '../services/challenges.js';
import { PeriodicPass } from './periodic.js';

export class ChallengeLoop extends PeriodicPass {
  constructor(rt: Runtime) {
    super(rt, 'challenge pass');
  }

  protected override enabled(): boolean {
    return this.rt.config.challenge === 'required';
  }

  protected async tick(): Promise<void> {
    await challengePass(this.rt);
  }
}
