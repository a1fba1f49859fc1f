/**
 * The challenge task (issue 12): every expiryPassIntervalMs, open challenges past their deadline expire (the
 * node's proof fails: dispatch blocked, no slash), and nodes due a challenge get one, provider-wide: a
 * proven node whose random re-check time came, a failed one whose retry time came, and a live node never
 * proven. Runs while GPUX_CHALLENGE=required.
 */
import type { Runtime } from '../runtime.js';
import { challengePass } from '../services/challenges.js';
import { PeriodicTask } from './periodic.js';

export function challengeTask(rt: Runtime): PeriodicTask {
  return new PeriodicTask(rt, { what: 'challenge pass', everyMs: rt.config.expiryPassIntervalMs, enabled: rt.config.challenge === 'required', pass: () => challengePass(rt) });
}
