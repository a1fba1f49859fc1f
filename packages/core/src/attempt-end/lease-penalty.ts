/**
 * Abandoned leases (TRUST.md penalties table; the rule is trust/penalties.ts's 'lease-abandoned'): an
 * attempt lost because its node stopped heartbeating past its lease. The first in 7 days is free, then a
 * fee of 1 × the lost job's price from the provider's wallet to the job's buyer (capped at the wallet; the
 * rest is recorded as unpaid, never taken from stake); more than 3 in 7 days suspends the node.
 *
 * Only the node's own doing counts: its silence, or holding an attempt past its deadline while it kept
 * heartbeating (attempt-end/deadline.ts, the slow-loris; evidence cause 'deadline'). Not an abandoned lease:
 * - a cancel-grace end (outcome cancelled: the node kept heartbeating);
 * - a lease the coordinator ended itself: its node was removed (enrollment revoked with removeNodes) or
 *   banned (equivocation, a confirmed wrong result), which sets the leases to expire now;
 * - the heartbeat reconciliation's "the node no longer runs this attempt" (services/agent.ts abandon()): the
 *   node is heartbeating, and "never took up this assignment" may be the coordinator's own delivery gap (it
 *   was down), which must never cost a provider. It ends as failed without an exit code, which the node's
 *   track record already counts as an infrastructure failure (auto-cordon).
 * The coordinator's own restarts cost nothing either: at start it extends every active lease.
 *
 * The lost job's price is one hour of the attempt's price (pricePerUnitHour × units): what a buyer pays
 * for an hour of the capacity the node walked away from. An unpriced attempt costs 0 but still counts
 * towards the suspension.
 */
import type { Asset } from '@gpux/protocol';
import { mulDiv } from '../market/arith.js';
import type { NewTransfer } from '../market/ledger.js';
import type { AttemptPriceRecord } from '../market/records.js';
import type { JobRecord } from '../records.js';
import { LEASE_LOSS_WINDOW_MS, MAX_LEASE_LOSSES, type PenaltyPlan, penaltyAccounts, penaltyPlan, penaltyPostings } from '../trust/penalties.js';
import { leaseReachedDeadline } from './deadline.js';
import type { PlannedEvent } from './settle.js';
import type { AttemptEndCause, AttemptFacts, CarryKey, NodeFacts } from './snapshot.js';

/** The admin reason of a suspended node (cordoned: NodeAdminState has no 'suspended'; an operator may uncordon it). */
export const SUSPENDED_REASON = `suspended: more than ${MAX_LEASE_LOSSES} abandoned leases in 7 days`;

/** One hour of the attempt's price; 0 when unpriced. */
export function lostJobPrice(price: Pick<AttemptPriceRecord, 'pricePerUnitHour' | 'units'> | null): number {
  return price ? mulDiv(price.pricePerUnitHour, price.units, 1) : 0;
}

/** Is this end an abandoned lease (the node's own silence, not the coordinator's doing)? */
export function isAbandonedLease(cause: AttemptEndCause, outcome: string, node: NodeFacts | null | undefined): boolean {
  if (cause.kind !== 'lease-expired' || outcome !== 'lost') return false;
  if (node === undefined) throw new Error('invariant: a lease-expired end needs its node (removed or not)');
  return node !== null && !node.removed;
}

/** What an abandoned lease reads: the node's earlier losses, and the provider's wallet when a fee may be due. */
export function leasePenaltyNeeds(a: Pick<AttemptFacts, 'price'>): { leaseLosses: true; providerWallet: CarryKey | null } {
  const price = a.price;
  return { leaseLosses: true, providerWallet: price && lostJobPrice(price) > 0 ? { providerId: price.providerId, asset: price.asset } : null };
}

/** A penalty the attempt's end triggers: core trust/penalties.ts's plan with what the store writes for it. */
export interface AttemptEndPenalty {
  nodeId: string;
  jobId: string;
  attemptId: string;
  asset: Asset;
  plan: PenaltyPlan;
  /** The fee due (paid + plan.unpaid); the penalty row's fee. */
  fee: number;
  /** The ledger transfer (kind penalty.fee), posted after the plan's other transfers; null: nothing moves. */
  transfer: NewTransfer | null;
  /** What proves it (lease times, the count), kept with the penalty record. */
  evidence: Record<string, unknown>;
  /** node.penalized (the store adds the penalty's id to its data). */
  event: PlannedEvent;
  /** Cordon the node with this reason and event (the store skips both when it is already suspended). */
  suspend: { reason: string; event: PlannedEvent } | null;
}

