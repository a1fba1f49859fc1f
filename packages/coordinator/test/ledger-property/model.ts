/**
 * The reference model of one run: what was minted, submitted, staked, slashed and paid out as the test
 * saw it succeed, the bookkeeping the invariants compare the store against, the run's log, and the
 * coverage counters. `mint` and `setup` change the store and the model together.
 */
import { ACCOUNTS, type JobPaymentRecord, move, type Store } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import { fund, registerNode } from './store-helpers.js';
import { ASSETS, key, NODES, PARTIES, PROVIDERS, T0 } from './world.js';

export interface JobModel {
  id: string;
  buyerId: string;
  payment: JobPaymentRecord;
  /** A buyer's job, or a check run (audit, replica, referee) the verification step wrote. */
  kind: 'buyer' | 'audit' | 'referee';
  /** The buyer's job this one checks (itself for a buyer's job). */
  rootId: string;
  /** Pay held until verification (issue 11). */
  holdPay: boolean;
  /** Where its first hold came from and how much it was: the buyer's wallet, or the treasury (audits, referees: every try). */
  funder: string;
  holdTotal: number;
  /** Its bill is checked once, at the first step that finds it finished. */
  billChecked: boolean;
}

export interface PayoutModel {
  id: string;
  accountId: string;
  asset: Asset;
  amount: number;
  state: 'pending' | 'completed' | 'rejected';
}

/** What one run did, as the model sees it, and the counters the coverage diagnostics print. */
export class Run {
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
  /** job id → the latest an attempt active at its cancel may be charged to (cancel + grace). */
  readonly cancelStops = new Map<string, number>();
  readonly payouts = new Map<string, PayoutModel>();
  readonly staked = new Map<string, number>();
  readonly slashedNodes = new Set<string>();
  /** USDC slashed out of each node / into each account. */
  readonly slashOut = new Map<string, number>();
  readonly slashIn = new Map<string, number>();
  /** key(provider, asset) → balance after the last step, and what the step may take out of it. */
  readonly providerSeen = new Map<string, number>();
  readonly allowance = new Map<string, number>();
  /** key(provider, asset) → abandoned-lease fees its wallet paid so far (penalty.fee). */
  readonly leaseFeesPaid = new Map<string, number>();
  /** node id → when it lost leases (sequential runs: the model's count of abandoned leases). */
  readonly leaseLosses = new Map<string, number[]>();
  readonly log: string[] = [];
  /** Verification (issue 11): nodes that ever reported a wrong result of a verified job, and those attempts. */
  readonly liars = new Set<string>();
  readonly lies = new Set<string>();
  /** Nodes banned by a wrong-result penalty (the scheduler never places work on them again). */
  readonly banned = new Set<string>();
  /** USDC slashed from each node by wrong-result penalties (the model's stake follows the penalty rows). */
  readonly penaltySlashed = new Map<string, number>();
  /** Wrong-result penalty rows already accounted for. */
  readonly penaltiesSeen = new Set<string>();
  /** Money the operator put into the treasury (its audit budget). */
  readonly treasuryFunded: Record<Asset, number> = { usdc: 0, credit: 0 };
  /** replicas: 2 → the replica run's id → its hold, taken at submission (the run is written when the job ends with a result). */
  readonly replicaHolds = new Map<string, { rootId: string; held: number }>();
  /** The kind of the command the step ran (sequential runs); undefined for a concurrent batch. */
  lastCommand: string | undefined = undefined;
  /** Each step's label as last seen (the coverage counters count each change). */
  readonly stepLabels = new Map<string, string>();
  /** Steps whose money was checked settled (resolved, every check run ended). */
  readonly settledSteps = new Set<string>();
  /**
   * Verified buyer's job → its dispute: the bond, whether it was right (the model knows), and the check runs
   * the step had before it (the later referee runs are the dispute's).
   */
  readonly disputes = new Map<string, { bond: number; right: boolean; buyerId: string; checksBefore: ReadonlySet<string> }>();

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

/** Mint into a party's wallet, in the store and the model. */
export async function mint(run: Run, store: Store, party: string, asset: Asset, amount: number): Promise<void> {
  await fund(store, party, amount, asset, run.now);
  run.minted[asset] += amount;
  run.add(run.mintedTo, key(party, asset), amount);
}

/** The operator funds the treasury (its audit budget), in the store and the model. */
export async function fundTreasury(run: Run, store: Store, asset: Asset, amount: number): Promise<void> {
  const postings = move(asset, ACCOUNTS.world, [{ account: ACCOUNTS.treasury, amount }]);
  await store.postTransfer({ kind: 'deposit', postings, at: run.now, memo: 'the operator funds the audit budget', reference: run.id('deposit') });
  run.minted[asset] += amount;
  run.treasuryFunded[asset] += amount;
}

/** A run's start: the nodes registered, each party's initial funds and the treasury's minted, the providers' wallets seen. */
export async function setup(run: Run, store: Store, funding: readonly number[]): Promise<void> {
  for (const n of NODES) await registerNode(store, n.id, n.providerId, run.now);
  for (const [i, party] of PARTIES.entries()) {
    for (const [j, asset] of ASSETS.entries()) {
      const amount = funding[i * ASSETS.length + j] ?? 0;
      if (amount > 0) await mint(run, store, party, asset, amount);
    }
  }
  // Then the treasury's audit budget (issue 11), as the operator's deposits.
  for (const [j, asset] of ASSETS.entries()) {
    const amount = funding[PARTIES.length * ASSETS.length + j] ?? 0;
    if (amount > 0) await fundTreasury(run, store, asset, amount);
  }
  // Every node starts with stake (a share of its provider's USDC), so assignments are taken from the first command.
  for (const n of NODES) {
    const amount = Math.floor((await store.getBalance(ACCOUNTS.wallet(n.providerId), 'usdc')) / 3);
    if (amount <= 0) continue;
    await store.addStake({ nodeId: n.id, providerId: n.providerId, amount, now: run.now });
    run.add(run.staked, n.id, amount);
  }
  for (const p of PROVIDERS) for (const asset of ASSETS) run.providerSeen.set(key(p, asset), await store.getBalance(ACCOUNTS.wallet(p), asset));
}
