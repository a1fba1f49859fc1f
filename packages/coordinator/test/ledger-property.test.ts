/**
 * Property tests of the ledger through the real Store verbs (issue 5). fast-check drives random sequences
 * of market operations (mints, paid submissions, cancels, priced assignments, starts, chunk settlements,
 * attempt ends, lease expiry, heartbeats, stake, unbonding, slashes, payouts, the clock) on SQLite and on
 * PostgreSQL, and on PostgreSQL batches of them run concurrently through two pools. After every step:
 * per asset every account sums to what was minted (the model: mints − completed payouts) and no account
 * is below zero; a finished job's escrow is empty and its bill never charged more than it held; a
 * provider's wallet shrinks only by the stake deposits and payouts it asked for; stake matches its model
 * and locks. At the end of a run each party's money is conserved exactly. Expected refusals (each verb's
 * own codes) are fine; any other error fails the property. Every run gets a fresh database.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  ACCOUNTS,
  type AttemptRecord,
  chargeFor,
  feeOf,
  GpuxError,
  holdFor,
  type JobPaymentRecord,
  type JobRecord,
  move,
  mulDiv,
  type Placement,
  type Store,
  stakeToLock,
  transitionDecider,
} from '@gpux/core';
import { type Asset, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { type PostgresServer, requirePostgres, sampleAdvertisement, sampleJobSpec, startPostgres, tempDir } from '@gpux/testing';
import fc from 'fast-check';
import pg from 'pg';
import { openPostgresStore, openSqliteStore } from '../src/store/index.js';

const T0 = 1_700_000_000_000;
const decide = transitionDecider({ baseBackoffMs: 1, maxBackoffMs: 10 });
const ASSETS: readonly Asset[] = ['usdc', 'credit'];
const BUYERS = ['buyer-0', 'buyer-1', 'buyer-2'];
const PROVIDERS = ['prov-0', 'prov-1'];
const NODES = [
  { id: 'node-0', providerId: 'prov-0' },
  { id: 'node-1', providerId: 'prov-1' },
  { id: 'node-2', providerId: 'prov-0' },
];
const PARTIES = [...BUYERS, ...PROVIDERS];
const CAPS = [500_000, 1_000_000, 2_345_679];
const TIMEOUTS = [60, 600, 1_800];
const FEES = [0, 250, 500, 2_500];
const DIGEST = 'a'.repeat(64);
/** GPUX_PROPERTY_RUNS=k multiplies every property's runs (a soak: k=20); the default keeps the file near a minute. */
const SCALE = Math.max(1, Number(process.env.GPUX_PROPERTY_RUNS ?? 1) || 1);
const runs = (n: number) => n * SCALE;

const isTerminal = (s: JobState) => TERMINAL_JOB_STATES.includes(s);
const at = <T>(xs: readonly T[], k: number): T | undefined => (xs.length === 0 ? undefined : xs[k % xs.length]);
const byId = <T extends { id: string }>(xs: T[]) => xs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);
const node = (k: number) => NODES[k % NODES.length] as (typeof NODES)[number];

// ---- commands ----

type Outcome = 'succeeded' | 'failed' | 'crashed' | 'cancelled';
type Cmd =
  | { t: 'mint'; who: number; asset: Asset; amount: number }
  | { t: 'submit'; buyer: number; asset: Asset; cap: number; gpus: number; timeout: number; retries: number; nodes: number; key: number | null }
  | { t: 'cancel'; job: number }
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

const pickArb = fc.nat({ max: 31 });
const assetArb = fc.constantFrom<Asset>('usdc', 'credit');
const pctArb = fc.integer({ min: 1, max: 120 }); // above 100: asks for more than there is
const rarely = fc.oneof({ weight: 9, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) });
const outcomeArb = fc.constantFrom<Outcome>('succeeded', 'failed', 'crashed', 'cancelled');

const arbs = {
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
  cancel: fc.record({ t: fc.constant('cancel'), job: pickArb }),
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

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(...(Object.keys(arbs) as Cmd['t'][]).map((k) => ({ weight: weights[k], arbitrary: arbs[k] as fc.Arbitrary<Cmd> })));

/** Initial funds per party and asset, minted before the commands so runs are busy from the start. */
const fundingArb = fc.array(fc.integer({ min: 0, max: 20_000_000 }), { minLength: PARTIES.length * ASSETS.length, maxLength: PARTIES.length * ASSETS.length });

// ---- the model and the run ----

interface JobModel {
  id: string;
  buyerId: string;
  payment: JobPaymentRecord;
  billChecked: boolean;
}

interface PayoutModel {
  id: string;
  accountId: string;
  asset: Asset;
  amount: number;
  state: 'pending' | 'completed' | 'rejected';
}

const key = (account: string, asset: Asset) => `${account}|${asset}`;

/** What one run did, as the model sees it, and the counters the coverage diagnostics print. */
class Run {
  now = T0;
  private n = 0;
  readonly minted: Record<Asset, number> = { usdc: 0, credit: 0 };
  /** key(party, asset) → minted to / paid out (completed) by the party. */
  readonly mintedTo = new Map<string, number>();
  readonly completedBy = new Map<string, number>();
  readonly jobs = new Map<string, JobModel>();
  /** `${buyer}|${key}` → the job the idempotency key created. */
  readonly keys = new Map<string, string>();
  readonly attempts: string[] = [];
  readonly payouts = new Map<string, PayoutModel>();
  readonly staked = new Map<string, number>();
  readonly slashedNodes = new Set<string>();
  /** USDC slashed out of each node / into each account. */
  readonly slashOut = new Map<string, number>();
  readonly slashIn = new Map<string, number>();
  /** key(provider, asset) → balance after the last step, and what the step may take out of it. */
  readonly providerSeen = new Map<string, number>();
  readonly allowance = new Map<string, number>();
  readonly log: string[] = [];

  constructor(
    /** Sequential runs check each verb's exact outcome against the model; concurrent batches cannot. */
    public sequential: boolean,
    readonly stats: Map<string, number>,
  ) {}

  id(prefix: string): string {
    return `${prefix}-${String(++this.n).padStart(3, '0')}`;
  }

  add(map: Map<string, number>, k: string, amount: number): void {
    map.set(k, (map.get(k) ?? 0) + amount);
  }

  count(what: string): void {
    this.add(this.stats, what, 1);
  }

  tail(): string {
    return this.log.slice(-60).join('\n');
  }
}

/** The verb's result, or its refusal when the code is one this verb may answer; anything else propagates. */
async function refusable<T>(p: Promise<T>, codes: readonly string[]): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    if (err instanceof GpuxError && codes.includes(err.code)) return { ok: false, code: err.code };
    throw err;
  }
}

