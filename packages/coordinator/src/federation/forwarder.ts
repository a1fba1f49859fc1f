/**
 * The leader's forwarding pass (issue 15), every GPUX_FORWARD_POLL_MS: first every open forward is asked about
 * (forward-poll.ts: logs, start, end and bill, cancels), then queued jobs are routed (forward-route.ts). With
 * GPUX_FORWARD=off nothing new leaves this region, but forwards already open are still followed to their end, so
 * their bills are booked and their jobs move on.
 */
import { PeriodicTask } from '../loops/periodic.js';
import { FORWARDS_PER_PASS, routeQueued } from './forward-route.js';
import { pollForwards } from './forward-poll.js';
import type { ForwarderDeps, PeerClient } from './forward-send.js';

export type { ForwarderDeps } from './forward-send.js';

/** One pass; true when more is waiting now (log lines left to read, or a full batch forwarded). */
export async function forwardPass(rt: ForwarderDeps, client: PeerClient = { clock: rt.clock, random: rt.random, signer: rt.signer }): Promise<boolean> {
  const more = await pollForwards(rt, client);
  const forwarded = rt.config.forward ? await routeQueued(rt, client) : 0;
  return more || forwarded >= FORWARDS_PER_PASS;
}

export function forwardTask(rt: ForwarderDeps): PeriodicTask {
  return new PeriodicTask(rt, { what: 'forwarding pass', everyMs: rt.config.forwardPollMs, pass: () => forwardPass(rt) });
}
