/**
 * The canary task: every expiryPassIntervalMs, one issuing pass (services/canaries.ts). Runs while
 * verification is on (canaries are verification: their pay is held and judged like a check run's).
 */
import type { Needs } from '../runtime.js';
import { canaryPass } from '../services/canaries.js';
import { PeriodicTask } from './periodic.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type CanariesDeps = Needs<'clock' | 'config' | 'decider' | 'leads' | 'logger' | 'metrics' | 'nodeKeys' | 'random' | 'signals' | 'startedAt' | 'store' | 'work'>;

export function canaryTask(rt: CanariesDeps): PeriodicTask {
  // Bans at or after this time are still to be taken out of the index (the index was rebuilt at start).
  let bansSince = rt.startedAt;
  return new PeriodicTask(rt, {
    what: 'canary pass',
    everyMs: rt.config.expiryPassIntervalMs,
    enabled: rt.config.verify,
    pass: async () => {
      bansSince = (await canaryPass(rt, bansSince)).bansSince;
    },
  });
}