async function mint(run: Run, store: Store, party: string, asset: Asset, amount: number): Promise<void> {
  const postings = move(asset, ACCOUNTS.world, [{ account: ACCOUNTS.wallet(party), amount }]);
  await store.postTransfer({ kind: 'mint', postings, at: run.now, memo: `test funds for ${party}` });
  run.minted[asset] += amount;
  run.add(run.mintedTo, key(party, asset), amount);
}

async function setup(run: Run, store: Store, funding: readonly number[]): Promise<void> {
  for (const n of NODES) {
    await store.registerNode({ id: n.id, publicKey: `key-${n.id}`, advertisement: sampleAdvertisement(), now: run.now, providerId: n.providerId });
  }
  for (const [i, party] of PARTIES.entries()) {
    for (const [j, asset] of ASSETS.entries()) {
      const amount = funding[i * ASSETS.length + j] ?? 0;
      if (amount > 0) await mint(run, store, party, asset, amount);
    }
  }
  for (const p of PROVIDERS) for (const asset of ASSETS) run.providerSeen.set(key(p, asset), await store.getBalance(ACCOUNTS.wallet(p), asset));
}

const pctOf = (balance: number, pct: number) => Math.max(1, mulDiv(Math.max(0, balance), pct, 100));

/** Run one command against the store, updating the model on success. Returns what happened, for the log. */
async function exec(run: Run, store: Store, cmd: Cmd): Promise<string> {
  const now = run.now;
  switch (cmd.t) {
    case 'mint': {
      const party = at(PARTIES, cmd.who) as string;
      await mint(run, store, party, cmd.asset, cmd.amount);
      return 'ok';
    }
    case 'submit': {
      const id = run.id('job');
      const buyerId = at(BUYERS, cmd.buyer) as string;
      const spec = sampleJobSpec({
        timeoutSeconds: cmd.timeout,
        maxRetries: cmd.retries,
        resources: { gpu: { count: cmd.gpus } },
        ...(cmd.nodes > 1 && { nodes: cmd.nodes }),
        asset: cmd.asset,
        maxPricePerGpuHour: cmd.cap,
      });
      const payment: JobPaymentRecord = { asset: cmd.asset, capPerUnitHour: cmd.cap, units: cmd.gpus, held: holdFor(spec, cmd.cap) };
      const idempotencyKey = cmd.key === null ? null : `key-${cmd.key}`;
      const keyed = idempotencyKey === null ? undefined : `${buyerId}|${idempotencyKey}`;
      const existing = keyed === undefined ? undefined : run.keys.get(keyed);
      const walletBefore = run.sequential ? await store.getBalance(ACCOUNTS.wallet(buyerId), cmd.asset) : undefined;
      const r = await refusable(store.submitJob({ id, buyerId, spec, idempotencyKey, now, payment }), ['INSUFFICIENT_FUNDS']);
      if (walletBefore !== undefined) {
        assert.equal(r.ok, existing !== undefined || walletBefore >= payment.held, `submit ${id}: a wallet of ${walletBefore} and a hold of ${payment.held}`);
      }
      if (!r.ok || !r.value.created) {
        assert.equal(await store.getJob(id), undefined, `submission ${id} wrote no job of its own`);
        assert.deepEqual(await store.jobTransfers(id), [], `submission ${id} held nothing`);
      }
      if (!r.ok) return `${id} ${r.code}`;
      if (!r.value.created) {
        // The job the key made before (in a concurrent batch possibly one the model learns of a moment later).
        if (run.sequential) assert.equal(r.value.job.id, existing, `submit ${id} with ${idempotencyKey}`);
        return `${id} is ${r.value.job.id} (same key)`;
      }
      if (keyed !== undefined) assert.equal(run.keys.get(keyed), undefined, `${idempotencyKey} made a job before, yet submit ${id} created another`);
      assert.deepEqual(r.value.job.payment, payment);
      run.jobs.set(id, { id, buyerId, payment, billChecked: false });
      if (keyed !== undefined) run.keys.set(keyed, id);
      return `${id} held ${payment.held} ${cmd.asset}`;
    }
    case 'cancel': {
      const open = byId((await store.listJobs({ states: ['queued', 'assigned', 'running'], limit: 500 })).items);
      const job = at(open, cmd.job);
      if (!job) return 'skip';
      const r = await refusable(store.requestCancel(job.id, now), ['JOB_FINISHED']);
      if (run.sequential) assert.equal(r.ok, true, `cancel ${job.id}`);
      return r.ok ? `${job.id} → ${r.value.job.state}` : `${job.id} ${r.code}`;
    }
    case 'assign': {
      const queued = byId((await store.listJobs({ states: ['queued'], limit: 500 })).items);
      const job = at(queued, cmd.job);
      if (!job?.payment) return 'skip';
      const p = job.payment;
      const price = mulDiv(p.capPerUnitHour, cmd.pricePct, 100);
      const stakeLock = stakeToLock(price, p.units, job.spec.timeoutSeconds, cmd.lockMultiple);
      const worldSize = job.spec.nodes ?? 1;
      const members = Array.from({ length: worldSize }, (_, rank) => node(cmd.node + rank));
      const attemptId = run.id('att');
      const ids = members.map((_, rank) => (rank === 0 ? attemptId : `${attemptId}-r${rank}`));
      const peers = members.map((m, rank) => ({ rank, nodeId: m.id }));
      const placements: Placement[] = members.map((m, rank) => ({
        jobId: job.id,
        attemptId: ids[rank] as string,
        nodeId: m.id,
        gpuIndices: Array.from({ length: p.units }, (_, i) => i),
        leaseExpiresAt: now + cmd.leaseMs,
        price: { asset: p.asset, pricePerUnitHour: price, units: p.units, feeBps: cmd.feeBps, providerId: m.providerId, stakeLock, marketClass: 'h100-80gb' },
        ...(worldSize > 1 && { gang: { leaderAttemptId: attemptId, rank, worldSize, peers } }),
      }));
      // Sequential: the store takes the placement exactly when every member's node has the free stake.
      let fits: boolean | undefined;
      if (run.sequential && !job.cancelRequested) {
        const stakes = await store.listStakes();
        const need = new Map<string, number>();
        for (const m of members) run.add(need, m.id, stakeLock);
        fits = [...need].every(([nodeId, n]) => {
          const s = stakes.find((x) => x.nodeId === nodeId);
          return (s?.staked ?? 0) - (s?.locked ?? 0) >= n;
        });
      }
      const written = await store.assign(placements, now);
      if (fits !== undefined) {
        assert.equal(written.length, fits ? worldSize : 0, `assign ${job.id}: free stake ${fits ? 'covers' : 'does not cover'} ${stakeLock} per member`);
      }
      for (const a of written) {
        assert.deepEqual(a.price, placements.find((x) => x.attemptId === a.id)?.price);
        run.attempts.push(a.id);
      }
      return written.length > 0 ? `${job.id} → ${ids.join('+')} at ${price}, lock ${stakeLock}` : `${job.id} not taken: stake short of ${stakeLock}`;
    }
    case 'start': {
      const assigned = byId((await store.listActiveAttempts()).filter((a) => a.state === 'assigned'));
      const a = at(assigned, cmd.attempt);
      if (!a) return 'skip';
      const r = await refusable(store.startAttempt(a.id, a.nodeId, now), ['CONFLICT']);
      if (run.sequential) assert.equal(r.ok, true, `start ${a.id}`);
      return r.ok ? a.id : `${a.id} ${r.code}`;
    }
    case 'finish': {
      let a: AttemptRecord | undefined;
      if (cmd.ended) {
        const id = at(run.attempts, cmd.attempt);
        a = id === undefined ? undefined : await store.getAttempt(id);
      } else {
        a = at(byId(await store.listActiveAttempts()), cmd.attempt);
      }
      if (!a) return 'skip';
      const outcome = cmd.outcome === 'crashed' ? 'failed' : cmd.outcome;
      const exitCode = cmd.outcome === 'succeeded' ? 0 : cmd.outcome === 'failed' ? 3 : null;
      const error = cmd.outcome === 'succeeded' ? null : cmd.outcome === 'crashed' ? 'executor failed' : `${cmd.outcome} on purpose`;
      const report = { attemptId: a.id, nodeId: a.nodeId, outcome, exitCode, error, outputDigest: DIGEST, outputs: [], metrics: { durationMs: 1_000 }, now };
      const r = await refusable(store.finishAttempt(report, decide), ['CONFLICT']);
      if (run.sequential) {
        const active = a.state === 'assigned' || a.state === 'running';
        assert.equal(r.ok, active || (a.state === outcome && a.outputDigest === DIGEST), `finish ${a.id} (${a.state}) as ${outcome}`);
        if (r.ok) assert.equal(r.value.duplicate, !active);
      }
      return r.ok ? `${a.id} ${cmd.outcome} → job ${r.value.job.state}${r.value.duplicate ? ' (duplicate)' : ''}` : `${a.id} ${r.code}`;
    }
    case 'heartbeat': {
      const n = node(cmd.node);
      await store.heartbeat(n.id, now, now + cmd.leaseMs);
      return n.id;
    }
    case 'settle':
      return `${await store.settleRunning(now, cmd.minIntervalMs, cmd.limit)} settled`;
    case 'expire': {
      const lost = await store.expireLeases(now, decide, cmd.limit);
      return lost.map((l) => `${l.attemptId} lost → ${l.jobState}`).join(', ') || 'none';
    }
    case 'stake': {
      const n = node(cmd.node);
      const providerId = cmd.wrongOwner ? (PROVIDERS.find((p) => p !== n.providerId) as string) : n.providerId;
      const balance = await store.getBalance(ACCOUNTS.wallet(providerId), 'usdc');
      const amount = pctOf(balance, cmd.pct);
      const r = await refusable(store.addStake({ nodeId: n.id, providerId, amount, now }), ['INSUFFICIENT_FUNDS', 'FORBIDDEN']);
      if (cmd.wrongOwner) assert.equal(r.ok ? 'ok' : r.code, 'FORBIDDEN', `another provider staking on ${n.id}`);
      else if (run.sequential) assert.equal(r.ok, amount <= balance, `stake ${amount} from a wallet of ${balance}`);
      if (!r.ok) return `${n.id} ${amount} ${r.code}`;
      run.add(run.staked, n.id, amount);
      run.add(run.allowance, key(n.providerId, 'usdc'), amount);
      return `${n.id} +${amount}`;
    }
    case 'unbond': {
      const n = node(cmd.node);
      const providerId = cmd.wrongOwner ? (PROVIDERS.find((p) => p !== n.providerId) as string) : n.providerId;
      const s = await store.getStake(n.id);
      const free = Math.max(0, s.staked - s.locked);
      const amount = pctOf(free, cmd.pct);
      const id = run.id('unbond');
      const r = await refusable(store.unbondStake({ id, nodeId: n.id, providerId, amount, releaseAt: now + cmd.delayMs, now }), [
        'INSUFFICIENT_FUNDS',
        'FORBIDDEN',
      ]);
      if (cmd.wrongOwner) assert.equal(r.ok ? 'ok' : r.code, 'FORBIDDEN', `another provider unbonding from ${n.id}`);
      else if (run.sequential) assert.equal(r.ok, amount <= free, `unbond ${amount} of ${free} free`);
      if (!r.ok) return `${n.id} ${amount} ${r.code}`;
      run.add(run.staked, n.id, -amount);
      return `${n.id} −${amount} (${id})`;
    }
    case 'release':
      return `${await store.releaseUnbonded(now, cmd.limit)} released`;
    case 'slash': {
      const n = node(cmd.node);
      const account = cmd.to < BUYERS.length ? ACCOUNTS.wallet(at(BUYERS, cmd.to) as string) : ACCOUNTS.treasury;
      const before = run.staked.get(n.id) ?? 0;
      const t = await store.slash({ nodeId: n.id, to: [{ account, amount: cmd.amount }], reason: 'property test', now });
      const paid = sum(t.postings.filter((p) => p.amount > 0).map((p) => p.amount));
      assert.equal(sum(t.postings.filter((p) => p.account === ACCOUNTS.stake(n.id)).map((p) => p.amount)), 0 - paid); // 0 −, not −0
      if (run.sequential) assert.equal(paid, Math.min(cmd.amount, before), `slash of ${cmd.amount} from a stake of ${before}`);
      run.add(run.staked, n.id, -paid);
      run.add(run.slashOut, n.id, paid);
      run.add(run.slashIn, account, paid);
      run.slashedNodes.add(n.id);
      return `${n.id} → ${account} ${paid}`;
    }
    case 'payout': {
      const accountId = at(PARTIES, cmd.who) as string;
      const balance = await store.getBalance(ACCOUNTS.wallet(accountId), cmd.asset);
      const amount = pctOf(balance, cmd.pct);
      const id = run.id('payout');
      const r = await refusable(
        store.requestPayout({ id, accountId, asset: cmd.asset, amount, destination: `bank of ${accountId}`, adapter: 'manual', now }),
        ['INSUFFICIENT_FUNDS'],
      );
      if (run.sequential) assert.equal(r.ok, amount <= balance, `payout ${amount} from a wallet of ${balance}`);
      if (!r.ok) {
        assert.equal(await store.getPayout(id), undefined, `refused payout ${id} wrote no row`);
        return `${accountId} ${amount} ${cmd.asset} ${r.code}`;
      }
      run.payouts.set(id, { id, accountId, asset: cmd.asset, amount, state: 'pending' });
      if (PROVIDERS.includes(accountId)) run.add(run.allowance, key(accountId, cmd.asset), amount);
      return `${id}: ${accountId} ${amount} ${cmd.asset}`;
    }
    case 'complete':
    case 'reject': {
      // Picked from the model synchronously, so every command of a concurrent batch sees the same payouts.
      const all = byId([...run.payouts.values()]);
      const p = at(
        cmd.ended ? all : all.filter((x) => x.state === 'pending'),
        cmd.payout,
      );
      if (!p) return 'skip';
      const wasPending = p.state === 'pending';
      const verb = cmd.t === 'complete' ? store.completePayout(p.id, `ref-${p.id}`, now) : store.rejectPayout(p.id, 'property test', now);
      const r = await refusable(verb, ['CONFLICT']);
      if (run.sequential) assert.equal(r.ok, wasPending, `${cmd.t} ${p.id} (${p.state})`);
      if (!r.ok) return `${p.id} ${r.code}`;
      assert.equal(p.state, 'pending', `${p.id} left pending twice (now ${cmd.t})`);
      p.state = cmd.t === 'complete' ? 'completed' : 'rejected';
      assert.equal(r.value.state, p.state);
      if (cmd.t === 'complete') {
        run.minted[p.asset] -= p.amount;
        run.add(run.completedBy, key(p.accountId, p.asset), p.amount);
      }
      return `${p.id} ${p.state}`;
    }
    case 'advance':
      run.now += cmd.ms;
      return `now T0+${run.now - T0}`;
  }
}

