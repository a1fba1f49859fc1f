/**
 * The reference model of one run: what was minted, submitted, staked, slashed and paid out as the test
 * saw it succeed, the bookkeeping the invariants compare the store against, the run's log, and the
 * coverage counters. `mint` and `setup` change the store and the model together.
 */
import { ACCOUNTS, type JobPaymentRecord, type Store } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import { fund, registerNode } from './store-helpers.js';
import { ASSETS, key, NODES, PARTIES, PROVIDERS, T0 } from './world.js';

export interface JobModel {
  id: string;
  buyerId: string;
  payment: JobPaymentRecord;
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

/** A run's start: the nodes registered, each party's initial funds minted, the providers' wallets seen. */
export async function setup(run: Run, store: Store, funding: readonly number[]): Promise<void> {
  for (const n of NODES) await registerNode(store, n.id, n.providerId, run.now);
  for (const [i, party] of PARTIES.entries()) {
    for (const [j, asset] of ASSETS.entries()) {
      const amount = funding[i * ASSETS.length + j] ?? 0;
      if (amount > 0) await mint(run, store, party, asset, amount);
    }
  }
  for (const p of PROVIDERS) for (const asset of ASSETS) run.providerSeen.set(key(p, asset), await store.getBalance(ACCOUNTS.wallet(p), asset));
}