export interface LeasePenaltyInput {
  job: Pick<JobRecord, 'id' | 'buyerId'>;
  attempt: AttemptFacts;
  node: NodeFacts;
  /** Times of the node's lease-abandoned penalties in the window before now. */
  earlierLosses: readonly number[];
  /** The provider's wallet after the plan's other transfers (required when a fee may be due). */
  walletBalance: number | undefined;
  now: number;
}

export function planLeasePenalty(i: LeasePenaltyInput): AttemptEndPenalty {
  const { attempt: a, now } = i;
  const price = a.price;
  const lost = lostJobPrice(price);
  if (lost > 0 && i.walletBalance === undefined) throw new Error(`invariant: the abandoned lease of attempt ${a.id} needs its provider's wallet balance`);
  const recent = i.earlierLosses.filter((t) => t <= now && now - t < LEASE_LOSS_WINDOW_MS);
  const acc = penaltyAccounts({ nodeId: a.nodeId, jobId: a.jobId, buyerId: i.job.buyerId, providerId: price?.providerId ?? '' });
  const plan = penaltyPlan({ kind: 'lease-abandoned', lostJobPrice: lost, walletBalance: Math.max(0, i.walletBalance ?? 0), earlierLosses: recent, at: now }, acc);
  const paid = plan.legs.reduce((s, l) => s + l.amount, 0);
  const fee = paid + plan.unpaid;
  const asset: Asset = price?.asset ?? 'usdc';
  // A provider that is its own buyer pays itself: the postings net to nothing and no transfer is written.
  const postings = paid > 0 ? penaltyPostings(plan, asset) : [];
  const transfer: NewTransfer | null =
    postings.length > 0
      ? { kind: 'penalty.fee', postings, at: now, memo: `abandoned lease of attempt ${a.id} on node ${a.nodeId}: ${plan.reason}`, jobId: a.jobId, attemptId: a.id, nodeId: a.nodeId }
      : null;
  const count = recent.length + 1;
  // Why the lease ended: absent, the node went silent; 'deadline', it kept heartbeating past its deadline.
  const cause = leaseReachedDeadline(a) ? { cause: 'deadline', deadlineAt: a.deadlineAt } : {};
  const evidence: Record<string, unknown> = {
    attemptId: a.id,
    leaseExpiresAt: a.leaseExpiresAt,
    ...cause,
    ...(i.node.lastHeartbeatAt !== null ? { lastHeartbeatAt: i.node.lastHeartbeatAt } : {}),
    lossesIn7Days: count,
    lostJobPrice: lost,
    asset,
    fee,
    paid,
    unpaid: plan.unpaid,
  };
  const data = { kind: 'lease-abandoned', jobId: a.jobId, attemptId: a.id, count, fee, paid, unpaid: plan.unpaid, suspended: plan.suspend, ...cause };
  const suspend = plan.suspend
    ? { reason: SUSPENDED_REASON, event: { at: now, subject: 'node' as const, subjectId: a.nodeId, type: 'node.suspended', data: { reason: SUSPENDED_REASON, count, windowMs: LEASE_LOSS_WINDOW_MS } } }
    : null;
  return {
    nodeId: a.nodeId,
    jobId: a.jobId,
    attemptId: a.id,
    asset,
    plan,
    fee,
    transfer,
    evidence,
    event: { at: now, subject: 'node', subjectId: a.nodeId, type: 'node.penalized', data },
    suspend,
  };
}

/** What the plan's transfers do to one account in one asset (the provider's wallet before its fee). */
export function netOf(transfers: readonly NewTransfer[], account: string, asset: Asset): number {
  let n = 0;
  for (const t of transfers) for (const p of t.postings) if (p.account === account && p.asset === asset) n += p.amount;
  return n;
}