// ---- invariants ----

/** Checks of one job's bill (its transfers, oldest first) against its attempts. Returns its money flows. */
async function checkBill(run: Run, store: Store, job: JobRecord) {
  const m = run.jobs.get(job.id);
  assert.ok(m, `job ${job.id} is in the model`);
  const { asset } = m.payment;
  const escrow = ACCOUNTS.escrow(job.id);
  const wallet = ACCOUNTS.wallet(m.buyerId);
  const transfers = await store.jobTransfers(job.id);
  const attempts = await store.listAttempts(job.id);
  const what = `job ${job.id} (${job.state})`;
  let held = 0;
  let charged = 0;
  let released = 0;
  let fees = 0;
  const income = new Map<string, number>(); // provider → paid
  const perAttempt = new Map<string, { charged: number; fee: number }>();
  for (const [i, t] of transfers.entries()) {
    const legs = new Map(t.postings.map((p) => [p.account, p.amount]));
    assert.equal(legs.size, t.postings.length, `${what}: one posting per account in ${t.kind}`);
    for (const p of t.postings) assert.equal(p.asset, asset, `${what}: ${t.kind} in the job's asset`);
    const out = -(legs.get(escrow) ?? 0);
    switch (t.kind) {
      case 'escrow.hold':
        assert.equal(i, 0, `${what}: the hold comes first`);
        assert.deepEqual(
          legs,
          new Map<string, number>([
            [escrow, m.payment.held],
            [wallet, -m.payment.held],
          ]),
          `${what}: the hold moves payment.held from the buyer`,
        );
        held += m.payment.held;
        break;
      case 'escrow.topup':
        assert.ok(-out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a top-up moves money from the buyer to the escrow`);
        held += -out;
        break;
      case 'escrow.release':
        assert.ok(out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a release moves money from the escrow to the buyer`);
        assert.ok(isTerminal(job.state), `${what}: only a finished job's escrow is released`);
        released += out;
        break;
      case 'settlement': {
        const a = attempts.find((x) => x.id === t.attemptId);
        assert.ok(a?.price, `${what}: settlement ${t.id} names a priced attempt of the job`);
        const fee = legs.get(ACCOUNTS.treasury) ?? 0;
        const provider = legs.get(ACCOUNTS.wallet(a.price.providerId)) ?? 0;
        const paysOut = out > 0 && fee >= 0 && provider >= 0 && fee + provider === out;
        assert.ok(paysOut, `${what}: settlement ${t.id} pays the escrow out to the provider and the treasury`);
        assert.equal(legs.size, 1 + (fee > 0 ? 1 : 0) + (provider > 0 ? 1 : 0), `${what}: settlement ${t.id} has no other legs`);
        const s = perAttempt.get(a.id) ?? { charged: 0, fee: 0 };
        perAttempt.set(a.id, { charged: s.charged + out, fee: s.fee + fee });
        charged += out;
        fees += fee;
        run.add(income, a.price.providerId, provider);
        break;
      }
      default:
        assert.fail(`${what}: unexpected ${t.kind} transfer in a job's bill`);
    }
  }
  assert.equal(transfers[0]?.kind, 'escrow.hold', `${what}: its bill starts with the hold`);
  const balance = await store.getBalance(escrow, asset);
  assert.equal(balance, held - charged - released, `${what}: escrow = holds + top-ups − charges − releases`);
  assert.ok(charged <= held, `${what}: charged ${charged} ≤ held ${held}`);
  if (isTerminal(job.state)) assert.equal(balance, 0, `${what}: a finished job's escrow is empty`);
  for (const a of attempts) {
    const s = perAttempt.get(a.id) ?? { charged: 0, fee: 0 };
    assert.deepEqual({ charged: a.settlement.charged, fee: a.settlement.fee }, s, `${what}: attempt ${a.id}'s settlement totals match its transfers`);
    if (!a.price || a.startedAt === null) {
      assert.equal(s.charged, 0, `${what}: attempt ${a.id} never ran at a price, so it charged nothing`);
      continue;
    }
    const ran = (a.finishedAt ?? run.now) - a.startedAt;
    assert.equal(s.fee, feeOf(s.charged, a.price.feeBps), `${what}: attempt ${a.id}'s fee is exactly its fee rate on what it charged`);
    assert.ok(a.settlement.settledMs <= ran, `${what}: attempt ${a.id} settled ${a.settlement.settledMs} ms of ${ran}`);
    const most = chargeFor(a.price.pricePerUnitHour, a.price.units, ran, job.spec.timeoutSeconds);
    assert.ok(s.charged <= most, `${what}: attempt ${a.id} charged ${s.charged}, at most ${most} for ${ran} ms`);
  }
  return { charged, fees, income, balance };
}

