/**
 * A fixed run of verification (issue 11) the random ones rarely reach, checked after every step like them:
 * node-0 passes its first 10 audits, then its jobs are sampled out (one window closes, one false dispute,
 * one right dispute that convicts it: pay forfeited, stake slashed, banned; each dispute decided by two
 * agreeing referees, core verification-step.ts DISPUTE_QUORUM); a lying auditor is outvoted by two referees
 * and penalized; a replicas: 2 job agrees; a deterministic: false job cannot be disputed.
 */
import type { Cmd } from './commands.js';
import { ASSETS, PARTIES } from './world.js';

/** Every party 20 units of each asset. */
export const VERIFY_FUNDING: readonly number[] = Array.from({ length: PARTIES.length * ASSETS.length }, () => 20_000_000);

const submit = (verify: 'held' | 'replicas' | 'nondeterministic'): Cmd => ({
  t: 'submit',
  buyer: 0,
  asset: 'usdc',
  cap: 1_000_000,
  gpus: 1,
  timeout: 600,
  retries: 0,
  nodes: 1,
  key: null,
  verify,
});

/** The only queued job (a buyer's job or a check run) runs for a minute on the first node it may use from node k on. */
const runOn = (k: number, o: { lie?: boolean; draw?: number } = {}): Cmd[] => [
  { t: 'assign', job: 0, node: k, pricePct: 50, feeBps: 500, lockMultiple: 1, leaseMs: 600_000 },
  { t: 'start', attempt: 0 },
  { t: 'advance', ms: 60_000 },
  { t: 'finish', attempt: 0, outcome: 'succeeded', ended: false, lie: o.lie ?? false, draw: o.draw ?? 0.5 },
];

const SAMPLED_OUT = 0.99;

export const VERIFY_RUN: readonly Cmd[] = [
  ...[0, 1, 2, 3, 4].map((node): Cmd => ({ t: 'stake', node, pct: 50, wrongOwner: false })),
  { t: 'fund', asset: 'usdc', amount: 40_000_000 },
  // Verified jobs 0–9: node-0's first audits, each re-run by another operator (the first node it may use from node-1).
  ...Array.from({ length: 10 }, (): Cmd[] => [submit('held'), ...runOn(0), ...runOn(1)]).flat(),
  // 10: sampled out; its window closes and releases the pay.
  submit('held'),
  ...runOn(0, { draw: SAMPLED_OUT }),
  { t: 'advance', ms: 700_000 },
  { t: 'close', limit: 10 },
  // 11: sampled out; a false dispute: two referees (node-3, then node-4: each avoids the operators before it)
  // agree with the node, the bond goes to its provider.
  submit('held'),
  ...runOn(0, { draw: SAMPLED_OUT }),
  { t: 'dispute', job: 11, pct: 5 },
  ...runOn(3),
  ...runOn(4),
  // 12: sampled out, a wrong result; a right dispute: two referees (node-3, node-4) convict node-0 (forfeit, slash, ban).
  submit('held'),
  ...runOn(0, { lie: true, draw: SAMPLED_OUT }),
  { t: 'dispute', job: 12, pct: 5 },
  ...runOn(3),
  ...runOn(4),
  // 13: node-1 right, its auditor (node-3) lies; referees on node-2 and node-4 side with node-1.
  submit('held'),
  ...runOn(1),
  ...runOn(3, { lie: true }),
  ...runOn(0),
  ...runOn(0),
  // 14: replicas: 2 on node-4 and another operator, agreeing.
  submit('replicas'),
  ...runOn(4),
  ...runOn(1),
  // 15: deterministic: false is never re-run, and cannot be disputed.
  submit('nondeterministic'),
  ...runOn(1),
  { t: 'dispute', job: 15, pct: 5 },
  { t: 'advance', ms: 700_000 },
  { t: 'close', limit: 10 },
];

/**
 * A false dispute with one lying referee (the issue 11 finding: one referee's vote used to decide a dispute
 * and convicted an honest node). node-0's result is right, the buyer disputes it, its first referee (node-3)
 * reports a wrong digest; with no quorum the engine asks a second referee (node-4), honest: one vote each,
 * still none; the third (node-1, the last operator not yet used) agrees with node-0 too: two agree, the
 * dispute is rejected, node-0's pay released and the bond goes to its provider (properties.ts checks it).
 */
export const LYING_REFEREE_RUN: readonly Cmd[] = [
  ...[0, 1, 2, 3, 4].map((node): Cmd => ({ t: 'stake', node, pct: 50, wrongOwner: false })),
  // The treasury is empty: node-0's result is unaudited (the audit budget), so it can be disputed.
  submit('held'),
  ...runOn(0),
  { t: 'fund', asset: 'usdc', amount: 40_000_000 },
  { t: 'dispute', job: 0, pct: 5 },
  ...runOn(3, { lie: true }),
  ...runOn(4),
  ...runOn(1),
];
