/**
 * The verification pass: steps whose dispute window closed with nothing open release their held pay to the
 * providers; steps whose check runs all ended outside an attempt end (a run that failed its queue timeout)
 * are decided. Runs every expiryPassIntervalMs (a window is days long; the pass is a short indexed read
 * when nothing is due). Nodes a decision banned leave the index.
 */
import type { Runtime } from '../runtime.js';
import { takeOutBannedOfStep } from '../services/commitments.js';
import { PeriodicTask } from './periodic.js';

const BATCH = 200;

export async function verificationPass(rt: Runtime): Promise<number> {
  const moved = await rt.store.closeVerificationWindows(rt.clock.now(), BATCH);
  for (const v of moved) {
    rt.logger.debug({ jobId: v.jobId, state: v.state, label: v.label }, 'verification step moved');
    await takeOutBannedOfStep(rt, v);
  }
  if (moved.length > 0) rt.scheduling.kick();
  return moved.length;
}

export function verificationTask(rt: Runtime): PeriodicTask {
  return new PeriodicTask(rt, { what: 'verification pass', everyMs: rt.config.expiryPassIntervalMs, enabled: rt.config.verify, pass: () => verificationPass(rt) });
}