/** The invariants after every step (one command, or one concurrent batch). */
async function checkStep(run: Run, store: Store): Promise<void> {
  const totals = await store.ledgerTotals();
  for (const asset of ASSETS) {
    const t = totals.find((x) => x.asset === asset);
    assert.equal(t?.minted ?? 0, run.minted[asset], `${asset}: the ledger's minted equals the model's mints − completed payouts`);
    if (!t) continue;
    assert.equal(t.inside, t.minted, `${asset}: every account but the world sums to what was minted`);
    assert.equal(t.negativeAccounts, 0, `${asset}: no account below zero`);
  }

  const jobs = await store.getJobs([...run.jobs.keys()]);
  assert.equal(jobs.length, run.jobs.size, 'every submitted job exists');
  for (const job of jobs) {
    const m = run.jobs.get(job.id) as JobModel;
    assert.deepEqual(job.payment, m.payment, `job ${job.id}: payment is fixed at submission`);
    const escrow = await store.getBalance(ACCOUNTS.escrow(job.id), m.payment.asset);
    if (isTerminal(job.state)) {
      assert.equal(escrow, 0, `job ${job.id} (${job.state}): a finished job's escrow is empty`);
      if (!m.billChecked) {
        await checkBill(run, store, job);
        m.billChecked = true;
      }
    } else {
      assert.ok(escrow <= m.payment.held, `job ${job.id} (${job.state}): escrow ${escrow} ≤ the hold ${m.payment.held}`);
    }
  }

  for (const p of PROVIDERS) {
    for (const asset of ASSETS) {
      const k = key(p, asset);
      const balance = await store.getBalance(ACCOUNTS.wallet(p), asset);
      const floor = (run.providerSeen.get(k) ?? 0) - (run.allowance.get(k) ?? 0);
      assert.ok(balance >= floor, `${p} ${asset}: the wallet went from ${run.providerSeen.get(k)} to ${balance}, more than its own deposits and payouts took`);
      run.providerSeen.set(k, balance);
    }
  }
  run.allowance.clear();

  const stakes = await store.listStakes();
  const active = await store.listActiveAttempts();
  for (const n of NODES) {
    const s = stakes.find((x) => x.nodeId === n.id) ?? { staked: 0, locked: 0 };
    assert.equal(s.staked, run.staked.get(n.id) ?? 0, `${n.id}: staked = deposits − unbonds − slashes`);
    const locks = sum(active.filter((a) => a.nodeId === n.id).map((a) => a.price?.stakeLock ?? 0));
    assert.equal(s.locked, locks, `${n.id}: locked = the stake locks of its active attempts`);
    if (!run.slashedNodes.has(n.id)) assert.ok(s.locked <= s.staked, `${n.id}: locked ${s.locked} ≤ staked ${s.staked} (never slashed)`);
  }
  for (const a of active) {
    const job = jobs.find((j) => j.id === a.jobId);
    assert.ok(job && !isTerminal(job.state), `active attempt ${a.id} belongs to an unfinished job (${job?.state})`);
  }
}

