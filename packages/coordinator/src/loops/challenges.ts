/**
 * The challenge task (issue 12): every expiryPassIntervalMs, open challenges past their deadline expire (the
 * node's proof fails: dispatch blocked, no slash), and nodes due a challenge get one, provider-wide: a
 * proven node whose random re-check time came, a failed one whose retry time came, and a live node never
 * proven. Runs while GPUX_CHALLENGE=required.
 */
import type { Needs } from '../runtime.js';
import { challengePass } from '../services/challenges.js';
import { PeriodicTask } from './periodic.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type ChallengesDeps = Needs<'bus' | 'clock' | 'config' | 'index' | 'leads' | 'logger' | 'random' | 'signals' | 'signer' | 'store'>;

export function challengeTask(rt: ChallengesDeps): PeriodicTask {
  return new PeriodicTask(rt, { what: 'challenge pass', everyMs: rt.config.expiryPassIntervalMs, enabled: rt.config.challenge === 'required', pass: () => challengePass(rt) });
}
