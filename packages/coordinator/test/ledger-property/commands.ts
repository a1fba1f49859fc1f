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
/**
 * How a submission asks for verification (issue 11): none (paid at once), held pay (audited at the
 * node's rate), held pay with replicas: 2, or held pay with deterministic: false (never re-run).
 */
export type Verify = 'none' | 'held' | 'replicas' | 'nondeterministic';
export type Cmd =
  | { t: 'mint'; who: number; asset: Asset; amount: number }
  | { t: 'submit'; buyer: number; asset: Asset; cap: number; gpus: number; timeout: number; retries: number; nodes: number; key: number | null; verify: Verify }
  | { t: 'cancel'; job: number; graceMs: number }
  | { t: 'assign'; job: number; node: number; pricePct: number; feeBps: number; lockMultiple: number; leaseMs: number }
  | { t: 'start'; attempt: number }
  /** `lie`: a wrong digest; `draw`: the coordinator's audit draw taken after the commitment. */
  | { t: 'finish'; attempt: number; outcome: Outcome; ended: boolean; lie: boolean; draw: number }
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
  | { t: 'advance'; ms: number }
  // Verification (issue 11): the operator funds the treasury's audit budget; a buyer disputes a result in
  // its window (bond: pct of its wallet); the windows that closed release their held pay.
  | { t: 'fund'; asset: Asset; amount: number }
  | { t: 'dispute'; job: number; pct: number }
  | { t: 'close'; limit: number };

/** How commands of the kinds K are carried out: the model's update on success, and a line for the log. */
export type Verbs<K extends Cmd['t']> = { [k in K]: (run: Run, store: Store, cmd: Extract<Cmd, { t: k }>) => Promise<string> };

