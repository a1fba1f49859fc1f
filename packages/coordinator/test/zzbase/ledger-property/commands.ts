/**
 * The commands a run is made of (one per Store verb, plus the clock), the fast-check arbitraries that
 * generate them with their weights, and the initial funding. How each is carried out: job-verbs.ts,
 * money-verbs.ts, execute.ts.
 */
import type { Store } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import fc from 'fast-check';
import type { Run } from './model.js';
import { ASSETS, BUYERS, CAPS, FEES, NODES, PARTIES, TIMEOUTS } from './world.js';

export type Outcome = 'succeeded' | 'failed' | 'crashed' | 'cancelled';
export type Cmd =
  | { t: 'mint'; who: number; asset: Asset; amount: number }
  | { t: 'submit'; buyer: number; asset: Asset; cap: number; gpus: number; timeout: number; retries: number; nodes: number; key: number | null }
  | { t: 'cancel'; job: number; graceMs: number }
  | { t: 'assign'; job: number; node: number; pricePct: number; feeBps: number; lockMultiple: number; leaseMs: number }
  | { t: 'start'; attempt: number }
  | { t: 'finish'; attempt: number; outcome: Outcome; ended: boolean }
  | { t: 'heartbeat'; node: number; leaseMs: number }
  | { t: 'settle'; minIntervalMs: number; limit: number }
  | { t: 'expire'; limit: number }
  | { t: 'stake'; node: number; pct: number; wrongOwner: boolean }
  | { t: 'unbond'; node: number; pct: number; delayMs: number; wrongOwner: boolean }
  | { t: 'release'; limit: number }
  | { t: 'slash'; node: number; amount: number; to: number }
  | { t: 'payout'; who: number; asset: Asset; pct: number }
  | { t: 'complete'; payout: number; ended: boolean }
  | { t: 'reject'; payout: number; ended: boolean }
  | { t: 'advance'; ms: number };

/** How commands of the kinds K are carried out: the model's update on success, and a line for the log. */
export type Verbs<K extends Cmd['t']> = { [k in K]: (run: Run, store: Store, cmd: Extract<Cmd, { t: k }>) => Promise<string> };

/** "The k-th of whatever exists now" (jobs, attempts, payouts). */
export const pickArb = fc.nat({ max: 31 });
const assetArb = fc.constantFrom<Asset>('usdc', 'credit');
export const pctArb = fc.integer({ min: 1, max: 120 }); // above 100: asks for more than there is
const rarely = fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
export const outcomeArb = fc.constantFrom<Outcome>('succeeded', 'failed', 'crashed', 'cancelled');

export const arbs = {
  mint: fc.record({ t: fc.constant('mint'), who: fc.nat({ max: PARTIES.length - 1 }), asset: assetArb, amount: fc.integer({ min: 1, max: 20_000_000 }) }),
  submit: fc.record({
    t: fc.constant('submit'),
    buyer: fc.nat({ max: BUYERS.length - 1 }),
    asset: assetArb,
    cap: fc.constantFrom(...CAPS),
    gpus: fc.integer({ min: 1, max: 2 }),
    timeout: fc.constantFrom(...TIMEOUTS),
    retries: fc.integer({ min: 0, max: 2 }),
    nodes: fc.constantFrom(1, 1, 1, 2),
    key: fc.option(fc.nat({ max: 2 }), { freq: 3 }), // an idempotency key, now and then one used before
  }),
  cancel: fc.record({ t: fc.constant('cancel'), job: pickArb, graceMs: fc.integer({ min: 0, max: 120_000 }) }), // the cancel grace (issue 10 item 8)
  assign: fc.record({
    t: fc.constant('assign'),
    job: pickArb,
    node: fc.nat({ max: NODES.length - 1 }),
    pricePct: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 100 })),
    feeBps: fc.constantFrom(...FEES),
    lockMultiple: fc.constantFrom(0, 1, 5, 20), // the scheduler's stake multiple (20 in production) scaled down so stake suffices more often
    leaseMs: fc.integer({ min: 5_000, max: 600_000 }),
  }),
  start: fc.record({ t: fc.constant('start'), attempt: pickArb }),
  finish: fc.record({ t: fc.constant('finish'), attempt: pickArb, outcome: outcomeArb, ended: rarely }),
  heartbeat: fc.record({ t: fc.constant('heartbeat'), node: fc.nat({ max: NODES.length - 1 }), leaseMs: fc.integer({ min: 5_000, max: 600_000 }) }),
  settle: fc.record({ t: fc.constant('settle'), minIntervalMs: fc.constantFrom(0, 1_000, 60_000), limit: fc.integer({ min: 1, max: 10 }) }),
  expire: fc.record({ t: fc.constant('expire'), limit: fc.integer({ min: 1, max: 10 }) }),
  stake: fc.record({ t: fc.constant('stake'), node: fc.nat({ max: NODES.length - 1 }), pct: pctArb, wrongOwner: rarely }),
  unbond: fc.record({
    t: fc.constant('unbond'),
    node: fc.nat({ max: NODES.length - 1 }),
    pct: pctArb,
    delayMs: fc.integer({ min: 0, max: 900_000 }),
    wrongOwner: rarely,
  }),
  release: fc.record({ t: fc.constant('release'), limit: fc.integer({ min: 1, max: 10 }) }),
  slash: fc.record({
    t: fc.constant('slash'),
    node: fc.nat({ max: NODES.length - 1 }),
    amount: fc.integer({ min: 1, max: 20_000_000 }),
    to: fc.nat({ max: BUYERS.length }), // BUYERS.length: the treasury
  }),
  payout: fc.record({ t: fc.constant('payout'), who: fc.nat({ max: PARTIES.length - 1 }), asset: assetArb, pct: pctArb }),
  complete: fc.record({ t: fc.constant('complete'), payout: pickArb, ended: rarely }),
  reject: fc.record({ t: fc.constant('reject'), payout: pickArb, ended: rarely }),
  advance: fc.record({ t: fc.constant('advance'), ms: fc.integer({ min: 0, max: 900_000 }) }),
} satisfies { [K in Cmd['t']]: fc.Arbitrary<Extract<Cmd, { t: K }>> };

const weights: { [K in Cmd['t']]: number } = {
  mint: 3,
  submit: 5,
  cancel: 1,
  assign: 5,
  start: 6,
  finish: 5,
  heartbeat: 1,
  settle: 2,
  expire: 2,
  stake: 4,
  unbond: 2,
  release: 1,
  slash: 1,
  payout: 2,
  complete: 1,
  reject: 1,
  advance: 4,
};

export const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(...(Object.keys(arbs) as Cmd['t'][]).map((k) => ({ weight: weights[k], arbitrary: arbs[k] as fc.Arbitrary<Cmd> })));

/** Initial funds per party and asset, minted before the commands so runs are busy from the start. */
export const fundingArb = fc.array(fc.integer({ min: 0, max: 20_000_000 }), { minLength: PARTIES.length * ASSETS.length, maxLength: PARTIES.length * ASSETS.length });
