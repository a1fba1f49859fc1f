/**
 * The verification pass: steps whose dispute window closed with nothing open release their held pay to the
 * providers; steps whose check runs all ended outside an attempt end (a run that failed its queue timeout)
 * are decided. Runs every expiryPassIntervalMs (a window is days long; the pass is a short indexed read
 * when nothing is due). Nodes a decision banned leave the index.
 */
import type { Needs } from '../runtime.js';
import { takeOutBannedOfStep } from '../services/commitments.js';
import { PeriodicTask } from './periodic.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type VerificationDeps = Needs<'clock' | 'config' | 'decider' | 'leads' | 'logger' | 'metrics' | 'nodeKeys' | 'signals' | 'store' | 'work'>;

const BATCH = 200;

export async function verificationPass(rt: VerificationDeps): Promise<number> {
  const moved = await rt.store.closeVerificationWindows(rt.clock.now(), BATCH);
  for (const v of moved) {
    rt.logger.debug({ jobId: v.jobId, state: v.state, label: v.label }, 'verification step moved');
    await takeOutBannedOfStep(rt, v);
  }
  if (moved.length > 0) rt.signals.kick();
  return moved.length;
}

export function verificationTask(rt: VerificationDeps): PeriodicTask {
  return new PeriodicTask(rt, { what: 'verification pass', everyMs: rt.config.expiryPassIntervalMs, enabled: rt.config.verify, pass: () => verificationPass(rt) });
}