/** "The k-th of whatever exists now" (jobs, attempts, payouts); chunks use −1 for the newest job or attempt. */
export const pickArb = fc.nat({ max: 31 });
const assetArb = fc.constantFrom<Asset>('usdc', 'credit');
export const pctArb = fc.integer({ min: 1, max: 120 }); // above 100: asks for more than there is
/** True one time in n. */
const chance = (n: number) => fc.integer({ min: 1, max: n }).map((x) => x === 1);
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
    verify: fc.constantFrom<Verify>('none', 'held', 'held', 'held', 'replicas', 'nondeterministic'),
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
  finish: fc.record({
    t: fc.constant('finish'),
    attempt: pickArb,
    outcome: fc.constantFrom<Outcome>('succeeded', 'succeeded', 'failed', 'crashed', 'cancelled'),
    ended: rarely,
    lie: fc.oneof({ weight: 3, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    // 0.99 samples out a node past its first 10 audits; 0.01 audits it.
    draw: fc.constantFrom(0.01, 0.5, 0.99),
  }),
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
  fund: fc.record({ t: fc.constant('fund'), asset: assetArb, amount: fc.integer({ min: 1, max: 40_000_000 }) }),
  dispute: fc.record({ t: fc.constant('dispute'), job: pickArb, pct: fc.integer({ min: 0, max: 120 }) }),
  close: fc.record({ t: fc.constant('close'), limit: fc.integer({ min: 1, max: 10 }) }),
} satisfies { [K in Cmd['t']]: fc.Arbitrary<Extract<Cmd, { t: K }>> };

const weights: { [K in Cmd['t']]: number } = {
  mint: 3,
  submit: 12,
  cancel: 1,
  assign: 7,
  start: 6,
  finish: 6,
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
  fund: 1,
  dispute: 2,
  close: 2,
};

export const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(...(Object.keys(arbs) as Cmd['t'][]).map((k) => ({ weight: weights[k], arbitrary: arbs[k] as fc.Arbitrary<Cmd> })));

/**
 * A job's work in a row: an assignment, a start, a minute, a result (lie or not, with its audit draw).
 * Random runs mix these chunks with single commands, so jobs reach their results, audits and referees
 * often enough; each command of a chunk is still its own step, checked after it.
 */
const workOn = (newest: boolean): fc.Arbitrary<Cmd[]> =>
  fc
    .record({
      assign: arbs.assign,
      attempt: pickArb,
      ms: fc.integer({ min: 1_000, max: 120_000 }),
      finish: arbs.finish,
      // A verified job's work mostly gets somewhere: a result, on a node whose stake covers the lock.
      outcome: fc.constantFrom<Outcome>('succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded', 'failed', 'crashed'),
      lockMultiple: fc.constantFrom(0, 1, 5),
    })
    .map(({ assign, attempt, ms, finish, outcome, lockMultiple }): Cmd[] => {
      // Newest (pick −1): the job or check run queued last, and the attempt assigned last.
      const k = newest ? -1 : attempt;
      const a: Cmd = newest ? { ...assign, job: -1, lockMultiple } : assign;
      return [a, { t: 'start', attempt: k }, { t: 'advance', ms }, { ...finish, attempt: k, ended: false, ...(newest && { outcome }) }];
    });
const workArb = workOn(false);

/**
 * A verified job's life in a row (issue 11): its submission, its run and its check runs' (each a lie or
 * not), then perhaps a dispute with its referees' runs (each a lie or not), the clock and a window close.
 */
const verifyArb: fc.Arbitrary<Cmd[]> = fc
  .record({
    submit: arbs.submit,
    verify: fc.constantFrom<Verify>('held', 'held', 'replicas', 'nondeterministic'),
    work: fc.array(workOn(true), { minLength: 2, maxLength: 5 }),
    // The executor and the auditor lie often, referees seldom: a quorum of two honest referees needs a lie at most
    // among the first runs (an audit mismatch may use only four operators here: executor, auditor, two referees).
    lies: fc.tuple(chance(3), chance(4), chance(12), chance(12), chance(12)),
    tail: fc.subarray<Cmd>([{ t: 'dispute', job: 0, pct: 10 }, { t: 'advance', ms: 300_000 }, { t: 'close', limit: 10 }]),
    job: pickArb,
    // A dispute's referee runs (it needs two that agree, at most four): each lies one time in three, so a
    // dispute is sometimes void.
    disputeWork: fc.array(workOn(true), { maxLength: 4 }),
    disputeLies: fc.tuple(chance(3), chance(3), chance(3), chance(3)),
  })
  .map(({ submit, verify, work, lies, tail, job, disputeWork, disputeLies }): Cmd[] => {
    // Each work's result a lie as drawn for its place (executor, audit, referees).
    const lying = (ws: Cmd[][], drawn: readonly boolean[]) => ws.flatMap((w, i) => w.map((c): Cmd => (c.t === 'finish' ? { ...c, lie: drawn[i] ?? false } : c)));
    // The dispute (when drawn) is of this job (−1: the newest verified job) or of the k-th, then its referees' work.
    const after = tail.flatMap((c): Cmd[] => (c.t === 'dispute' ? [{ ...c, job: job % 2 === 0 ? -1 : job }, ...lying(disputeWork, disputeLies)] : [c]));
    return [{ ...submit, nodes: 1, verify }, ...lying(work, lies), ...after];
  });

/** A run's commands: single ones, chunks of work and verified jobs' lives, flattened. */
export const cmdsArb = (maxChunks: number): fc.Arbitrary<Cmd[]> =>
  fc
    .array(
      fc.oneof({ weight: 6, arbitrary: cmdArb.map((c) => [c]) }, { weight: 2, arbitrary: workArb }, { weight: 1, arbitrary: verifyArb }),
      { minLength: 1, maxLength: maxChunks, size: 'max' },
    )
    .map((chunks) => chunks.flat());

/** Initial funds per party and asset, then the treasury's per asset, minted before the commands so runs are busy from the start. */
const FUNDED = PARTIES.length * ASSETS.length + ASSETS.length;
export const fundingArb = fc.array(fc.integer({ min: 0, max: 20_000_000 }), { minLength: FUNDED, maxLength: FUNDED });