/** At the end of a run: every bill, and each party's money conserved exactly. */
async function checkEnd(run: Run, store: Store): Promise<void> {
  const jobs = byId(await store.getJobs([...run.jobs.keys()]));
  const charged = new Map<string, number>(); // key(buyer, asset)
  const escrowed = new Map<string, number>();
  const income = new Map<string, number>(); // key(provider, asset)
  const fees = new Map<string, number>(); // asset
  for (const job of jobs) {
    const bill = await checkBill(run, store, job);
    const m = run.jobs.get(job.id) as JobModel;
    run.add(charged, key(m.buyerId, m.payment.asset), bill.charged);
    run.add(escrowed, key(m.buyerId, m.payment.asset), bill.balance);
    run.add(fees, m.payment.asset, bill.fees);
    for (const [p, amount] of bill.income) run.add(income, key(p, m.payment.asset), amount);
    run.count(`job ${job.state}`);
  }
  const pending = new Map<string, number>();
  for (const p of run.payouts.values()) {
    const stored = await store.getPayout(p.id);
    assert.equal(stored?.state, p.state, `payout ${p.id}`);
    const inPayout = await store.getBalance(ACCOUNTS.payout(p.id), p.asset);
    assert.equal(inPayout, p.state === 'pending' ? p.amount : 0, `payout ${p.id} (${p.state}) holds its amount while pending`);
    if (p.state === 'pending') run.add(pending, key(p.accountId, p.asset), p.amount);
  }
  const nodeMoney = new Map<string, number>(); // provider → stake + unbonding (USDC)
  for (const n of NODES) {
    const s = await store.getStake(n.id);
    assert.equal(s.providerId, n.providerId);
    const unbonding = await store.getBalance(ACCOUNTS.unbonding(n.id), 'usdc');
    assert.equal(sum(s.unbonding.map((u) => u.amount)), unbonding, `${n.id}: open unbondings = the unbonding account`);
    run.add(nodeMoney, n.providerId, s.staked + unbonding);
  }
  for (const asset of ASSETS) {
    const g = (map: Map<string, number>, k: string) => map.get(k) ?? 0;
    for (const b of BUYERS) {
      const k = key(b, asset);
      const has = (await store.getBalance(ACCOUNTS.wallet(b), asset)) + g(escrowed, k) + g(pending, k);
      const slashed = asset === 'usdc' ? g(run.slashIn, ACCOUNTS.wallet(b)) : 0;
      const expected = g(run.mintedTo, k) - g(run.completedBy, k) + slashed - g(charged, k);
      assert.equal(has, expected, `${b} ${asset}: wallet + escrow + pending payouts = minted − paid out + slashes received − charged`);
      const held = await store.escrowOfBuyer(b);
      assert.equal(held[asset] ?? 0, g(escrowed, k), `${b} ${asset}: escrowOfBuyer sums its unfinished jobs' escrow`);
    }
    for (const p of PROVIDERS) {
      const k = key(p, asset);
      const staked = asset === 'usdc' ? g(nodeMoney, p) : 0;
      const slashedOut = asset === 'usdc' ? sum(NODES.filter((n) => n.providerId === p).map((n) => g(run.slashOut, n.id))) : 0;
      const has = (await store.getBalance(ACCOUNTS.wallet(p), asset)) + staked + g(pending, k);
      const expected = g(run.mintedTo, k) - g(run.completedBy, k) + g(income, k) - slashedOut;
      assert.equal(has, expected, `${p} ${asset}: wallet + stake + unbonding + pending payouts = minted − paid out + earned − slashed`);
      const debits = (await store.walletHistory(p, { asset, limit: 10_000 })).items.filter((e) => e.amount < 0);
      for (const e of debits) assert.ok(e.kind === 'stake.deposit' || e.kind === 'payout.request', `${p}: its wallet was debited by ${e.kind}`);
    }
    const treasury = g(fees, asset) + (asset === 'usdc' ? g(run.slashIn, ACCOUNTS.treasury) : 0);
    assert.equal(await store.getBalance(ACCOUNTS.treasury, asset), treasury, `treasury ${asset}: fees + slashes to the treasury`);
  }
}

