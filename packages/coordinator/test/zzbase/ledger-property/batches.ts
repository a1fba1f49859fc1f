/**
 * Batches of commands run at once on PostgreSQL: random ones, and races on purpose (several commands
 * contending for the same wallet, attempt, stake or payout).
 */
import fc from 'fast-check';
import { arbs, type Cmd, cmdArb, outcomeArb, pctArb, pickArb } from './commands.js';
import { BUYERS, NODES, node, PROVIDERS } from './world.js';

export interface Batch {
  /** The clock moves before the batch; no command inside it moves the clock. */
  advanceMs: number;
  cmds: Cmd[];
}

const raceArb: fc.Arbitrary<Cmd[]> = fc.oneof(
  // Several holds from one wallet: those that fit win.
  fc
    .record({ s: arbs.submit, n: fc.integer({ min: 2, max: 4 }) })
    .map(({ s, n }) => Array.from({ length: n }, () => ({ ...s }))),
  // A node's result racing the chunk settlement and lease expiry of the same attempt.
  fc
    .record({ attempt: pickArb, outcome: outcomeArb, min: fc.constantFrom(0, 1_000) })
    .map(({ attempt, outcome, min }): Cmd[] => [
      { t: 'settle', minIntervalMs: min, limit: 10 },
      { t: 'finish', attempt, outcome, ended: false },
      { t: 'expire', limit: 10 },
      { t: 'settle', minIntervalMs: 0, limit: 10 },
    ]),
  // Two payouts racing a stake deposit from the same provider wallet.
  fc
    .record({ node: fc.nat({ max: NODES.length - 1 }), a: pctArb, b: pctArb, c: pctArb })
    .map(({ node: k, a, b, c }): Cmd[] => {
      const who = BUYERS.length + PROVIDERS.indexOf(node(k).providerId);
      return [
        { t: 'payout', who, asset: 'usdc', pct: a },
        { t: 'payout', who, asset: 'usdc', pct: b },
        { t: 'stake', node: k, pct: c, wrongOwner: false },
      ];
    }),
  // Assignments racing unbonds of the same node's stake.
  fc
    .record({ a: arbs.assign, b: arbs.assign, u: fc.integer({ min: 50, max: 100 }) })
    .map(({ a, b, u }): Cmd[] => [
      a,
      { t: 'unbond', node: a.node, pct: u, delayMs: 0, wrongOwner: false },
      { ...b, node: a.node },
      { t: 'unbond', node: a.node, pct: 100, delayMs: 0, wrongOwner: false },
    ]),
  // Completion and rejection of the same payout.
  fc.record({ payout: pickArb }).map(({ payout }): Cmd[] => [
    { t: 'complete', payout, ended: false },
    { t: 'reject', payout, ended: false },
    { t: 'complete', payout, ended: false },
  ]),
  // A cancel racing the job's assignment and the end of running attempts.
  fc.record({ job: pickArb, a: arbs.assign, attempt: pickArb, graceMs: fc.integer({ min: 0, max: 120_000 }) }).map(({ job, a, attempt, graceMs }): Cmd[] => [
    { t: 'cancel', job, graceMs },
    { ...a, job },
    { t: 'finish', attempt, outcome: 'crashed', ended: false },
    { t: 'release', limit: 10 },
  ]),
  // A cancel whose node heartbeats on and never stops (issue 10 item 8): its lease stays at cancel + grace,
  // the chunk settlement and the expiry race it, and a later batch's expiry ends it as cancelled.
  fc
    .record({ job: pickArb, graceMs: fc.integer({ min: 0, max: 5_000 }), node: fc.nat({ max: NODES.length - 1 }) })
    .map(({ job, graceMs, node }): Cmd[] => [
      { t: 'cancel', job, graceMs },
      { t: 'heartbeat', node, leaseMs: 600_000 },
      { t: 'settle', minIntervalMs: 0, limit: 10 },
      { t: 'expire', limit: 10 },
    ]),
);

export const batchArb: fc.Arbitrary<Batch> = fc.record({
  advanceMs: fc.integer({ min: 0, max: 600_000 }),
  cmds: fc.oneof(
    fc.array(
      cmdArb.filter((c) => c.t !== 'advance'),
      { minLength: 2, maxLength: 6 },
    ),
    raceArb,
  ),
});