/** For the coverage counters: nothing to act on, a refusal (ends in its code), stake short, or done. */
const classify = (out: string) => (out === 'skip' ? 'skip' : /\b[A-Z_]{6,}$/.test(out) ? 'refused' : /stake short/.test(out) ? 'stake short' : 'ok');

/** Rethrow with the run's log, so a failure shows what the store did, not only the commands. */
async function withLog(run: Run, fn: () => Promise<void>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    throw new Error(`${message}\n--- what the run did (latest last) ---\n${run.tail()}`, { cause: err });
  }
}

/** Interpret `cmds` one at a time, checking after each. */
async function runSequence(store: Store, funding: readonly number[], cmds: readonly Cmd[], stats: Map<string, number>): Promise<void> {
  const run = new Run(true, stats);
  await withLog(run, async () => {
    await setup(run, store, funding);
    await checkStep(run, store);
    await runCommands(run, store, cmds, '');
    await checkEnd(run, store);
  });
}

/** One command at a time, each checked. */
async function runCommands(run: Run, store: Store, cmds: readonly Cmd[], tag: string): Promise<void> {
  for (const [i, cmd] of cmds.entries()) {
    const out = await exec(run, store, cmd);
    run.log.push(`${tag}#${i} ${JSON.stringify(cmd)} → ${out}`);
    run.count(`${tag}${cmd.t} ${classify(out)}`);
    await checkStep(run, store);
  }
}

interface Batch {
  advanceMs: number;
  cmds: Cmd[];
}

/**
 * A sequential prefix (jobs running, stake bonded, payouts pending: something to race on), then each
 * batch's commands at once (alternating pools), checking after each batch.
 */
async function runBatches(
  stores: readonly Store[],
  funding: readonly number[],
  prefix: readonly Cmd[],
  batches: readonly Batch[],
  stats: Map<string, number>,
): Promise<void> {
  const run = new Run(true, stats);
  const first = stores[0] as Store;
  await withLog(run, async () => {
    await setup(run, first, funding);
    await checkStep(run, first);
    await runCommands(run, first, prefix, 'prefix ');
    run.sequential = false;
    for (const [i, batch] of batches.entries()) {
      run.now += batch.advanceMs;
      const settled = await Promise.allSettled(batch.cmds.map((cmd, j) => exec(run, stores[j % stores.length] as Store, cmd)));
      for (const [j, s] of settled.entries()) {
        const cmd = batch.cmds[j] as Cmd;
        run.log.push(`#${i}.${j} ${JSON.stringify(cmd)} → ${s.status === 'fulfilled' ? s.value : `THREW ${String(s.reason)}`}`);
        if (s.status === 'fulfilled') run.count(`${cmd.t} ${classify(s.value)}`);
      }
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
      if (failed) throw failed.reason;
      await checkStep(run, first);
    }
    await checkEnd(run, first);
  });
}

// ---- concurrent batches: random ones, and races on purpose ----

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
  fc.record({ job: pickArb, a: arbs.assign, attempt: pickArb }).map(({ job, a, attempt }): Cmd[] => [
    { t: 'cancel', job },
    { ...a, job },
    { t: 'finish', attempt, outcome: 'crashed', ended: false },
    { t: 'release', limit: 10 },
  ]),
);

const batchArb: fc.Arbitrary<Batch> = fc.record({
  advanceMs: fc.integer({ min: 0, max: 600_000 }),
  cmds: fc.oneof(
    fc.array(
      cmdArb.filter((c) => c.t !== 'advance'),
      { minLength: 2, maxLength: 6 },
    ),
    raceArb,
  ),
});

// ---- the tests ----

type OpenRun = () => Promise<{ stores: Store[]; done(): Promise<void> }>;

/** USDC into a wallet, for the targeted races. */
async function fund(store: Store, accountId: string, amount: number): Promise<void> {
  await store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.wallet(accountId), amount }]), at: T0, memo: 'funds' });
}

function diagnostics(t: { diagnostic(m: string): void }, stats: Map<string, number>): void {
  t.diagnostic([...stats.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}: ${v}`).join(', '));
}

/** The runs did real work: money moved through every kind of step the invariants are about. */
function assertCoverage(stats: Map<string, number>, what: readonly (string | string[])[]): void {
  for (const w of what) {
    const any = typeof w === 'string' ? [w] : w;
    assert.ok(sum(any.map((k) => stats.get(k) ?? 0)) > 0, `the runs never did "${any.join('" or "')}": the property tested little`);
  }
}
const PIPELINE = ['submit ok', 'assign ok', 'start ok', 'finish ok', 'stake ok', 'payout ok'];

function sequentialProperty(label: string, open: OpenRun, numRuns: number): void {
  test(`${label}: random sequences of market operations keep the ledger balanced after every step`, async (t) => {
    const stats = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(fundingArb, fc.array(cmdArb, { minLength: 1, maxLength: 40, size: 'max' }), async (funding, cmds) => {
        const h = await open();
        try {
          await runSequence(h.stores[0] as Store, funding, cmds, stats);
        } finally {
          await h.done();
        }
      }),
      { numRuns: runs(numRuns), includeErrorInReport: true },
    );
    diagnostics(t, stats);
    assertCoverage(stats, PIPELINE);
  });
}

describe('ledger properties on SQLite', () => {
  const dir = tempDir('gpux-ledger-property');
  let opened = 0;
  after(() => dir.cleanup());
  sequentialProperty(
    'sqlite',
    async () => {
      const store = await openSqliteStore(join(dir.path, `run-${opened++}.db`));
      return { stores: [store], done: () => store.close() };
    },
    50,
  );
});

describe('ledger properties on PostgreSQL', requirePostgres(), () => {
  let server: PostgresServer;
  let url: string;
  let admin: pg.Client;
  let stores: Store[] = [];
  let tables = '';
  before(async () => {
    server = await startPostgres();
    url = await server.newDatabase();
    // Two pools on one database: commands of a batch alternate between them, as two coordinators would.
    stores = await Promise.all([openPostgresStore(url, { max: 4 }), openPostgresStore(url, { max: 4 })]);
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
    const { rows } = await admin.query<{ t: string }>(`select tablename as t from pg_tables where schemaname = 'public' and tablename <> 'gpux_migrations'`);
    tables = rows.map((r) => `"${r.t}"`).join(', ');
  });
  after(async () => {
    await Promise.all(stores.map((s) => s.close()));
    await admin?.end();
    await server?.stop();
  });

  /** Each run starts on an empty database (emptying is much cheaper than a new database per run). */
  const open: OpenRun = async () => {
    await admin.query(`truncate ${tables} restart identity cascade`);
    return { stores, done: async () => undefined };
  };

  sequentialProperty('postgres', open, 25);

  test('postgres: random batches of concurrent operations keep the ledger balanced after every batch', async (t) => {
    const stats = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fundingArb,
        fc.array(cmdArb, { maxLength: 30, size: 'max' }),
        fc.array(batchArb, { minLength: 1, maxLength: 15, size: 'max' }),
        async (funding, prefix, batches) => {
          const h = await open();
          await runBatches(h.stores, funding, prefix, batches, stats);
        },
      ),
      // No shrinking: a concurrent failure need not replay, and the run's log (in the error) shows the race.
      { numRuns: runs(25), includeErrorInReport: true, endOnFailure: true },
    );
    diagnostics(t, stats);
    // Jobs get running in the sequential prefixes and the batches; the batches race on money.
    assertCoverage(stats, [...PIPELINE.map((w) => [w, `prefix ${w}`]), 'submit ok', 'assign ok', 'stake ok', 'payout ok', 'settle ok']);
  });

  test('postgres: concurrent submissions from one wallet: exactly those the wallet covers are taken', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          gpus: fc.integer({ min: 1, max: 2 }),
          timeout: fc.constantFrom(...TIMEOUTS),
          cap: fc.constantFrom(...CAPS),
          n: fc.integer({ min: 2, max: 6 }),
          fit: fc.nat({ max: 6 }),
          spare: fc.nat(),
        }),
        async ({ gpus, timeout, cap, n, fit, spare }) => {
          await open();
          const spec = sampleJobSpec({ timeoutSeconds: timeout, resources: { gpu: { count: gpus } }, maxPricePerGpuHour: cap });
          const held = holdFor(spec, cap);
          const covered = Math.min(fit, n - 1); // at least one submission must be refused
          const wallet = covered * held + (spare % held); // covers `covered` holds, not one more
          if (wallet > 0) {
            await fund(stores[0] as Store, 'b', wallet);
          }
          const results = await Promise.all(
            Array.from({ length: n }, (_, i) =>
              refusable(
                (stores[i % 2] as Store).submitJob({
                  id: `job-${i}`,
                  buyerId: 'b',
                  spec,
                  idempotencyKey: null,
                  now: T0 + 1,
                  payment: { asset: 'usdc', capPerUnitHour: cap, units: gpus, held },
                }),
                ['INSUFFICIENT_FUNDS'],
              ),
            ),
          );
          const store = stores[0] as Store;
          assert.equal(results.filter((r) => r.ok).length, covered, `a wallet of ${wallet} covers ${covered} holds of ${held}`);
          assert.equal(await store.getBalance(ACCOUNTS.wallet('b'), 'usdc'), wallet - covered * held);
          assert.deepEqual(await store.escrowOfBuyer('b'), covered > 0 ? { usdc: covered * held } : {});
          assert.equal((await store.listJobs({ buyerId: 'b', limit: 10 })).items.length, covered, 'refused submissions wrote no job');
          for (const tot of await store.ledgerTotals()) {
            assert.equal(tot.inside, tot.minted);
            assert.equal(tot.negativeAccounts, 0);
          }
        },
      ),
      { numRuns: runs(15), includeErrorInReport: true },
    );
  });

  test('postgres: unbonding racing assignment on the same node never leaves locked above staked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          staked: fc.integer({ min: 1, max: 50_000_000 }),
          prices: fc.array(fc.integer({ min: 1, max: 2_000_000 }), { minLength: 1, maxLength: 3 }),
          unbonds: fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 3 }),
        }),
        async ({ staked, prices, unbonds }) => {
          await open();
          const store = stores[0] as Store;
          await store.registerNode({ id: 'n', publicKey: 'k', advertisement: sampleAdvertisement(), now: T0, providerId: 'p' });
          await fund(store, 'p', staked);
          await store.addStake({ nodeId: 'n', providerId: 'p', amount: staked, now: T0 });
          const spec = sampleJobSpec({ timeoutSeconds: 600, resources: { gpu: { count: 1 } } });
          const cap = 2_000_000;
          const held = holdFor(spec, cap);
          await fund(store, 'b', held * prices.length);
          for (const i of prices.keys()) {
            const payment: JobPaymentRecord = { asset: 'usdc', capPerUnitHour: cap, units: 1, held };
            await store.submitJob({ id: `job-${i}`, buyerId: 'b', spec, idempotencyKey: null, now: T0, payment });
          }
          const locks = prices.map((p) => stakeToLock(p, 1, 600));
          const assigns = prices.map((p, i) =>
            (stores[i % 2] as Store).assign(
              [
                {
                  jobId: `job-${i}`,
                  attemptId: `att-${i}`,
                  nodeId: 'n',
                  gpuIndices: [0],
                  leaseExpiresAt: T0 + 60_000,
                  price: {
                    asset: 'usdc',
                    pricePerUnitHour: p,
                    units: 1,
                    feeBps: 500,
                    providerId: 'p',
                    stakeLock: locks[i] as number,
                    marketClass: 'h100-80gb',
                  },
                },
              ],
              T0 + 1,
            ),
          );
          const unbonding = unbonds.map((pct, i) => {
            const amount = pctOf(staked, pct);
            return refusable(
              (stores[(i + 1) % 2] as Store).unbondStake({ id: `u-${i}`, nodeId: 'n', providerId: 'p', amount, releaseAt: T0 + 10, now: T0 + 1 }),
              ['INSUFFICIENT_FUNDS'],
            ).then((r) => (r.ok ? amount : 0));
          });
          const [assigned, unbonded] = await Promise.all([Promise.all(assigns), Promise.all(unbonding)]);
          const s = await store.getStake('n');
          const taken = assigned.flat();
          assert.equal(s.staked, staked - sum(unbonded), 'staked = deposit − the unbonds that went through');
          assert.equal(s.locked, sum(taken.map((a) => a.price?.stakeLock ?? 0)), 'locked = the locks of the assignments that went through');
          assert.ok(s.locked <= s.staked, `locked ${s.locked} ≤ staked ${s.staked}`);
          // Nothing was refused that fitted once the others had gone through.
          const free = s.staked - s.locked;
          for (const [i, lock] of locks.entries()) {
            if (!taken.some((a) => a.jobId === `job-${i}`)) assert.ok(lock > free, `job-${i} (lock ${lock}) was skipped with ${free} free`);
          }
          for (const [i, pct] of unbonds.entries()) if (unbonded[i] === 0) assert.ok(pctOf(staked, pct) > free, `unbond u-${i} was refused with ${free} free`);
          assert.equal(await store.releaseUnbonded(T0 + 10, 10), unbonded.filter((u) => u > 0).length);
          assert.equal(await store.getBalance(ACCOUNTS.wallet('p'), 'usdc'), sum(unbonded));
        },
      ),
      { numRuns: runs(20), includeErrorInReport: true },
    );
  });

  // The race the random batches found: one gang member's end stops the others (attempt → job → siblings)
  // while a sibling's own end holds the sibling and waits for the job.
  test('postgres: two members of a paid gang ending at once both settle, and neither verb fails', async () => {
    await open();
    const [a, b] = stores as [Store, Store];
    const spec = sampleJobSpec({ timeoutSeconds: 600, maxRetries: 0, nodes: 2, resources: { gpu: { count: 1 } } });
    const cap = 1_000_000;
    const held = holdFor(spec, cap);
    const price = 600_000;
    const lock = stakeToLock(price, 1, 600);
    const rounds = 15;
    for (const n of NODES.slice(0, 2)) {
      await a.registerNode({ id: n.id, publicKey: n.id, advertisement: sampleAdvertisement(), now: T0, providerId: n.providerId });
      await fund(a, n.providerId, lock);
      await a.addStake({ nodeId: n.id, providerId: n.providerId, amount: lock, now: T0 });
    }
    await fund(a, 'b', 2 * rounds * held);
    const errors: string[] = [];
    let charged = 0;
    for (let i = 0; i < 2 * rounds; i++) {
      const job = `job-${String(i).padStart(2, '0')}`;
      const start = T0 + i * 1_000_000;
      const payment: JobPaymentRecord = { asset: 'usdc', capPerUnitHour: cap, units: 1, held };
      await a.submitJob({ id: job, buyerId: 'b', spec, idempotencyKey: null, now: start, payment });
      const peers = NODES.slice(0, 2).map((n, rank) => ({ rank, nodeId: n.id }));
      const placements: Placement[] = NODES.slice(0, 2).map((n, rank) => ({
        jobId: job,
        attemptId: `${job}-r${rank}`,
        nodeId: n.id,
        gpuIndices: [0],
        leaseExpiresAt: start + 30_000,
        price: { asset: 'usdc', pricePerUnitHour: price, units: 1, feeBps: 500, providerId: n.providerId, stakeLock: lock, marketClass: 'h100-80gb' },
        gang: { leaderAttemptId: `${job}-r0`, rank, worldSize: 2, peers },
      }));
      assert.equal((await a.assign(placements, start)).length, 2);
      for (const p of placements) await a.startAttempt(p.attemptId, p.nodeId, start + 1);
      const end = start + 60_001; // both ran 60 s, past their leases
      const report = (rank: number, outcome: 'succeeded' | 'failed') => ({
        attemptId: `${job}-r${rank}`,
        nodeId: NODES[rank]?.id as string,
        outcome,
        exitCode: outcome === 'succeeded' ? 0 : null,
        error: outcome === 'succeeded' ? null : 'executor failed',
        outputDigest: DIGEST,
        outputs: [],
        metrics: { durationMs: 60_000 },
        now: end,
      });
      // Even rounds: rank 0 fails while rank 1 succeeds; odd rounds: the leases expire while rank 1 succeeds.
      const other = i % 2 === 0 ? b.finishAttempt(report(0, 'failed'), decide) : b.expireLeases(end, decide, 10);
      const settled = await Promise.allSettled([other, refusable(a.finishAttempt(report(1, 'succeeded'), decide), ['CONFLICT'])]);
      for (const r of settled) if (r.status === 'rejected') errors.push(`${job}: ${String(r.reason)}`);
      if (settled.some((r) => r.status === 'rejected')) continue;
      const j = await a.getJob(job);
      assert.equal(j?.state, 'failed', job);
      assert.equal(await a.getBalance(ACCOUNTS.escrow(job), 'usdc'), 0, `${job}: a finished job's escrow is empty`);
      for (const att of await a.listAttempts(job)) {
        assert.ok(!['assigned', 'running'].includes(att.state), `${job}: ${att.id} ended (${att.state})`);
        // A lost attempt is not settled further; an attempt that ended by its report or the gang stop is paid for its 60 s.
        if (att.state !== 'lost') assert.equal(att.settlement.charged, chargeFor(price, 1, 60_000, 600), `${job}: ${att.id} (${att.state}) charged`);
        charged += att.settlement.charged;
      }
    }
    assert.deepEqual(errors, [], 'every verb answered or refused; none failed');
    assert.equal(await a.getBalance(ACCOUNTS.wallet('b'), 'usdc'), 2 * rounds * held - charged, 'the buyer paid exactly what the attempts charged');
    for (const tot of await a.ledgerTotals()) {
      assert.equal(tot.inside, tot.minted);
      assert.equal(tot.negativeAccounts, 0);
    }
    assert.deepEqual(await a.listStakes(), NODES.slice(0, 2).map((n) => ({ nodeId: n.id, staked: lock, locked: 0 })), 'no lock outlives its attempt');
  });
});
